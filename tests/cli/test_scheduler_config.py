"""`hivedlab scheduler-config`: layouts for every group shape, the byte-exact splice,
the wait on HiveD's inspect API."""

from __future__ import annotations

import json

import pytest
import yaml

from hivedlab.backends.pai import hived_inspect
from hivedlab.backends.pai.services_config import splice_hived_config, verify_splice
from hivedlab.basics.errors import HivedlabError
from hivedlab.lab_group.inventory import inventory_from_mapping
from hivedlab.lab_group.layouts import Layout, plan_layout, validate_layout
from tests.support.local import json_reply
from tests.support.paths import FIXTURES

SERVICES = (FIXTURES / "pai" / "services-configuration.yaml").read_text(encoding="utf-8")
NEW = "physicalCluster:\n  skuTypes:\n    GPU: {gpu: 1}\nvirtualClusters:\n  default:\n    virtualCells: []\n"


def group(*workers, master=True):
    members = [{"name": "Bob", "roles": ["master"], "hostname": "hostname-bob", "ip": "10.0.1.2"}] if master else []
    members += [{"name": n, "roles": ["worker"], "hostname": f"hostname-{n.lower()}", "ip": f"10.0.1.{3 + i}",
                 "gpus": g} for i, (n, g) in enumerate(workers)]
    return inventory_from_mapping({"group": "g", "members": members})


def split(text):
    """(before the config block, after it) of the fixture, by lines."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("  config: |"))
    end = next(i for i, line in enumerate(lines) if line.startswith("# authentication"))
    return "".join(lines[:start]), "".join(lines[end - 1:])  # keep the blank line before the comment


# ------------------------------------------------------------------ the splice


def test_splice_changes_only_the_config_block():
    out = splice_hived_config(SERVICES, NEW)
    before, after = split(SERVICES)
    assert out.startswith(before) and out.endswith(after)
    middle = out[len(before): len(out) - len(after)]
    assert middle == "  config: |\n" + "".join("    " + line + "\n" for line in NEW.splitlines())
    assert yaml.safe_load(out)["hivedscheduler"]["config"] == NEW
    verify_splice(SERVICES, out, NEW, "services-configuration.yaml")


def test_splice_is_idempotent():
    once = splice_hived_config(SERVICES, NEW)
    assert splice_hived_config(once, NEW) == once


def test_splice_keeps_blank_lines_inside_the_config():
    text = "a:\n  config: |\n    x: 1\n\n    y: 2\n"
    new = "p: 1\n\nq: 2\n"
    out = splice_hived_config(SERVICES, new)
    assert yaml.safe_load(out)["hivedscheduler"]["config"] == new
    appended = splice_hived_config(text, new)  # no hivedscheduler key there: appended, the original kept
    assert appended.startswith(text) and yaml.safe_load(appended)["hivedscheduler"]["config"] == new


@pytest.mark.parametrize(
    ("original", "expected"),
    [
        ("hivedscheduler:\n  config: ''\nrest-server: {}\n",
         "hivedscheduler:\n  config: |\n    p: 1\nrest-server: {}\n"),
        ("hivedscheduler:\n  webservice-port: 30096\nx: 1\n",
         "hivedscheduler:\n  config: |\n    p: 1\n  webservice-port: 30096\nx: 1\n"),
        ("hivedscheduler:\n    config: |-\n        old: 1\n    webservice-port: 30096\n",
         "hivedscheduler:\n    config: |\n      p: 1\n    webservice-port: 30096\n"),
        ("cluster:\n  common: {}\n", "cluster:\n  common: {}\nhivedscheduler:\n  config: |\n    p: 1\n"),
        ("cluster: {}", "cluster: {}\nhivedscheduler:\n  config: |\n    p: 1\n"),
        ("hivedscheduler:\r\n  config: |\r\n    old: 1\r\nx: 1\r\n",
         "hivedscheduler:\r\n  config: |\r\n    p: 1\r\nx: 1\r\n"),
    ],
    ids=["empty-scalar", "no-config-key", "deeper-indent-strip-chomp", "no-section", "no-final-newline", "crlf"],
)
def test_splice_shapes(original, expected):
    out = splice_hived_config(original, "p: 1\n")
    assert out == expected
    verify_splice(original, out, "p: 1\n", "f")


def test_flow_style_section_is_refused():
    with pytest.raises(HivedlabError, match="block mapping"):
        splice_hived_config("hivedscheduler: {config: x}\n", "p: 1\n")


def test_tabs_refused():
    with pytest.raises(HivedlabError, match="tab"):
        splice_hived_config(SERVICES, "a:\n\tb: 1\n")


# ------------------------------------------------------------------ layouts


def test_manual_hardware_uses_the_shipped_templates():
    inv = group(("Carol", 1), ("Dan", 1))
    two, one = plan_layout("two-vc", inv), plan_layout("one-vc", inv)
    assert two.case == one.case == "manual" and two.notes == ()
    assert two.vcs == {"default": 1, "vc1": 1} and one.vcs == {"default": 2}
    assert "cellAddress: hostname-dan" in two.text
    validate_layout(two)
    validate_layout(one)


@pytest.mark.parametrize("name", ["two-vc", "one-vc"])
def test_multi_gpu_workers(name):
    layout = plan_layout(name, group(("Carol", 4), ("Dan", 8)))
    validate_layout(layout)
    data = yaml.safe_load(layout.text)
    assert layout.case == "multi-gpu" and layout.notes
    if name == "two-vc":
        assert data["physicalCluster"]["cellTypes"]["GPU-D-NODE"]["childCellNumber"] == 8
        assert layout.vcs == {"default": 1, "vc1": 1}
        assert "10 GPUs" in layout.notes[0][1]
    else:
        assert data["virtualClusters"]["default"]["virtualCells"] == [
            {"cellType": "GPU-NODE-POOL.GPU-NODE.GPU", "cellNumber": 2}]


@pytest.mark.parametrize("name", ["two-vc", "one-vc"])
def test_single_worker_split(name):
    layout = plan_layout(name, group(("Carol", 4)))
    validate_layout(layout)
    data = yaml.safe_load(layout.text)
    assert data["physicalCluster"]["physicalCells"] == [{"cellType": "GPU-NODE", "cellAddress": "hostname-carol"}]
    assert layout.case == "single-worker"
    assert layout.vcs == ({"default": 1, "vc1": 1} if name == "two-vc" else {"default": 2})
    assert any("single worker" in en for _, en in layout.notes)


def test_single_one_gpu_worker_cannot_split():
    with pytest.raises(HivedlabError, match="simulator"):
        plan_layout("two-vc", group(("Carol", 1)))


def test_no_worker():
    with pytest.raises(HivedlabError, match="the group needs at least one worker"):
        plan_layout("two-vc", group())


# ------------------------------------------------------------------ the command


def write_inventory(tmp_path, *workers):
    members = [{"name": "Bob", "roles": ["master"], "hostname": "hostname-bob", "ip": "127.0.0.1"}]
    members += [{"name": n, "roles": ["worker"], "hostname": f"hostname-{n.lower()}", "ip": f"10.0.1.{3 + i}",
                 "gpus": g} for i, (n, g) in enumerate(workers)]
    path = tmp_path / "group.yaml"
    path.write_text(yaml.safe_dump({"group": "g", "members": members}), encoding="utf-8")
    return str(path)


@pytest.fixture
def cfg_dir(tmp_path):
    folder = tmp_path / "cluster-cfg"
    folder.mkdir()
    for name in ("services-configuration.yaml", "layout.yaml"):
        (folder / name).write_bytes((FIXTURES / "pai" / name).read_bytes())
    return folder


def test_command_writes_a_copy_and_shows_diff(cli, tmp_path, cfg_dir):
    out = tmp_path / "new-cfg"
    result = cli("scheduler-config", "two-vc", "--inventory", write_inventory(tmp_path, ("Carol", 1), ("Dan", 1)),
                 "--services-config", str(cfg_dir), "--out", str(out), "--lang", "en")
    assert result.code == 0, result.err
    written = (out / "services-configuration.yaml").read_text(encoding="utf-8")
    config = yaml.safe_load(written)["hivedscheduler"]["config"]
    assert set(yaml.safe_load(config)["virtualClusters"]) == {"default", "vc1"}
    before, after = split(SERVICES)
    assert written.startswith(before) and written.endswith(after)
    assert (out / "layout.yaml").read_bytes() == (cfg_dir / "layout.yaml").read_bytes()
    assert (cfg_dir / "services-configuration.yaml").read_text(encoding="utf-8") == SERVICES  # source untouched
    assert "\n+        GPU-C:\n" in result.out and "\n-        DT:\n" in result.out
    for line in ("python paictl.py service stop -n rest-server hivedscheduler",
                 "python paictl.py config push -p /cluster-configuration -m service",
                 "python paictl.py service start -n rest-server hivedscheduler"):
        assert line in result.out


def test_command_in_place_with_the_manuals_file_name(cli, tmp_path, cfg_dir):
    manual_name = cfg_dir / "service-configuration.yaml"
    (cfg_dir / "services-configuration.yaml").rename(manual_name)
    result = cli("scheduler-config", "one-vc", "--inventory", write_inventory(tmp_path, ("Carol", 1), ("Dan", 1)),
                 "--services-config", str(cfg_dir), "--in-place")
    assert result.code == 0, result.err
    assert (cfg_dir / "service-configuration.yaml.orig").read_text(encoding="utf-8") == SERVICES
    config = yaml.safe_load(manual_name.read_text(encoding="utf-8"))["hivedscheduler"]["config"]
    assert yaml.safe_load(config)["virtualClusters"]["default"]["virtualCells"][0]["cellNumber"] == 2


def test_command_prints_notes_for_single_worker(cli, tmp_path):
    result = cli("scheduler-config", "two-vc", "--inventory", write_inventory(tmp_path, ("Carol", 2)), "--lang", "en")
    assert result.code == 0 and result.out.startswith("note: a single worker")
    assert "cellAddress: hostname-carol" in result.out


def test_command_missing_services_file(cli, tmp_path):
    result = cli("scheduler-config", "two-vc", "--services-config", str(tmp_path))
    assert result.code == 2 and "no services-configuration.yaml or service-configuration.yaml" in result.err


def test_command_bad_yaml(cli, tmp_path):
    bad = tmp_path / "services-configuration.yaml"
    bad.write_text("hivedscheduler:\n  config: |\n    a: 1\nx: [unclosed\n")
    result = cli("scheduler-config", "two-vc", "--services-config", str(bad), "--out", str(tmp_path / "o"))
    assert result.code == 2 and "not valid YAML" in result.err and len(result.err_lines) == 1


def test_help_and_bad_name(cli):
    assert "examples:" in cli("scheduler-config", "--help").out
    assert cli("scheduler-config", "three-vc").code == 2


# ------------------------------------------------------------------ waiting for HiveD


def vc_tree(leaves):
    return [{"cellType": "GPU-NODE", "cellState": "Free", "cellChildren": [{"cellType": "GPU"} for _ in range(leaves)]}]


def test_wait_for_vcs_across_a_restart(serve):
    replies = iter([None, (503, {}, b"restarting"), json_reply(200, {"default": vc_tree(2)}),
                    json_reply(200, {"default": vc_tree(1), "vc1": vc_tree(1)})])
    server = serve(lambda *_: next(replies))
    polls, sleeps = [], []
    assert hived_inspect.wait_for_vcs(server.url, {"default": 1, "vc1": 1}, 60, poll_s=5, sleep=sleeps.append,
                                      clock=lambda: 0.0, on_poll=lambda seen, err: polls.append((seen, err)))
    assert [p[1] for p in polls] == ["ConnectionError", "HTTPError", None, None]
    assert polls[-1][0] == {"default": 1, "vc1": 1} and sleeps == [5, 5, 5]
    assert all(r["path"] == "/v1/inspect/clusterstatus/virtualclusters" for r in server.requests)


def test_wait_for_vcs_times_out(serve):
    server = serve(lambda *_: json_reply(200, {"default": vc_tree(2)}))
    now = [0.0]

    def sleep(s):
        now[0] += s

    assert not hived_inspect.wait_for_vcs(server.url, {"default", "vc1"}, 12, poll_s=5, sleep=sleep,
                                          clock=lambda: now[0])
    assert len(server.requests) == 3


def test_command_wait_uses_the_masters_ip(cli, tmp_path, serve):
    server = serve(lambda *_: json_reply(200, {"default": vc_tree(1), "vc1": vc_tree(1)}))
    result = cli("scheduler-config", "two-vc", "--inventory", write_inventory(tmp_path, ("Carol", 1), ("Dan", 1)),
                 "--hived-url", server.url, "--wait", "5", "--lang", "en")
    assert result.code == 0 and "HiveD runs the new config" in result.out
    assert json.dumps(hived_inspect.leaf_count(vc_tree(3))) == "3"


def test_validation_uses_hiveds_load_time_rules():


    good = plan_layout("two-vc", group(("Carol", 1), ("Dan", 1)))
    broken = Layout("two-vc", good.text.replace("GPU-D-NODE-POOL.GPU-D-NODE\n", "GPU-D-NODE-POOL.GPU-X-NODE\n"),
                    good.vcs, good.case)
    with pytest.raises(HivedlabError, match="would make HiveD panic"):
        validate_layout(broken)
    too_many = Layout("two-vc", good.text.replace("cellNumber: 1\n  vc1", "cellNumber: 2\n  vc1"), good.vcs, good.case)
    with pytest.raises(HivedlabError, match="would make HiveD panic"):
        validate_layout(too_many)


def test_vc_names_must_be_lower_case_alphanumerics():


    good = plan_layout("two-vc", group(("Carol", 1), ("Dan", 1)))
    with pytest.raises(HivedlabError, match="lower-case letters and digits"):
        validate_layout(Layout("two-vc", good.text.replace("  vc1:", "  V100:"), good.vcs, good.case))


def test_out_without_services_config_is_refused_not_ignored(cli, tmp_path):
    for option in (("--out", str(tmp_path / "cfg")), ("--in-place",)):
        result = cli("scheduler-config", "two-vc", *option)
        assert result.code == 2 and result.err.count("\n") == 1
        assert f"{option[0]} needs --services-config PATH" in result.err and result.out == ""
    assert not (tmp_path / "cfg").exists()


def test_a_missing_services_config_says_where_quick_start_puts_it(cli, tmp_path):
    missing = tmp_path / "pai-deploy" / "cluster-cfg"
    result = cli("scheduler-config", "two-vc", "--services-config", str(missing), "--out", str(tmp_path / "o"))
    assert result.code == 2 and len(result.err_lines) == 1
    assert f"no {missing}: OpenPAI's quick-start (manual step 2) writes" in result.err
    assert "paictl.py config pull" in result.err
