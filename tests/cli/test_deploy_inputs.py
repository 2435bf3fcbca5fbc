"""`hivedlab deploy-inputs`: quick-start inputs exactly as OpenPAI's scripts read them
(docs/openpai-model.md#quick-start-inputs)."""

from __future__ import annotations

import csv
import json
import subprocess

import pytest
import yaml

GROUP = {
    "group": "g1",
    "members": [
        {"name": "Alice", "roles": ["dev-box"], "hostname": "hostname-alice", "ip": "10.0.1.1"},
        {"name": "Bob", "roles": ["master"], "hostname": "hostname-bob", "ip": "10.0.1.2"},
        {"name": "Carol", "roles": ["worker"], "hostname": "hostname-carol", "ip": "10.0.1.3", "gpus": 1},
        {"name": "Dan", "roles": ["worker"], "hostname": "hostname-dan", "ip": "10.0.1.4", "gpus": 1},
    ],
}


def inventory(tmp_path, group=None, **changes):
    data = json.loads(json.dumps(group or GROUP))
    for index, fields in changes.items():
        data["members"][int(index[1:])].update(fields)
    path = tmp_path / "group.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def env_record(folder, member, hostname, ip, gpus=1, vcpus=8, runtime="nvidia"):
    folder.mkdir(exist_ok=True)
    record = {"member": member, "hostname": hostname, "ip": ip, "vcpus": vcpus,
              "gpus": {"model": "NVIDIA H200" if gpus else None, "count": gpus}, "docker_default_runtime": runtime}
    (folder / f"{member}.json").write_text(json.dumps(record), encoding="utf-8")


def run(cli, tmp_path, *extra, inv=None):
    out = tmp_path / "deploy"
    return cli("deploy-inputs", "--inventory", inv or inventory(tmp_path), "--out", str(out), "--password", "paiopen",
               "--lang", "en", *extra), out


def test_files_are_byte_exact(cli, tmp_path):
    result, out = run(cli, tmp_path)
    assert result.code == 0, result.out + result.err
    assert (out / "master.csv").read_bytes() == b"hostname-bob,10.0.1.2\n"
    assert (out / "worker.csv").read_bytes() == b"hostname-carol,10.0.1.3\nhostname-dan,10.0.1.4\n"
    assert (out / "config.yaml").read_text() == (
        "user: openpai\npassword: paiopen\nbranch_name: v1.2.0\ndocker_image_tag: v1.2.0\n")
    assert (out / "config.yaml").stat().st_mode & 0o077 == 0
    rows = list(csv.reader((out / "worker.csv").read_text().splitlines()))
    assert rows == [["hostname-carol", "10.0.1.3"], ["hostname-dan", "10.0.1.4"]]


def test_scripts_grep_the_branch_and_tag(cli, tmp_path):
    _, out = run(cli, tmp_path, "--branch", "pai-1.2.y")
    for key, expected in (("branch_name", "pai-1.2.y"), ("docker_image_tag", "v1.2.0")):
        # how quick-start-service.sh reads them (docs/openpai-model.md#quick-start-inputs)
        done = subprocess.run(f"grep {key} {out / 'config.yaml'} | tr -d '[:space:]' | cut -d: -f2",
                              shell=True, capture_output=True, text=True, check=True)
        assert done.stdout.strip("\n") == expected
    assert yaml.safe_load((out / "config.yaml").read_text())["password"] == "paiopen"


def test_numeric_password_is_quoted_for_yaml(cli, tmp_path):
    result = cli("deploy-inputs", "--inventory", inventory(tmp_path), "--out", str(tmp_path / "d"),
                 "--password", "123456")
    assert result.code == 0
    assert yaml.safe_load((tmp_path / "d" / "config.yaml").read_text())["password"] == "123456"
    assert "123456" not in result.out


def test_commands_use_absolute_paths(cli, tmp_path):
    result, out = run(cli, tmp_path)
    m, w, c = (str((out / n).resolve()) for n in ("master.csv", "worker.csv", "config.yaml"))
    assert f"bash quick-start-kubespray.sh -m {m} -w {w} -c {c}" in result.out
    assert f"bash quick-start-service.sh -m {m} -w {w} -c {c}" in result.out
    assert "git clone -b v1.2.0 https://github.com/microsoft/pai.git" in result.out
    assert "paiopen" not in result.out


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"m2": {"hostname": "Hostname-Carol"}}, "hostname 'Hostname-Carol' is not a valid Kubernetes node name"),
        ({"m3": {"hostname": "hostname-carol"}}, "hostname 'hostname-carol' is also used by members[2]"),
        ({"m3": {"ip": "10.0.1.3"}}, "ip '10.0.1.3' is also used by members[2]"),
        ({"m2": {"ip": "10.0.1"}}, "ip '10.0.1' is not an IP address"),
        ({"m2": {"ip": "127.0.0.1"}}, "not a usable IPv4"),
        ({"m1": {"roles": ["worker"]}}, "the group needs exactly one master, found 0"),
        ({"m0": {"roles": ["dev-box", "worker"]}}, "outside the cluster"),
    ],
    ids=["upper-case-hostname", "duplicate-hostname", "duplicate-ip", "bad-ip", "loopback-ip", "no-master",
         "dev-box-in-cluster"],
)
def test_bad_inventories_write_nothing(cli, tmp_path, changes, expected):
    inv = inventory(tmp_path, **changes)
    result, out = run(cli, tmp_path, inv=inv)
    assert result.code == 1 and expected in result.out
    assert not out.exists() and "nothing written" in result.out
    if expected != "not a usable IPv4":  # the inventory's own rules: `validate` says the same
        checked = cli("validate", inv)
        assert checked.code == 1 and expected in checked.out


def test_env_records_checked(cli, tmp_path):
    env = tmp_path / "env"
    env_record(env, "Carol", "hostname-carol", "10.0.1.3", gpus=1)
    env_record(env, "Dan", "hostname-dan", "10.0.1.4", gpus=0, runtime="runc")
    result, _ = run(cli, tmp_path, "--env", str(env))
    assert result.code == 1
    assert "worker Dan's environment record shows no GPU" in result.out
    assert "default runtime is runc" in result.out


def test_env_record_missing_and_many_cpus(cli, tmp_path):
    env = tmp_path / "env"
    env_record(env, "Carol", "hostname-carol", "10.0.1.3", vcpus=64)
    result, _ = run(cli, tmp_path, "--env", str(env))
    assert "no environment record for worker Dan" in result.out
    assert "use --branch pai-1.2.y" in result.out and "64 vCPUs" in result.out
    env_record(env, "Dan", "hostname-dan", "10.0.1.4")
    ok, _ = run(cli, tmp_path, "--env", str(env), "--branch", "pai-1.2.y")
    assert ok.code == 0


def test_json_format(cli, tmp_path):
    result, _ = run(cli, tmp_path, "--format", "json")
    data = json.loads(result.out)
    assert data["written"] is True and data["commands"][0].startswith("git clone")


def test_missing_password_is_one_line(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("HIVEDLAB_SSH_PASSWORD", raising=False)
    result = cli("deploy-inputs", "--inventory", inventory(tmp_path), "--out", str(tmp_path / "d"))
    assert result.code == 2 and result.err.count("\n") == 1 and "--password" in result.err


def test_password_from_environment(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HIVEDLAB_SSH_PASSWORD", "from-env-pw")
    result = cli("deploy-inputs", "--inventory", inventory(tmp_path), "--out", str(tmp_path / "d"))
    assert result.code == 0 and "from-env-pw" in (tmp_path / "d" / "config.yaml").read_text()


def test_unsafe_branch_refused(cli, tmp_path):
    result, _ = run(cli, tmp_path, "--branch", "v1.2.0 # x")
    assert result.code == 2 and "only letters" in result.err


def test_help(cli):
    result = cli("deploy-inputs", "--help")
    assert result.code == 0 and "examples:" in result.out


def test_a_missing_inventory_says_to_copy_the_example(cli, tmp_path):
    missing = tmp_path / "group.yaml"
    result = cli("deploy-inputs", "--inventory", str(missing), "--password", "x")
    assert result.code == 2 and result.err.count("\n") == 1
    assert f"no group inventory at {missing}: copy the example, `cp configs/group.example.yaml {missing}`" in result.err


def test_a_missing_inventory_is_said_before_the_password_is_asked_for(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("HIVEDLAB_SSH_PASSWORD", raising=False)
    result = cli("deploy-inputs", "--inventory", str(tmp_path / "group.yaml"))
    assert result.code == 2 and "no group inventory" in result.err and "password" not in result.err


def test_an_unreadable_inventory_is_one_line(cli, tmp_path):
    folder = tmp_path / "group.yaml"
    folder.mkdir()  # exists, but cannot be read as a file
    result = cli("deploy-inputs", "--inventory", str(folder), "--password", "x")
    assert result.code == 2 and "cannot read group inventory" in result.err and result.err.count("\n") == 1


def test_no_cpu_warning_when_the_records_show_the_workers_cpus(cli, tmp_path):
    """The generic > 50 CPU note is for when hivedlab cannot know; with --env each worker is checked instead."""
    plain = cli("deploy-inputs", "--password", "x", "--out", str(tmp_path / "a"), "--lang", "en")
    assert "more than 50 CPUs" in plain.out
    env = tmp_path / "env"
    env.mkdir()
    checked = cli("deploy-inputs", "--password", "x", "--out", str(tmp_path / "b"), "--env", str(env), "--lang", "en")
    assert "more than 50 CPUs" not in checked.out


def test_default_folder_is_under_home_and_says_where(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    result = cli("deploy-inputs", "--inventory", inventory(tmp_path), "--password", "paiopen", "--lang", "en")
    secret = tmp_path / "home" / "pai-inputs" / "config.yaml"
    assert result.code == 0, result.err
    assert secret.stat().st_mode & 0o777 == 0o600
    assert f"{secret} holds the SSH password: mode 600" in result.out
    assert "paiopen" not in result.out + result.err


@pytest.mark.parametrize("marker", ["folder", "file"], ids=["clone", "linked-worktree"])
def test_folder_inside_a_repository_is_refused(cli, tmp_path, marker):
    repo = tmp_path / "repo"
    repo.mkdir()
    if marker == "folder":
        (repo / ".git").mkdir()
    else:
        (repo / ".git").write_text("gitdir: elsewhere\n", encoding="utf-8")
    result = cli("deploy-inputs", "--inventory", inventory(tmp_path), "--out", str(repo / "deploy"),
                 "--password", "paiopen")
    assert result.code == 2 and result.err.count("\n") == 1
    assert "inside the git repository" in result.err and "--out" in result.err
    assert not (repo / "deploy").exists()


def test_json_names_the_password_file(cli, tmp_path):
    result, out = run(cli, tmp_path, "--format", "json")
    assert json.loads(result.out)["password_file"] == str((out / "config.yaml").resolve())
