"""`hivedlab doctor` over real HTTP: a fake rest-server and portal, a fake HiveD, a fake Kubernetes API."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import yaml

from hivedlab.backends.pai.hived_cells import compare_cells, expected_cells, observed_cells
from hivedlab.lab_group.inventory import inventory_from_mapping, load_inventory
from hivedlab.lab_group.layouts import plan_layout
from tests.support.fakehived import FakeHived, hived_status
from tests.support.fakepai import FakePai
from tests.support.k8s_server import FakeApiServer
from tests.support.pai_database import StalledPai
from tests.support.pai_tokens import make_jwt

USERS = ("alice", "bob", "carol", "dan")
NODES = ("hostname-bob", "hostname-carol", "hostname-dan")  # the example inventory's master and workers


def ready(status: str = "True") -> dict:
    return {"status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                      {"type": "Ready", "status": status}]}}


@pytest.fixture
def k8s(tmp_path, monkeypatch):
    with FakeApiServer() as api:
        for node in NODES:
            api.add("nodes", node, labels={}, **ready())
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "lab",
                  "clusters": [{"name": "lab", "cluster": {"server": api.url}}],
                  "users": [{"name": "lab", "user": {"token": "t"}}],
                  "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab"}}]}
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        monkeypatch.setenv("KUBECONFIG", str(path))
        yield api


class Cluster:
    def __init__(self, serve, tmp_path, monkeypatch) -> None:
        self.inventory = load_inventory()
        self.pai = FakePai(serve)
        for user in USERS:
            self.pai.users.setdefault(user, f"{user}-password")
            self.pai.grants[user] = {"default", "vc1"}
        self.hived = FakeHived(serve, plan_layout("two-vc", self.inventory).text)
        self.token_file = tmp_path / "tokens"
        self.tokens = {user: self.login(user) for user in USERS}
        self.write_tokens()
        for name in ("HIVEDLAB_PAI_URL", "HIVEDLAB_HIVED_URL", "HIVEDLAB_PAI_TOKEN", "HIVEDLAB_PAI_TOKEN_FILE"):
            monkeypatch.delenv(name, raising=False)

    def login(self, user: str, seconds_left: int = 7 * 86400) -> str:
        token = make_jwt(user, exp=int(time.time()) + seconds_left)
        self.pai.tokens[token] = user
        return token

    def write_tokens(self) -> None:
        self.token_file.write_text("".join(f"{u}: {t}\n" for u, t in self.tokens.items()), encoding="utf-8")
        self.token_file.chmod(0o600)


@pytest.fixture
def cluster(serve, tmp_path, monkeypatch, k8s):
    return Cluster(serve, tmp_path, monkeypatch)


def doctor(cli, cluster, *extra):
    return cli("doctor", "--pai-url", cluster.pai.url, "--hived-url", cluster.hived.url, "--token-file",
               str(cluster.token_file), "--lang", "en", *extra)


def test_the_rehearsal_clusters_portal_is_skipped_not_failed(cli, cluster, k8s):
    """Emulated nodes mark the rehearsal cluster, which has no pylon and no portal (docs/rehearsal.md)."""
    k8s.add("nodes", "hostname-extra", labels={"hivedlab.rehearsal/emulated": "true"}, **ready())
    result = doctor(cli, cluster)
    assert "[SKIP] portal      not part of the rehearsal cluster (emulated nodes hostname-extra): skipped" \
        in result.out
    assert json.loads(doctor(cli, cluster, "--format", "json").out)["findings"][2]["status"] == "skipped"
    assert not any(r["path"] == "/" for r in cluster.pai.requests)  # the portal is not asked


def by_check(result) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for finding in json.loads(result.out)["findings"]:
        found.setdefault(finding["check"], []).append(finding)
    return found


def test_a_healthy_two_vc_cluster_passes(cli, cluster):
    result = doctor(cli, cluster)
    assert result.code == 0, result.out + result.err
    assert "result: all checks passed" in result.out
    assert "[OK  ] nodes       all 3 nodes Ready" in result.out
    assert "rest-server v1.2.0" in result.out and "the portal http://127.0.0.1:" in result.out
    assert ("HiveD's VCs and cells match two-vc (default: 1×GPU-C-NODE, vc1: 1×GPU-D-NODE; nodes hostname-carol, "
            "hostname-dan)") in result.out
    assert "the 4 members' tokens work and may use VC default, vc1" in result.out
    assert "no unfinished job on the cluster" in result.out
    assert not any(token in result.out for token in cluster.tokens.values())


def test_a_healthy_one_vc_cluster_passes(cli, cluster):
    cluster.hived.switch(plan_layout("one-vc", cluster.inventory).text)
    cluster.pai.vcs = ["default"]
    result = doctor(cli, cluster, "--config", "one-vc")
    assert result.code == 0, result.out + result.err
    assert ("HiveD's VCs and cells match one-vc (default: 2×GPU-NODE; nodes hostname-carol, hostname-dan)"
            in result.out)
    assert "the 4 members' tokens work and may use VC default" in result.out


def test_hived_serves_node_cells_as_index_slash_node(cluster):
    """HiveD v0.3.4 addresses a node cell below a pool cell `<index>/<node>`; doctor compares only the node."""
    addresses = [child["cellAddress"] for top in cluster.hived.physical for child in top["cellChildren"]]
    assert addresses == ["0/hostname-carol", "1/hostname-dan"]
    seen = observed_cells(cluster.hived.physical, cluster.hived.virtual)
    assert seen["nodes"] == ["hostname-carol", "hostname-dan"]


def test_node_not_ready_and_missing(cli, cluster, k8s):
    uid = next(o["metadata"]["uid"] for o in k8s.objects["nodes"].values() if o["metadata"]["name"] == "hostname-dan")
    k8s.modify("nodes", uid, **ready("Unknown"))
    k8s.delete("nodes", next(u for u, o in k8s.objects["nodes"].items() if o["metadata"]["name"] == "hostname-bob"))
    result = doctor(cli, cluster, "--format", "json")
    assert result.code == 1
    nodes = by_check(result)["nodes"]
    assert nodes[0]["message"]["en"] == "nodes not Ready: hostname-dan" and "kubelet" in nodes[0]["fix"]["en"]
    assert "not Kubernetes nodes: hostname-bob" in nodes[1]["message"]["en"]


def test_hived_with_the_other_config(cli, cluster):
    cluster.hived.switch(plan_layout("one-vc", cluster.inventory).text)
    result = doctor(cli, cluster, "--config", "two-vc", "--format", "json")
    assert result.code == 1
    finding = by_check(result)["hived-vcs"][0]
    assert finding["message"]["en"] == "HiveD's VCs are default; two-vc has default, vc1"
    assert "hivedlab scheduler-config two-vc" in finding["fix"]["en"]
    detected = doctor(cli, cluster, "--format", "json")  # without --config: the one HiveD's VCs match
    assert "match one-vc (default: 2×GPU-NODE" in by_check(detected)["hived"][0]["message"]["en"]


def test_hived_with_other_nodes_or_cell_numbers(cli, cluster):
    config = yaml.safe_load(plan_layout("two-vc", cluster.inventory).text)
    config["physicalCluster"]["physicalCells"][1]["cellChildren"][0]["cellAddress"] = "hostname-eve"
    config["physicalCluster"]["cellTypes"]["GPU-D-NODE-POOL"]["childCellNumber"] = 2
    config["physicalCluster"]["physicalCells"][1]["cellChildren"].append({"cellAddress": "hostname-frank"})
    config["virtualClusters"]["vc1"]["virtualCells"][0]["cellNumber"] = 2
    cluster.hived.switch(yaml.safe_dump(config))
    found = by_check(doctor(cli, cluster, "--format", "json"))
    assert found["hived-cells"][0]["message"]["en"] == (
        "VC vc1's cells differ from two-vc: GPU-D-NODE: 1 expected, HiveD has 2")
    assert "HiveD's nodes hostname-carol, hostname-eve, hostname-frank" in found["hived-nodes"][0]["message"]["en"]


def test_token_problems(cli, cluster):
    del cluster.tokens["dan"]
    cluster.tokens["carol"] = make_jwt("carol", exp=int(time.time()) + 86400 * 7) + "x"  # revoked / unknown
    cluster.tokens["bob"] = cluster.login("bob", seconds_left=3600)
    cluster.pai.grants["alice"] = {"default"}
    cluster.write_tokens()
    result = doctor(cli, cluster, "--format", "json")
    assert result.code == 1
    tokens = {f["message"]["en"]: f for f in by_check(result)["tokens"]}
    assert "no token for dan" in tokens
    assert any(m.startswith("carol's token does not work") and "carol's token was refused" in m for m in tokens)
    assert "alice may not use VC vc1" in tokens
    bob = next(f for m, f in tokens.items() if m.startswith("bob's token expires at"))
    assert bob["status"] == "warning" and "hivedlab accounts" in bob["fix"]["en"]


def test_a_dropped_vc_grant_names_the_grant_and_the_command_that_restores_it(cli, cluster, tmp_path, monkeypatch):
    """After `rehearsal switch one-vc` and back the rest-server has dropped the members' grant of vc1: the fix says
    so and gives the `accounts` line that grants it again without asking for the admin's password."""
    monkeypatch.setenv("HIVEDLAB_PAI_ADMIN_TOKEN_FILE", str(tmp_path / "pai-admin-token"))
    for user in USERS:
        cluster.pai.grants[user] = {"default"}
    result = cli("doctor", "--pai-url", cluster.pai.url, "--hived-url", cluster.hived.url, "--token-file",
                 str(cluster.token_file), "--inventory", "configs/group.example.yaml", "--lang", "en")
    assert result.code == 1
    command = (f"hivedlab accounts --inventory configs/group.example.yaml --admin-token-file "
               f"{tmp_path / 'pai-admin-token'} --vc default --vc vc1 --tokens-out {cluster.token_file}")
    assert "[FAIL] tokens      alice may not use VC vc1" in result.out
    assert (f"-> the grant of VC vc1 is gone: the rest-server drops it when it restarts with a HiveD config without "
            f"vc1 (`hivedlab rehearsal switch one-vc`, paictl's config push), and switching back does not restore "
            f"it; restore it with `{command}`") in result.out
    assert "log in again" not in result.out


def test_an_expired_token_is_named_with_its_expiry(cli, cluster):
    cluster.tokens["dan"] = cluster.login("dan", seconds_left=-120)
    cluster.write_tokens()
    result = doctor(cli, cluster, "--format", "json")
    assert result.code == 1
    dan = [f for f in by_check(result)["tokens"] if f["message"]["en"].startswith("dan's token")]
    assert len(dan) == 1 and dan[0]["status"] == "error" and "hivedlab accounts" in dan[0]["fix"]["en"]
    assert " expired at " in dan[0]["message"]["en"] and "(login tokens last 7 days)" in dan[0]["message"]["en"]
    assert "HTTP 401 UnauthorizedUserError" in dan[0]["message"]["en"]


def test_expiring_token_is_only_a_warning(cli, cluster):
    cluster.tokens["bob"] = cluster.login("bob", seconds_left=3600)
    cluster.write_tokens()
    result = doctor(cli, cluster)
    assert result.code == 0 and "[WARN] tokens      bob's token expires at" in result.out


def test_unfinished_job_is_reported(cli, cluster):
    cluster.pai.jobs["carol~leftover"] = {"name": "leftover", "jobStatus": {"username": "carol", "state": "RUNNING",
                                                                            "virtualCluster": "default"}}
    result = doctor(cli, cluster)
    assert result.code == 1 and "unfinished jobs on the cluster: carol~leftover (RUNNING)" in result.out
    assert "stop these jobs in the portal" in result.out


def test_nothing_answers(cli, cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nope"))
    result = cli("doctor", "--pai-url", "http://127.0.0.1:9", "--hived-url", "http://127.0.0.1:9",
                 "--token-file", str(cluster.token_file), "--lang", "en")
    assert result.code == 1 and "Traceback" not in result.out + result.err
    for check in ("nodes", "rest-server", "portal", "hived"):
        assert f"[FAIL] {check}" in result.out
    assert "tokens" not in result.out
    # the portal and HiveD say why in words, not only an exception's class name
    assert "the portal http://127.0.0.1:9/ is not reachable (connection refused (nothing listens on that port))" \
        in result.out
    assert "HiveD's inspect API at http://127.0.0.1:9 is not reachable: connection refused" in result.out


def test_a_hived_that_answers_an_error_is_named_by_its_status(cli, cluster, serve):
    """HiveD restarting behind its NodePort answers 503: the finding says so."""
    url = serve(lambda *_: (503, {"Content-Type": "text/plain"}, b"restarting")).url
    result = cli("doctor", "--pai-url", cluster.pai.url, "--hived-url", url, "--token-file", str(cluster.token_file),
                 "--lang", "en")
    assert result.code == 1 and f"HiveD's inspect API at {url} is not reachable: HTTP 503" in result.out


def test_no_token_file_is_a_usage_error(cli, cluster):
    result = cli("doctor", "--pai-url", cluster.pai.url, "--hived-url", cluster.hived.url)
    assert result.code == 2 and len(result.err_lines) == 1 and "HIVEDLAB_PAI_TOKEN_FILE" in result.err


def env_record(folder, member, synced, offset_ms):
    folder.mkdir(exist_ok=True)
    record = {"member": member, "clock": {"ntp_synchronized": synced, "offset_ms": offset_ms, "source": "chronyc"}}
    (folder / f"{member}.json").write_text(json.dumps(record), encoding="utf-8")


def test_members_clocks_compared(cli, cluster, tmp_path):
    env = tmp_path / "env"
    env_record(env, "Carol", True, 0.4)
    env_record(env, "Dan", True, -12.0)
    agree = doctor(cli, cluster, "--env", str(env))
    assert agree.code == 0 and "[OK  ] clocks      the 2 machines' clocks agree" in agree.out
    env_record(env, "Bob", False, 2500.0)
    result = doctor(cli, cluster, "--env", str(env), "--format", "json")
    clocks = [f["message"]["en"] for f in by_check(result)["clocks"]]
    assert clocks == ["clocks not synchronized: Bob",
                      "the machines' clocks differ by more than a second: Bob +2500 ms, Carol +0 ms, Dan -12 ms"]
    assert result.code == 0  # warnings


def workers(*gpus: int):
    members: list[dict[str, Any]] = [{"name": "Bob", "roles": ["master"], "hostname": "hostname-bob", "ip": "10.0.1.2"}]
    members += [{"name": f"W{i}", "roles": ["worker"], "hostname": f"hostname-w{i}", "ip": f"10.0.1.{3 + i}",
                 "gpus": g} for i, g in enumerate(gpus)]
    return inventory_from_mapping({"group": "g", "members": members})


@pytest.mark.parametrize("name", ["two-vc", "one-vc"])
@pytest.mark.parametrize("gpus", [(1, 1), (4, 8), (4,)], ids=["manual", "multi-gpu", "single-worker"])
def test_every_layout_matches_what_hived_shows_for_it(name, gpus):
    layout = plan_layout(name, workers(*gpus))
    expected = expected_cells(layout.text)
    findings = compare_cells(name, expected, observed_cells(*hived_status(layout.text)))
    assert [f.status for f in findings] == ["ok"], [f.message.en for f in findings]
    assert expected["nodes"] == sorted(f"hostname-w{i}" for i in range(len(gpus)))
    assert {vc: sum(cells.values()) for vc, cells in expected["vcs"].items()} == layout.vcs  # one GPU per cell


@pytest.mark.parametrize(("version", "code", "line"), [
    (None, 0, "[OK  ] rest-server the rest-server answers but does not say its version"),  # ConfigMap unread
    ("v1.1.0", 1, "[FAIL] rest-server the rest-server at"),
])
def test_the_rest_servers_version_is_judged_as_a_run_judges_it(cli, cluster, version, code, line):
    """One rule for doctor and `run --cluster pai` (backends.pai.rest.modelled_version): v1.2.0 answers a null
    version when it cannot read its pai-version ConfigMap (rest-server src/config/paiConfig.js), which is not
    another version; another version fails both."""
    cluster.pai.info = {**cluster.pai.info, "version": version}
    result = doctor(cli, cluster)
    assert result.code == code, result.out + result.err
    assert line in result.out


def test_a_rest_server_that_cannot_reach_its_database_is_named_with_the_fix(cli, serve, tmp_path, monkeypatch, k8s):
    """The rehearsal's rest-server with v1.2.0's own pg 7 on Node >= 14: /api/v2/info and the users answer, the job
    list never does (tests.support.pai_database); doctor names the cause and the rehearsal's fix, not a 30 s
    timeout."""
    monkeypatch.setattr("tests.cli.test_doctor.FakePai", StalledPai)
    monkeypatch.setattr("hivedlab.backends.pai.database.DATABASE_TIMEOUT_S", 0.5)
    cluster = Cluster(serve, tmp_path, monkeypatch)
    k8s.add("nodes", "hostname-extra", labels={"hivedlab.rehearsal/emulated": "true"}, **ready())
    try:
        started = time.monotonic()
        result = doctor(cli, cluster)
        took = time.monotonic() - started
        zh = doctor(cli, cluster, "--lang", "zh").out
    finally:
        cluster.pai.release.set()
    assert result.code == 1 and took < 10
    assert (f"[FAIL] jobs        the rest-server at {cluster.pai.url} answers /api/v2/info but not its job list (GET "
            "/api/v2/jobs, read from its PostgreSQL database) within 0.5 s: it cannot reach its database") in result.out
    assert ("-> v1.2.0's own pg 7 never connects on Node 14 or later: run `npm install --omit=dev --install-links "
            "--ignore-scripts pg@8.3.2` in the rest-server/ folder of OpenPAI's programs (HIVEDLAB_REHEARSAL_PROGRAMS)"
            ) in result.out
    assert ("-> v1.2.0 自带的 pg 7 在 Node 14 及以上版本永远连不上："
            "请在 OpenPAI 程序目录（HIVEDLAB_REHEARSAL_PROGRAMS）的 rest-server/ 中运行") in zh
    assert "[OK  ] tokens      the 4 members' tokens work" in result.out and "rest-server v1.2.0" in result.out
