"""`hivedlab env` / labs/00_check_env.py against recorded nvidia-smi and docker outputs: the parsers, whole runs
with fake programs, the checks by role, sshd, the clock and image pulls; the records of a real GPU machine."""

from __future__ import annotations

import json
import shutil

import pytest

from hivedlab import envcheck
from hivedlab.envcheck import checks as envcheck_checks
from hivedlab.envcheck import probes
from tests.support.envcheck_runs import TCP_HEADER, checks_by_id, run_env, validate
from tests.support.local import DOCKER, GPU_MACHINE, nvidia_smi_script, write_program

pytestmark = pytest.mark.usefixtures("proc_net")


# ------------------------------------------------------------ parsing


def test_query_gpu_csv_with_units_in_the_header():
    rows = envcheck.parse_query_gpu_csv((GPU_MACHINE / "query-gpu.csv").read_text(encoding="utf-8"))
    assert rows == [{"index": "0", "name": "NVIDIA H200", "uuid": "GPU-00000000-0000-0000-0000-000000000000",
                     "driver_version": "580.159.04", "memory.total": "143771 MiB", "pci.bus_id": "00000000:00:06.0",
                     "compute_cap": "9.0"}]
    assert envcheck.parse_mib(rows[0]["memory.total"]) == 143771
    assert envcheck.parse_mib("[N/A]") is None


def test_query_gpu_csv_without_header_uses_the_query_fields():
    rows = envcheck.parse_query_gpu_csv("0, Tesla K80, GPU-1, 418.67, 11441 MiB, 00000000:00:04.0\n"
                                        "1, Tesla K80, GPU-2, 418.67, 11441 MiB, 00000000:00:05.0\n")
    assert [r["name"] for r in rows] == ["Tesla K80", "Tesla K80"]


def test_nvidia_smi_xml_gives_driver_cuda_and_gpus():
    parsed = envcheck.parse_nvidia_smi_xml((GPU_MACHINE / "nvidia-smi-q.xml").read_text(encoding="utf-8"))
    assert parsed == {"driver_version": "580.159.04", "cuda_version": "13.0",
                      "gpus": [{"name": "NVIDIA H200", "memory_mib": 143771, "bus_id": "00000000:00:06.0"}]}


def test_bad_xml_is_a_value_error():
    with pytest.raises(ValueError, match="valid XML"):
        envcheck.parse_nvidia_smi_xml("<nvidia_smi_log>")


def test_nvcc_version():
    text = ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
            "Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n")
    assert envcheck.parse_nvcc_version(text) == "13.0.88"
    assert envcheck.parse_nvcc_version("Cuda compilation tools, release 10.0\n") == "10.0"
    assert envcheck.parse_nvcc_version("") is None


def test_os_release_and_meminfo():
    fields = envcheck.parse_os_release(
        'NAME="Ubuntu"\nVERSION_ID="18.04"\nID=ubuntu\nPRETTY_NAME="Ubuntu 18.04.5 LTS"\n')
    assert fields["PRETTY_NAME"] == "Ubuntu 18.04.5 LTS" and fields["ID"] == "ubuntu"
    assert envcheck.parse_meminfo_available_mb("MemTotal: 32000000 kB\nMemAvailable:   20000000 kB\n") == 20480


# ------------------------------------------------------------ whole runs with fake programs


def test_ready_worker_via_docker_cli(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-nvidia-default.json"}"\n')
    result, record = run_env(cli, tmp_path, "--no-sdk", "--os-release", str(ubuntu), "--ip", "10.0.1.3")
    assert result.code == 0, result.out
    validate(record)
    assert record["gpus"] == {"model": "NVIDIA H200", "count": 1, "memory_mib": 143771}
    assert (record["driver_version"], record["cuda_version"]) == ("580.159.04", "13.0")
    assert (record["docker_version"], record["docker_default_runtime"]) == ("19.03.15", "nvidia")
    assert record["ip"] == "10.0.1.3" and record["os"] == "Ubuntu 18.04.5 LTS"
    checks = checks_by_id(record)
    assert all(checks[i]["ok"] for i in ("docker", "nvidia-runtime", "default-runtime", "nvidia-smi", "gpu", "os"))
    assert checks["gpu-container"]["ok"] is None
    assert "[OK  ] default-runtime" in result.out


def test_runc_default_fails_with_the_daemon_json_fix(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-runc-default.json"}"\n')
    result, record = run_env(cli, tmp_path, "--no-sdk", "--os-release", str(ubuntu))
    assert result.code == 1
    check = checks_by_id(record)["default-runtime"]
    assert check["ok"] is False and "runc" in check["message"]["en"]
    assert "sudo systemctl restart docker" in check["fix"]["en"] and '"default-runtime": "nvidia"' in check["fix"]["zh"]


def test_missing_nvidia_runtime(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-no-nvidia-runtime.json"}"\n')
    result, record = run_env(cli, tmp_path, "--no-sdk", "--os-release", str(ubuntu))
    assert result.code == 1
    assert "nvidia-container-runtime" in checks_by_id(record)["nvidia-runtime"]["fix"]["en"]


def test_no_docker_no_gpu_like_the_recorded_machine_without_docker(cli, fake_bin, tmp_path):
    result, record = run_env(cli, tmp_path, "--no-sdk")
    assert result.code == 1
    validate(record)
    checks = checks_by_id(record)
    assert checks["docker"]["ok"] is False and "command not found" in checks["docker"]["message"]["en"]
    assert "docs.docker.com" in checks["docker"]["fix"]["en"]
    assert checks["nvidia-smi"]["ok"] is False and "ubuntu-drivers" in checks["nvidia-smi"]["fix"]["en"]
    assert record["gpus"]["count"] == 0 and record["docker_version"] is None
    assert "Traceback" not in result.out + result.err


def test_recorded_gpu_machine_without_docker(cli, fake_bin, tmp_path):
    """The H200 machine of tests/fixtures/gpu-machine: GPUs fine, docker: command not found."""
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    result, record = run_env(cli, tmp_path, "--no-sdk")
    checks = checks_by_id(record)
    assert checks["nvidia-smi"]["ok"] and checks["gpu"]["ok"] and checks["docker"]["ok"] is False
    assert result.code == 1


@pytest.mark.parametrize("sdk", [(), ("--no-sdk",)], ids=["docker-sdk", "docker-cli"])
def test_gpu_container_without_docker_says_docker_is_missing_in_plain_words(cli, fake_bin, tmp_path, monkeypatch,
                                                                            sdk):
    """Seen on a real GPU machine: the SDK's raw "Error while fetching server API version: ('Connection aborted.',
    FileNotFoundError(2, ...))" and advice to fix the default runtime, although Docker was not installed at all."""
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-docker.sock'}")
    result, record = run_env(cli, tmp_path, *sdk, "--gpu-container")
    checks = checks_by_id(record)
    assert checks["docker"]["ok"] is False
    container = checks["gpu-container"]
    assert container["ok"] is False
    assert container["message"]["en"] == (
        "GPU in a container not checked: Docker Engine is not reachable (see the docker check)")
    assert container["message"]["zh"] == "无法在容器内检查 GPU：Docker Engine 不可用（见 docker 检查）"
    assert container["fix"] == checks["docker"]["fix"] and "default runtime" not in container["fix"]["en"]
    assert "Connection aborted" not in json.dumps(record) and result.code == 1


def test_daemon_down_reported_from_cli_server_errors(cli, fake_bin, tmp_path):
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-daemon-down.json"}"\n')
    _, record = run_env(cli, tmp_path, "--no-sdk")
    assert checks_by_id(record)["docker"]["message"]["en"] == (
        "Docker Engine not reachable: the Docker daemon is not running (no /var/run/docker.sock)")


def test_gpu_container_check_via_cli(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", (
        f'if [ "$1" = info ]; then cat "{DOCKER / "docker-info-nvidia-default.json"}"; exit 0; fi\n'
        'echo "$@" >> "$(dirname "$0")/run-args"\n'
        'echo "GPU 0: NVIDIA H200 (UUID: GPU-0)"\n'))
    result, record = run_env(cli, tmp_path, "--no-sdk", "--gpu-container",
                              "--cuda-image", "nvidia/cuda:12.0.0-base-ubuntu22.04", "--os-release", str(ubuntu))
    assert result.code == 0
    assert checks_by_id(record)["gpu-container"]["ok"] is True
    assert (fake_bin / "run-args").read_text().splitlines() == [
        "run --rm nvidia/cuda:12.0.0-base-ubuntu22.04 nvidia-smi -L",
        "run --rm -e NVIDIA_VISIBLE_DEVICES=0 nvidia/cuda:12.0.0-base-ubuntu22.04 nvidia-smi -L"]
    assert checks_by_id(record)["gpu-isolation"]["ok"] is True


def test_gpu_container_failure_names_the_image(cli, fake_bin, tmp_path):
    write_program(fake_bin, "docker", (
        f'if [ "$1" = info ]; then cat "{DOCKER / "docker-info-runc-default.json"}"; exit 0; fi\n'
        'echo "docker: Error response from daemon: OCI runtime create failed" >&2; exit 125\n'))
    _, record = run_env(cli, tmp_path, "--no-sdk", "--gpu-container")
    check = checks_by_id(record)["gpu-container"]
    assert check["ok"] is False and "OCI runtime" in check["message"]["en"]
    assert "nvidia/cuda:10.0-base" in check["fix"]["en"]


def test_role_master_memory_and_gpu_warning(cli, fake_bin, tmp_path, monkeypatch):
    monkeypatch.setattr(probes, "parse_meminfo_available_mb", lambda text: 30000)
    result, record = run_env(cli, tmp_path, "--no-sdk", "--role", "master")
    checks = checks_by_id(record)
    assert checks["memory"]["ok"] is False and "40000" in checks["memory"]["message"]["en"]
    assert checks["gpu"]["ok"] is None and checks["nvidia-smi"]["ok"] is None


def test_json_format_prints_the_record(cli, fake_bin, tmp_path):
    result = cli("env", "--member", "Dan", "--no-sdk", "--linux-user", "", "--format", "json", "--out", "-")
    record = json.loads(result.out)
    validate(record)
    assert record["member"] == "Dan"


def test_unwritable_out_is_one_line(cli, fake_bin, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = cli("env", "--no-sdk", "--linux-user", "", "--out", str(blocker / "sub" / "x.json"))
    assert result.code == 2 and result.err.startswith("hivedlab env: error: cannot write")
    assert len(result.err.strip().splitlines()) == 1


def test_help_has_examples(cli):
    result = cli("env", "--help")
    assert result.code == 0 and "examples:" in result.out and "--gpu-container" in result.out


def test_bad_option_is_a_usage_error(cli):
    assert cli("env", "--role", "boss").code == 2


def test_record_written_on_a_real_h100_is_valid():
    """Recorded by scripts/device_check_env.sh on a real GPU machine (tests/fixtures/gpu-machine/README.md)."""
    record = json.loads((GPU_MACHINE / "env-record-h100.json").read_text(encoding="utf-8"))
    validate(record)
    assert record["gpus"] == {"model": "NVIDIA H100 80GB HBM3", "count": 1, "memory_mib": 81559}
    assert checks_by_id(record)["docker"]["ok"] is False
    assert record["clock"] == {"ntp_synchronized": None, "offset_ms": None, "source": None}  # no timedatectl there


@pytest.mark.gpu
@pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="needs nvidia-smi")
def test_real_gpu_machine(tmp_path):
    out = tmp_path / "rec.json"
    assert envcheck.main(["--out", str(out), "--linux-user", "", "--no-sdk"]) in (0, 1)
    record = json.loads(out.read_text(encoding="utf-8"))
    validate(record)
    assert record["gpus"]["count"] >= 1 and record["driver_version"]


# ------------------------------------------------------------ machine check by role, sshd, clock, pulls


def test_gpu_less_dev_box_passes(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-runc-default.json"}"\n')
    result, record = run_env(cli, tmp_path, "--no-sdk", "--role", "dev-box", "--os-release", str(ubuntu))
    assert result.code == 0, result.out
    validate(record)
    checks = checks_by_id(record)
    assert "nvidia-runtime" not in checks and "default-runtime" not in checks
    assert checks["gpu"]["ok"] is None and "a dev-box needs no GPU" in checks["gpu"]["message"]["en"]
    assert "[FAIL]" not in result.out


def test_gpu_less_master_passes_and_gpu_container_is_not_run(cli, fake_bin, tmp_path, ubuntu, monkeypatch):
    monkeypatch.setattr(probes, "parse_meminfo_available_mb", lambda text: 64000)
    write_program(fake_bin, "docker", (
        f'if [ "$1" = info ]; then cat "{DOCKER / "docker-info-runc-default.json"}"; exit 0; fi\n'
        'echo ran > "$(dirname "$0")/ran"; exit 125\n'))
    result, record = run_env(cli, tmp_path, "--no-sdk", "--role", "master", "--gpu-container",
                              "--os-release", str(ubuntu))
    assert result.code == 0, result.out
    assert not (fake_bin / "ran").exists() and checks_by_id(record)["memory"]["ok"] is True


def test_worker_without_a_gpu_still_fails(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-nvidia-default.json"}"\n')
    result, record = run_env(cli, tmp_path, "--no-sdk", "--role", "worker", "--os-release", str(ubuntu))
    assert result.code == 1 and checks_by_id(record)["nvidia-smi"]["ok"] is False


@pytest.mark.parametrize(("role", "severity", "code"), [("worker", "error", 1), ("dev-box", "warning", 0)])
def test_sshd_not_listening(cli, fake_bin, tmp_path, ubuntu, proc_net, role, severity, code):
    (proc_net / "tcp").write_text(TCP_HEADER + "   0: 00000000:07E8 00000000:0000 0A 0 0 0 0 0 1 1\n"
                                  "   1: 0100007F:0016 0200007F:B000 01 0 0 0 0 0 1 1\n", encoding="utf-8")
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-nvidia-default.json"}"\n')
    result, record = run_env(cli, tmp_path, "--no-sdk", "--role", role, "--os-release", str(ubuntu))
    check = checks_by_id(record)["sshd"]
    assert check["ok"] is False and check["severity"] == severity and "openssh-server" in check["fix"]["en"]
    assert result.code == code


def test_sshd_on_ipv6_only(proc_net):
    (proc_net / "tcp").write_text(TCP_HEADER, encoding="utf-8")
    (proc_net / "tcp6").write_text(TCP_HEADER + "   0: 00000000000000000000000000000000:0016 "
                                   "00000000000000000000000000000000:0000 0A 0 0 0 0 0 1 1\n", encoding="utf-8")
    assert envcheck.probe_sshd() is True


TIMEDATECTL_1804 = """                      Local time: Thu 2026-11-26 10:00:00 UTC
                  Universal time: Thu 2026-11-26 10:00:00 UTC
                        RTC time: Thu 2026-11-26 10:00:00
                       Time zone: Etc/UTC (UTC, +0000)
       System clock synchronized: {sync}
systemd-timesyncd.service active: yes
                 RTC in local TZ: no
"""
CHRONYC = """Reference ID    : A9FEA97B (169.254.169.123)
Stratum         : 4
System time     : 0.000734211 seconds slow of NTP time
Last offset     : -0.000011380 seconds
"""


@pytest.mark.parametrize("sync", ["yes", "no"])
def test_clock_state_and_offset_recorded(cli, fake_bin, tmp_path, ubuntu, sync):
    write_program(fake_bin, "timedatectl",
                  f'[ "$1" = status ] || exit 1\ncat <<"EOF"\n{TIMEDATECTL_1804.format(sync=sync)}EOF\n')
    write_program(fake_bin, "chronyc", f'cat <<"EOF"\n{CHRONYC}EOF\n')
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-runc-default.json"}"\n')
    result, record = run_env(cli, tmp_path, "--no-sdk", "--role", "dev-box", "--os-release", str(ubuntu))
    validate(record)
    assert record["clock"] == {"ntp_synchronized": sync == "yes", "offset_ms": -0.734, "source": "chronyc"}
    check = checks_by_id(record)["ntp"]
    assert check["ok"] is (sync == "yes") and check["severity"] == "warning"
    assert "offset -0.734 ms" in check["message"]["en"]
    assert result.code == 0  # a warning only


def test_clock_parsers():
    assert envcheck.parse_timedatectl("NTP synchronized: no\n") is False  # Ubuntu 16.04's wording
    assert envcheck.parse_timedatectl("") is None
    assert envcheck.parse_clock_offset_ms("       Offset: +1.262ms\n") == 1.262
    assert envcheck.parse_clock_offset_ms("       Offset: -250us\n") == -0.25
    assert envcheck.parse_clock_offset_ms("System time : 1.5 seconds fast of NTP time") == 1500.0
    assert envcheck.parse_clock_offset_ms("nothing") is None


PULL_TIMEOUT = ("docker: Error response from daemon: Get https://registry-1.docker.io/v2/: net/http: request canceled "
                "while waiting for connection (Client.Timeout exceeded while awaiting headers).")


def test_failed_pull_gives_the_registry_mirror_hint(cli, fake_bin, tmp_path, ubuntu):
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", (
        f'if [ "$1" = info ]; then cat "{DOCKER / "docker-info-nvidia-default.json"}"; exit 0; fi\n'
        f'echo "{PULL_TIMEOUT}" >&2; exit 125\n'))
    result, record = run_env(cli, tmp_path, "--no-sdk", "--gpu-container", "--os-release", str(ubuntu))
    hint = checks_by_id(record)["registry-mirror"]
    assert hint["ok"] is False and hint["severity"] == "warning"
    assert "registry mirrors configured: none" in hint["message"]["en"]
    assert '"registry-mirrors"' in hint["fix"]["en"] and "docker pull nvidia/cuda:10.0-base" in hint["fix"]["en"]
    assert "gpu-isolation" not in checks_by_id(record) and result.code == 1


def test_slow_pull_gives_the_hint_and_the_isolation_probe_runs(fake_bin, tmp_path):
    write_program(fake_bin, "docker", 'case "$*" in *NVIDIA_VISIBLE_DEVICES=0*) echo "GPU 0: A";; '
                                      '*) printf "GPU 0: A\\nGPU 1: B\\n";; esac\n')
    ticks = iter([0.0, 300.0])
    container = envcheck.probe_gpu_container("img", use_sdk=False, clock=lambda: next(ticks))
    assert container["ok"] and container["gpus"] == 2 and container["elapsed_s"] == 300.0
    assert container["isolated"] == {"ok": True, "gpus": 1, "error": None}
    checks = {c["id"]: c for c in envcheck_checks._container_checks(container, "img", {"registry_mirrors": ["https://m"]})}
    assert checks["gpu-isolation"]["ok"] is True
    assert "the first run took 300.0 s; registry mirrors configured: https://m" in (
        checks["registry-mirror"]["message"]["en"])


def test_the_record_written_comes_with_the_command_that_copies_it_into_the_run_directory(tmp_path):
    """00_check_env.py writes ./env/NAME.json on the member's machine; the run directory keeps it as
    `env_record_name` says (`out/` by default)."""
    from hivedlab.envcheck.command import copy_hint
    from hivedlab.rundir import env_record_name

    there = copy_hint("env/Carol.json", "Carol.json", here=False, lang="en")
    assert there.endswith(f"scp env/Carol.json <user>@<dev-box>:<repository>/out/{env_record_name('Carol')}")
    here = copy_hint("env/Alice.json", "Alice.json", here=True, lang="zh")
    assert here.endswith(f"mkdir -p out/env/ && cp env/Alice.json out/{env_record_name('Alice')}")
    assert here.startswith("把记录复制到 dev-box 上运行目录的 env/")
