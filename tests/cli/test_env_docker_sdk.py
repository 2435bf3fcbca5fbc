"""`hivedlab env` through the Docker SDK against a local Docker API: the daemon's info, a GPU container and its
isolation, and the SDK's raw errors in plain words."""

from __future__ import annotations

import json

import pytest

from hivedlab import envcheck
from tests.support.envcheck_runs import checks_by_id, run_env
from tests.support.local import DOCKER, json_reply, nvidia_smi_script, write_program

pytestmark = pytest.mark.usefixtures("proc_net")


# ------------------------------------------------------------ the docker SDK against a local Docker API


def _docker_api(info: dict):
    def handle(_h, method, path, _body):
        if path.endswith("/_ping"):
            return 200, {"Content-Type": "text/plain", "Api-Version": "1.40"}, b"OK"
        if path.endswith("/version"):
            return json_reply(200, {"Version": "19.03.15", "ApiVersion": "1.40", "MinAPIVersion": "1.12",
                                    "Os": "linux", "Arch": "amd64"})
        if path.endswith("/info"):
            return json_reply(200, info)
        return json_reply(404, {"message": f"page not found: {method} {path}"})

    return handle


def test_docker_sdk_over_tcp(cli, fake_bin, tmp_path, monkeypatch, serve, ubuntu):
    pytest.importorskip("docker")
    info = json.loads((DOCKER / "docker-info-nvidia-default.json").read_text(encoding="utf-8"))
    server = serve(_docker_api(info))
    monkeypatch.setenv("DOCKER_HOST", server.url.replace("http://", "tcp://"))
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    result, record = run_env(cli, tmp_path, "--os-release", str(ubuntu))
    assert result.code == 0, result.out
    assert record["docker_version"] == "19.03.15" and record["docker_default_runtime"] == "nvidia"
    assert any(r["path"].endswith("/info") for r in server.requests)


def test_docker_sdk_unreachable_daemon(cli, fake_bin, tmp_path, monkeypatch, serve):
    pytest.importorskip("docker")
    server = serve(lambda *_: None)  # accepts, then drops every connection
    monkeypatch.setenv("DOCKER_HOST", server.url.replace("http://", "tcp://"))
    _, record = run_env(cli, tmp_path)
    check = checks_by_id(record)["docker"]
    assert check["ok"] is False and check["fix"] is not None


def _docker_api_with_containers(info: dict, start_status: int = 204, isolates: bool = True):
    base = _docker_api(info)
    inspect = {"Id": "c0ffee", "Name": "/lab", "Config": {"Tty": False}, "State": {"Running": False},
               "HostConfig": {"AutoRemove": False, "LogConfig": {"Type": "json-file", "Config": {}}}}

    given_one = {"now": False}

    def frame(text: bytes) -> bytes:
        return bytes([1, 0, 0, 0]) + len(text).to_bytes(4, "big") + text

    def handle(handler, method, path, body):
        route = path.split("?")[0]
        if route.endswith("/containers/create") and method == "POST":
            spec = json.loads(body)
            assert spec["Cmd"] == ["nvidia-smi", "-L"] and spec["Image"] == "nvidia/cuda:10.0-base"
            given_one["now"] = "NVIDIA_VISIBLE_DEVICES=0" in (spec.get("Env") or []) and isolates
            return json_reply(201, {"Id": "c0ffee", "Warnings": []})
        if route.endswith("/containers/c0ffee/json"):
            return json_reply(200, inspect)
        if route.endswith("/containers/c0ffee/start"):
            if start_status != 204:
                return json_reply(start_status, {"message": "OCI runtime create failed: nvidia-container-cli: "
                                                            "initialization error: driver not loaded"})
            return 204, {}, b""
        if route.endswith("/containers/c0ffee/wait"):
            return json_reply(200, {"StatusCode": 0})
        if route.endswith("/containers/c0ffee/logs"):
            listed = b"GPU 0: NVIDIA H200 (UUID: GPU-0)\n" + (
                b"" if given_one["now"] else b"GPU 1: NVIDIA H200 (UUID: GPU-1)\n")
            return 200, {"Content-Type": "application/vnd.docker.raw-stream"}, frame(listed)
        if route.endswith("/containers/c0ffee") and method == "DELETE":
            return 204, {}, b""
        return base(handler, method, path, body)

    return handle


@pytest.mark.parametrize("start_status", [204, 500], ids=["gpu-visible", "oci-runtime-error"])
def test_gpu_container_via_docker_sdk(cli, fake_bin, tmp_path, monkeypatch, serve, start_status):
    pytest.importorskip("docker")
    info = json.loads((DOCKER / "docker-info-nvidia-default.json").read_text(encoding="utf-8"))
    server = serve(_docker_api_with_containers(info, start_status))
    monkeypatch.setenv("DOCKER_HOST", server.url.replace("http://", "tcp://"))
    _, record = run_env(cli, tmp_path, "--gpu-container")
    check = checks_by_id(record)["gpu-container"]
    if start_status == 204:
        assert check["ok"] is True and "2 GPU(s) visible in a container" in check["message"]["en"], check
        assert checks_by_id(record)["gpu-isolation"]["ok"] is True
        assert any(r["method"] == "DELETE" for r in server.requests)  # --rm
    else:
        assert check["ok"] is False and "nvidia-container-cli" in check["message"]["en"]


def test_gpu_container_that_sees_every_gpu_fails_isolation(cli, fake_bin, tmp_path, monkeypatch, serve):
    pytest.importorskip("docker")
    info = json.loads((DOCKER / "docker-info-nvidia-default.json").read_text(encoding="utf-8"))
    server = serve(_docker_api_with_containers(info, isolates=False))
    monkeypatch.setenv("DOCKER_HOST", server.url.replace("http://", "tcp://"))
    result, record = run_env(cli, tmp_path, "--gpu-container")
    check = checks_by_id(record)["gpu-isolation"]
    assert check["ok"] is False and "2 GPU(s) (must be 1)" in check["message"]["en"]
    assert "NVIDIA_VISIBLE_DEVICES" in check["fix"]["en"] and result.code == 1


def test_docker_sdk_raw_socket_error_becomes_plain_words(cli, fake_bin, tmp_path, monkeypatch):
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such-docker.sock")
    result, record = run_env(cli, tmp_path)
    check = checks_by_id(record)["docker"]
    assert check["message"]["en"] == (
        "Docker Engine not reachable: the Docker daemon is not running (no /var/run/docker.sock)")
    assert "sudo systemctl start docker" in check["fix"]["en"]
    assert "Error while fetching" not in result.out and "FileNotFoundError" not in json.dumps(record)


def test_docker_sdk_raw_errors_in_plain_words():
    raw = ("Error while fetching server API version: ('Connection aborted.', FileNotFoundError(2, 'No such file or "
           "directory'))")
    assert envcheck.explain_docker_error(raw)[1] == "the Docker daemon is not running (no /var/run/docker.sock)"
    zh, en = envcheck.explain_docker_error(
        "Error while fetching server API version: ('Connection aborted.', PermissionError(13, 'Permission denied'))")
    assert en == "this user may not use /var/run/docker.sock" and "docker.sock" in zh
    assert envcheck.explain_docker_error("something else") is None
