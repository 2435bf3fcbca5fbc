"""The machine check of the manual's step 1: check this machine for the lab and write its environment record.

`hivedlab env` runs it, and so does `labs/00_check_env.py` alone on a member's machine with the distribution's Python
(Ubuntu 18.04: Python 3.6) and the standard library only. Keep it Python 3.6 compatible: no dataclasses, no
`from __future__ import annotations`, no walrus, no `subprocess.run(capture_output=..., text=...)`.

Usage: python3 labs/00_check_env.py [--member NAME] [--role worker|master|dev-box] [--gpu-container]
                                    [--format text|json] [--out PATH] [--lang zh|en]

Workers need a GPU, the nvidia runtime as Docker's default, and (with --gpu-container) a container that sees exactly
the GPU it was given; the master and the dev-box need none of that. Every machine of the cluster needs sshd listening
(quick-start logs in over SSH) and a synchronized clock (docs/deployment.md).
"""

import argparse
import datetime
import grp
import json
import os
import platform
import pwd
import re
import shutil
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree

TOOL_NAME = "hivedlab-env"
TOOL_VERSION = "0.1.0"
RECORD_VERSION = 1
# The manual's step 1.3 image; any CUDA base image works (override with --cuda-image).
DEFAULT_CUDA_IMAGE = "nvidia/cuda:10.0-base"
QUERY_GPU_FIELDS = "index,name,uuid,driver_version,memory.total,pci.bus_id"
# docs/openpai-model.md#quick-start-inputs (requirement.sh): free memory on workers >= 16000 MB, on the master >= 40000 MB.
MIN_MEMORY_MB = {"worker": 16000, "master": 40000}
COMMAND_TIMEOUT_S = 60
CONTAINER_TIMEOUT_S = 600
SLOW_PULL_S = 120  # a first `docker run` of the small CUDA base image slower than this: pulls need a mirror
SSH_PORT = 22
PROC_NET = "/proc/net"
GPU_ROLES = (None, "worker")  # no --role: checked as a worker
# words in a failed `docker run` that mean the image could not be pulled
PULL_FAILURES = ("pull", "manifest", "TLS handshake", "i/o timeout", "toomanyrequests", "Client.Timeout",
                 "request canceled", "no such host", "connection reset")

DAEMON_JSON = (
    '{"default-runtime": "nvidia", "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}}}'
)

# check id -> (zh fix, en fix): the manual's commands (step 1) for each failed check.
FIXES = {
    "docker": (
        "按实验手册 1.1 安装 Docker Engine（https://docs.docker.com/engine/install/ubuntu/），然后 "
        "`sudo systemctl start docker`；无 root 时用 `sudo usermod -aG docker $USER` 后重新登录，或用 sudo 运行本检查。",
        "Install Docker Engine as in step 1.1 of the manual (https://docs.docker.com/engine/install/ubuntu/), then "
        "`sudo systemctl start docker`; as a non-root user run `sudo usermod -aG docker $USER` and log in again, "
        "or run this check with sudo.",
    ),
    "nvidia-runtime": (
        "按实验手册 1.2 安装 nvidia-container-runtime（`sudo apt-get install nvidia-container-runtime`），在 "
        "/etc/docker/daemon.json 写入 " + DAEMON_JSON + "，然后 `sudo systemctl restart docker`。",
        "Install nvidia-container-runtime as in step 1.2 (`sudo apt-get install nvidia-container-runtime`), put "
        + DAEMON_JSON + " into /etc/docker/daemon.json, then `sudo systemctl restart docker`.",
    ),
    "default-runtime": (
        "在 /etc/docker/daemon.json 中把 `default-runtime` 设为 `nvidia`（" + DAEMON_JSON + "），然后 "
        "`sudo systemctl restart docker`，再用 `sudo docker info` 确认 Default Runtime: nvidia。",
        "Set `default-runtime` to `nvidia` in /etc/docker/daemon.json (" + DAEMON_JSON + "), then "
        "`sudo systemctl restart docker` and confirm 'Default Runtime: nvidia' with `sudo docker info`.",
    ),
    "nvidia-smi": (
        "安装 NVIDIA 驱动（`sudo ubuntu-drivers autoinstall` 后重启），确认 `nvidia-smi` 能列出 GPU。",
        "Install the NVIDIA driver (`sudo ubuntu-drivers autoinstall`, then reboot) until `nvidia-smi` lists the GPU.",
    ),
    "gpu": (
        "worker 至少需要一块可见的 NVIDIA GPU：检查 `lspci | grep -i nvidia` 和 `nvidia-smi -L`。",
        "A worker needs at least one visible NVIDIA GPU: check `lspci | grep -i nvidia` and `nvidia-smi -L`.",
    ),
    "gpu-container": (
        "先修好 Default Runtime，再运行 `sudo docker run --rm {image} nvidia-smi`；镜像拉不到时用 --cuda-image "
        "换一个与驱动匹配的 nvidia/cuda 基础镜像。",
        "Fix the default runtime first, then run `sudo docker run --rm {image} nvidia-smi`; if the image cannot be "
        "pulled, pass --cuda-image with an nvidia/cuda base image that matches your driver.",
    ),
    "os": (
        "OpenPAI v1.2.0 的 quick-start 只在 Ubuntu 16.04/18.04 上测试过，建议使用 Ubuntu 18.04 LTS。",
        "OpenPAI v1.2.0's quick-start is tested on Ubuntu 16.04/18.04 only; Ubuntu 18.04 LTS is recommended.",
    ),
    "memory": (
        "quick-start 要求 worker 空闲内存 >= 16000 MB、master >= 40000 MB：关闭其它程序或换一台机器。",
        "quick-start requires >= 16000 MB free memory on workers and >= 40000 MB on the master: free memory or "
        "use another machine.",
    ),
    "sshd": (
        "quick-start 通过 SSH 登录每台集群机器：`sudo apt-get install openssh-server && sudo systemctl enable --now "
        "ssh`，再用 `ssh {user}@<本机 IP>` 试一次。",
        "quick-start logs in to every cluster machine over SSH: `sudo apt-get install openssh-server && sudo "
        "systemctl enable --now ssh`, then try `ssh {user}@<this machine's IP>`.",
    ),
    "ntp": (
        "打开时间同步：`sudo timedatectl set-ntp true`（或 `sudo apt-get install chrony`），几分钟后用 "
        "`timedatectl status` 确认 System clock synchronized: yes。各节点时钟不一致会让证据日志的时间对不上。",
        "Turn on time synchronization: `sudo timedatectl set-ntp true` (or `sudo apt-get install chrony`), then "
        "check 'System clock synchronized: yes' in `timedatectl status` a few minutes later. Nodes whose clocks "
        "differ make the evidence's times disagree.",
    ),
    "registry-mirror": (
        "镜像拉取失败或很慢：在 /etc/docker/daemon.json 中加入 `\"registry-mirrors\": [\"https://<镜像站地址>\"]`"
        "（保留 nvidia 运行时的设置），`sudo systemctl restart docker`，再用 `sudo docker pull {image}` 试一次。",
        "Image pulls fail or are slow: add `\"registry-mirrors\": [\"https://<mirror>\"]` to /etc/docker/daemon.json "
        "(keep the nvidia runtime settings), `sudo systemctl restart docker`, then try `sudo docker pull {image}`.",
    ),
    "gpu-isolation": (
        "给定 NVIDIA_VISIBLE_DEVICES=0 的容器应只看到一块 GPU：确认 Default Runtime 为 nvidia、nvidia-container-runtime "
        "已安装，且 /etc/nvidia-container-runtime/config.toml 没有改动 accept-nvidia-visible-devices-envvar-when-unprivileged。",
        "A container given NVIDIA_VISIBLE_DEVICES=0 must see one GPU only: make nvidia the default runtime, install "
        "nvidia-container-runtime, and leave accept-nvidia-visible-devices-envvar-when-unprivileged unchanged in "
        "/etc/nvidia-container-runtime/config.toml.",
    ),
    "linux-user": (
        "按实验手册 1.4 新建同名 Linux 用户并加入 sudo 组：`sudo useradd -m {user} && sudo passwd {user} && "
        "sudo usermod -a -G sudo {user}`。",
        "Create the same Linux user on every machine as in step 1.4: `sudo useradd -m {user} && sudo passwd {user} "
        "&& sudo usermod -a -G sudo {user}`.",
    ),
}


class EnvCheckError(Exception):
    """A one-line user-facing failure (bad option, unwritable output)."""


# ---------------------------------------------------------------- parsing (pure)


def parse_query_gpu_csv(text):
    """Rows of `nvidia-smi --query-gpu=... --format=csv[,noheader]` as dicts keyed by the query field names."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = [_field_name(cell) for cell in lines[0].split(",")]
    if "name" not in header and "index" not in header:
        header = QUERY_GPU_FIELDS.split(",")
        rows = lines
    else:
        rows = lines[1:]
    result = []
    for line in rows:
        cells = [cell.strip() for cell in line.split(",")]
        result.append(dict(zip(header, cells)))
    return result


def _field_name(cell):
    # "memory.total [MiB]" -> "memory.total"
    return cell.strip().split(" [")[0].strip()


def parse_mib(value):
    """'143771 MiB' -> 143771; None when it is not a number (e.g. '[N/A]')."""
    try:
        return int(str(value).split()[0])
    except (ValueError, IndexError):
        return None


def parse_nvidia_smi_xml(text):
    """Driver and CUDA versions and the GPUs from `nvidia-smi -q -x`."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise ValueError("nvidia-smi -q -x did not print valid XML: {}".format(exc)) from None
    gpus = []
    for gpu in root.findall("gpu"):
        gpus.append(
            {
                "name": (gpu.findtext("product_name") or "").strip(),
                "memory_mib": parse_mib(gpu.findtext("fb_memory_usage/total") or ""),
                "bus_id": gpu.get("id") or "",
            }
        )
    return {
        "driver_version": (root.findtext("driver_version") or "").strip() or None,
        "cuda_version": (root.findtext("cuda_version") or "").strip() or None,
        "gpus": gpus,
    }


def parse_nvcc_version(text):
    """'Cuda compilation tools, release 13.0, V13.0.88' -> '13.0.88' (the V number), else the release."""
    for line in text.splitlines():
        if "release" in line:
            tail = line.split("release", 1)[1]
            parts = [p.strip() for p in tail.split(",")]
            for part in parts[1:]:
                if part.startswith("V"):
                    return part[1:]
            return parts[0] or None
    return None


def parse_os_release(text):
    """Fields of /etc/os-release as a dict (quotes removed)."""
    fields = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        fields[key.strip()] = value.strip().strip('"').strip("'")
    return fields


def parse_meminfo_available_mb(text):
    """MemAvailable from /proc/meminfo in MB (10^6 bytes, as requirement.sh's `free -m` is close enough)."""
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            try:
                return int(line.split()[1]) * 1024 // 1000000
            except (ValueError, IndexError):
                return None
    return None


def explain_docker_error(error):
    """Plain (zh, en) words for the docker SDK's and CLI's raw connection errors; None for any other error."""
    text = str(error)
    if "FileNotFoundError" in text or "No such file or directory" in text or "Is the docker daemon running" in text:
        return ("Docker 守护进程没有运行（找不到 /var/run/docker.sock）",
                "the Docker daemon is not running (no /var/run/docker.sock)")
    if "PermissionError" in text or "Permission denied" in text or "permission denied" in text:
        return ("当前用户无权访问 /var/run/docker.sock", "this user may not use /var/run/docker.sock")
    if "Connection aborted" in text or "Connection refused" in text or "Connection reset" in text:
        return ("连接不上 Docker 守护进程（连接被拒绝或中断）",
                "cannot talk to the Docker daemon (the connection was refused or dropped)")
    return None


def parse_listening_ports(text):
    """Local TCP ports in state LISTEN (0A) from /proc/net/tcp or tcp6."""
    ports = set()
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[3] == "0A" and ":" in fields[1]:
            try:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
            except ValueError:
                continue
    return ports


def parse_timedatectl(text):
    """'System clock synchronized: yes' (18.04) or 'NTP synchronized: yes' (16.04) -> True/False; else None."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("System clock synchronized", "NTP synchronized"):
            return value.strip() == "yes"
    return None


def parse_clock_offset_ms(text):
    """The clock's offset from NTP in ms, positive when ahead: `chronyc tracking` or `timedatectl timesync-status`."""
    match = re.search(r"System time\s*:\s*([0-9.]+) seconds (fast|slow)", text)
    if match:
        value = float(match.group(1)) * 1000
        return round(value if match.group(2) == "fast" else -value, 3)
    match = re.search(r"Offset:\s*([+-]?[0-9.]+)(us|ms|s)\b", text)
    if match:
        scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[match.group(2)]
        return round(float(match.group(1)) * scale, 3)
    return None


def summarize_docker_info(info):
    """The fields we record from Docker's /info reply (`docker info --format '{{json .}}'` has the same keys)."""
    runtimes = info.get("Runtimes") or {}
    mirrors = (info.get("RegistryConfig") or {}).get("Mirrors") or []
    return {
        "registry_mirrors": [str(m) for m in mirrors] if isinstance(mirrors, list) else [],
        "version": info.get("ServerVersion") or None,
        "default_runtime": info.get("DefaultRuntime") or None,
        "runtimes": sorted(runtimes) if isinstance(runtimes, dict) else [],
        "os": info.get("OperatingSystem") or None,
        "ncpu": info.get("NCPU"),
    }


# ---------------------------------------------------------------- probing (I/O)


def run_command(argv, timeout=COMMAND_TIMEOUT_S):
    """(exit code, stdout, stderr); exit code 127 when the program is missing, 124 on timeout."""
    if shutil.which(argv[0]) is None:
        return 127, "", "{}: command not found".format(argv[0])
    try:
        done = subprocess.run(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return 124, "", "{} timed out after {} s".format(argv[0], timeout)
    except OSError as exc:
        return 126, "", "{}: {}".format(argv[0], exc)
    return done.returncode, done.stdout, done.stderr


def probe_gpus():
    """nvidia-smi through its machine-readable outputs: the CSV query, and the XML for the CUDA version."""
    result = {"ok": False, "error": None, "driver_version": None, "cuda_version": None, "gpus": []}
    code, out, err = run_command(
        ["nvidia-smi", "--query-gpu=" + QUERY_GPU_FIELDS, "--format=csv"]
    )
    if code != 0:
        result["error"] = _first_line(err or out) or "nvidia-smi exited with {}".format(code)
        return result
    rows = parse_query_gpu_csv(out)
    result["gpus"] = [
        {"name": row.get("name", ""), "memory_mib": parse_mib(row.get("memory.total", "")),
         "bus_id": row.get("pci.bus_id", "")}
        for row in rows
    ]
    if rows:
        result["driver_version"] = rows[0].get("driver_version") or None
    code, out, err = run_command(["nvidia-smi", "-q", "-x"])
    if code == 0:
        try:
            xml = parse_nvidia_smi_xml(out)
        except ValueError as exc:
            result["error"] = str(exc)
            return result
        result["cuda_version"] = xml["cuda_version"]
        result["driver_version"] = result["driver_version"] or xml["driver_version"]
        if not result["gpus"]:
            result["gpus"] = xml["gpus"]
    result["ok"] = True
    return result


def probe_nvcc():
    code, out, _ = run_command(["nvcc", "--version"])
    return parse_nvcc_version(out) if code == 0 else None


def probe_docker(use_sdk=True):
    """Docker's /info through the docker SDK when importable (DOCKER_HOST is honoured), else the docker CLI."""
    if use_sdk:
        try:
            import docker  # noqa: F401  (optional: only when installed)
        except ImportError:
            use_sdk = False
    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if use_sdk and host.startswith("unix://") and not os.path.exists(host[len("unix://"):]):
        # the SDK would fail with "Error while fetching server API version: ('Connection aborted.', ...)"
        return {"ok": False, "error": "FileNotFoundError: no {}".format(host[len("unix://"):]), "via": "sdk"}
    if use_sdk:
        import docker

        try:
            client = docker.from_env(timeout=COMMAND_TIMEOUT_S)
            try:
                info = client.info()
            finally:
                client.close()
        except Exception as exc:  # the SDK raises DockerException, requests' errors, OSError...
            return {"ok": False, "error": _first_line(str(exc)) or type(exc).__name__, "via": "sdk"}
        return {"ok": True, "info": summarize_docker_info(info), "via": "sdk"}
    code, out, err = run_command(["docker", "info", "--format", "{{json .}}"])
    if code != 0:
        return {"ok": False, "error": _first_line(err or out) or "docker exited with {}".format(code), "via": "cli"}
    try:
        info = json.loads(out)
    except ValueError:
        return {"ok": False, "error": "docker info did not print JSON", "via": "cli"}
    if not isinstance(info, dict) or not info.get("ServerVersion"):
        # The CLI prints client-side info with ServerErrors when the daemon is unreachable.
        errors = info.get("ServerErrors") if isinstance(info, dict) else None
        return {"ok": False, "error": _first_line(" ".join(errors or [])) or "Docker daemon not reachable",
                "via": "cli"}
    return {"ok": True, "info": summarize_docker_info(info), "via": "cli"}


def run_nvidia_smi_in_container(image, use_sdk=True, visible=None):
    """(GPUs listed by `nvidia-smi -L` in a container of `image`, error); `visible` sets NVIDIA_VISIBLE_DEVICES."""
    environment = {"NVIDIA_VISIBLE_DEVICES": visible} if visible is not None else None
    if use_sdk:
        try:
            import docker
        except ImportError:
            use_sdk = False
    if use_sdk:
        try:
            client = docker.from_env(timeout=CONTAINER_TIMEOUT_S)
            try:
                output = client.containers.run(image, ["nvidia-smi", "-L"], environment=environment, remove=True,
                                               stdout=True, stderr=True)
            finally:
                client.close()
        except Exception as exc:
            return None, _first_line(str(exc)) or type(exc).__name__
        text = output.decode("utf-8", "replace") if isinstance(output, bytes) else str(output)
    else:
        env_args = ["-e", "NVIDIA_VISIBLE_DEVICES=" + visible] if visible is not None else []
        code, text, err = run_command(["docker", "run", "--rm"] + env_args + [image, "nvidia-smi", "-L"],
                                      CONTAINER_TIMEOUT_S)
        if code != 0:
            return None, _first_line(err or text) or "docker run exited with {}".format(code)
    return len([line for line in text.splitlines() if line.startswith("GPU ")]), None


def probe_gpu_container(image, use_sdk=True, clock=time.monotonic):
    """Step 1.3's `docker run IMAGE nvidia-smi` (timed: the first run pulls), then the isolation probe: a container
    given one GPU (NVIDIA_VISIBLE_DEVICES=0, as HiveD hands GPUs to pods) must list exactly one."""
    started = clock()
    gpus, error = run_nvidia_smi_in_container(image, use_sdk)
    result = {"ok": False, "gpus": gpus or 0, "error": error, "elapsed_s": round(clock() - started, 1),
              "pull_failed": bool(error) and any(word in error for word in PULL_FAILURES), "isolated": None}
    if error is None and not gpus:
        result["error"] = "no GPU listed by nvidia-smi -L inside the container"
    if result["error"]:
        return result
    result["ok"] = True
    one, error = run_nvidia_smi_in_container(image, use_sdk, visible="0")
    result["isolated"] = {"ok": one == 1, "gpus": one, "error": error}
    return result


def probe_sshd(proc_net=None):
    """True when something listens on TCP port 22 (IPv4 or IPv6), from /proc/net/tcp{,6}."""
    folder = proc_net or PROC_NET
    return any(SSH_PORT in parse_listening_ports(read_text(os.path.join(folder, name))) for name in ("tcp", "tcp6"))


def probe_clock():
    """{ntp_synchronized, offset_ms, source}: timedatectl's sync state, the offset from chronyc or timesyncd."""
    code, out, _ = run_command(["timedatectl", "status"])
    clock = {"ntp_synchronized": parse_timedatectl(out) if code == 0 else None, "offset_ms": None, "source": None}
    for argv in (["chronyc", "tracking"], ["timedatectl", "timesync-status"]):
        code, out, _ = run_command(argv)
        offset = parse_clock_offset_ms(out) if code == 0 else None
        if offset is not None:
            clock["offset_ms"], clock["source"] = offset, argv[0]
            break
    return clock


def read_text(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return ""


def primary_ip():
    """The address of the interface that routes outwards (a UDP connect sends no packet)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.connect(("192.0.2.1", 9))
        return sock.getsockname()[0]
    except OSError:
        try:
            return socket.gethostbyname(socket.gethostname())
        except OSError:
            return None
    finally:
        sock.close()


def probe_linux_user(user):
    """(exists, in the sudo group)."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return False, False
    try:
        sudo = grp.getgrnam("sudo")
    except KeyError:
        return True, False
    return True, user in sudo.gr_mem or entry.pw_gid == sudo.gr_gid


def _first_line(text):
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


# ---------------------------------------------------------------- the checks


def _check(check_id, ok, zh, en, fix_key=None, severity="error", fix_args=None):
    fix = None
    if ok is not True and fix_key:
        fix_zh, fix_en = FIXES[fix_key]
        for key, value in (fix_args or {}).items():
            fix_zh = fix_zh.replace("{" + key + "}", value)
            fix_en = fix_en.replace("{" + key + "}", value)
        fix = {"zh": fix_zh, "en": fix_en}
    return {"id": check_id, "ok": ok, "severity": severity, "message": {"zh": zh, "en": en}, "fix": fix}


def _skip(check_id, role):
    return _check(check_id, None, "{} 不需要 GPU：未检查".format(role), "a {} needs no GPU: not checked".format(role),
                  severity="warning")


def build_checks(facts, options):
    """The checks and their outcomes from the probed facts (pure)."""
    checks = []
    role = options.get("role")
    needs_gpu = role in GPU_ROLES
    docker_probe = facts["docker"]
    if docker_probe["ok"]:
        info = docker_probe["info"]
        checks.append(_check("docker", True, "Docker Engine 可用，版本 {}".format(info["version"]),
                             "Docker Engine reachable, version {}".format(info["version"])))
    if docker_probe["ok"] and needs_gpu:  # the nvidia runtime matters where GPU containers run
        runtime = info["default_runtime"] or "?"
        has_nvidia = "nvidia" in info["runtimes"]
        checks.append(_check(
            "nvidia-runtime", has_nvidia,
            "nvidia 运行时已注册" if has_nvidia else "Docker 没有 nvidia 运行时（已注册：{}）".format(
                ", ".join(info["runtimes"]) or "无"),
            "the nvidia runtime is registered" if has_nvidia else "Docker has no nvidia runtime (registered: {})".format(
                ", ".join(info["runtimes"]) or "none"),
            "nvidia-runtime"))
        is_default = runtime == "nvidia"
        checks.append(_check(
            "default-runtime", is_default,
            "Default Runtime: {}".format(runtime) + ("" if is_default else "（应为 nvidia）"),
            "Default Runtime: {}".format(runtime) + ("" if is_default else " (must be nvidia)"),
            "default-runtime"))
    if not docker_probe["ok"]:
        plain = explain_docker_error(docker_probe["error"])
        zh, en = plain or (docker_probe["error"], docker_probe["error"])
        checks.append(_check("docker", False, "无法连接 Docker Engine：{}".format(zh),
                             "Docker Engine not reachable: {}".format(en), "docker"))
    checks += _gpu_checks(facts, options) if needs_gpu else [_skip(i, role) for i in ("nvidia-smi", "gpu")]
    checks += _machine_checks(facts, options)
    return checks


def _gpu_checks(facts, options):
    checks = []
    gpu_probe = facts["nvidia_smi"]
    if gpu_probe["ok"]:
        checks.append(_check(
            "nvidia-smi", True,
            "驱动 {}，CUDA {}".format(gpu_probe["driver_version"], gpu_probe["cuda_version"]),
            "driver {}, CUDA {}".format(gpu_probe["driver_version"], gpu_probe["cuda_version"])))
    else:
        checks.append(_check("nvidia-smi", False, "nvidia-smi 不可用：{}".format(gpu_probe["error"]),
                             "nvidia-smi failed: {}".format(gpu_probe["error"]), "nvidia-smi"))
    count = len(gpu_probe["gpus"])
    checks.append(_check("gpu", count > 0, "可见 GPU：{} 块".format(count), "visible GPUs: {}".format(count), "gpu"))
    container = facts.get("gpu_container")
    image = options.get("cuda_image") or DEFAULT_CUDA_IMAGE
    if container is None:
        checks.append(_check(
            "gpu-container", None,
            "未检查容器内 GPU（加 --gpu-container 运行 `docker run {} nvidia-smi`，会拉取镜像）".format(image),
            "GPU in a container not checked (add --gpu-container to run `docker run {} nvidia-smi`; pulls the "
            "image)".format(image), severity="warning"))
    elif container["ok"]:
        checks.append(_check("gpu-container", True, "容器内可见 {} 块 GPU（{}）".format(container["gpus"], image),
                             "{} GPU(s) visible in a container ({})".format(container["gpus"], image)))
    else:
        checks.append(_check("gpu-container", False, "容器内看不到 GPU：{}".format(container["error"]),
                             "no GPU in a container: {}".format(container["error"]), "gpu-container",
                             fix_args={"image": image}))
    if container is not None:
        checks += _container_checks(container, image, facts["docker"].get("info") or {})
    return checks


def _container_checks(container, image, docker_info):
    """The isolation probe's outcome, and a registry-mirror hint when the pull failed or was slow."""
    checks = []
    isolated = container.get("isolated")
    if isolated is not None:
        seen = isolated["error"] or "{} GPU(s)".format(isolated["gpus"])
        checks.append(_check(
            "gpu-isolation", isolated["ok"],
            "只分配 GPU 0 的容器看到：{}".format(seen) + ("" if isolated["ok"] else "（应为 1 块）"),
            "a container given GPU 0 only sees: {}".format(seen) + ("" if isolated["ok"] else " (must be 1)"),
            "gpu-isolation"))
    slow = container.get("elapsed_s", 0) > SLOW_PULL_S
    if container.get("pull_failed") or slow:
        mirrors = ", ".join(docker_info.get("registry_mirrors") or [])
        what_zh = "镜像拉取失败" if container.get("pull_failed") else "第一次运行用了 {} 秒".format(container["elapsed_s"])
        what_en = "the image pull failed" if container.get("pull_failed") else "the first run took {} s".format(
            container["elapsed_s"])
        checks.append(_check("registry-mirror", False, "{}；已配置的镜像站：{}".format(what_zh, mirrors or "无"),
                             "{}; registry mirrors configured: {}".format(what_en, mirrors or "none"), "registry-mirror",
                             severity="warning", fix_args={"image": image}))
    return checks


def _machine_checks(facts, options):
    """What every machine needs whatever its role: OS, memory, the Linux user, sshd, a synchronized clock."""
    checks = []
    role = options.get("role")
    os_fields = facts["os_release"]
    os_name = os_fields.get("PRETTY_NAME") or platform.platform()
    tested = os_fields.get("ID") == "ubuntu" and os_fields.get("VERSION_ID") in ("16.04", "18.04")
    checks.append(_check("os", tested, "操作系统：{}".format(os_name), "operating system: {}".format(os_name),
                         "os", severity="warning"))
    need_mb = MIN_MEMORY_MB.get(role or "")
    if need_mb and facts.get("memory_available_mb") is not None:
        have = facts["memory_available_mb"]
        checks.append(_check("memory", have >= need_mb, "空闲内存 {} MB（需要 >= {} MB）".format(have, need_mb),
                             "free memory {} MB (needs >= {} MB)".format(have, need_mb), "memory"))
    user = options.get("linux_user")
    if user:
        exists, sudo = facts.get("linux_user") or (False, False)
        checks.append(_check(
            "linux-user", exists and sudo,
            "Linux 用户 {}：{}".format(user, "存在且在 sudo 组" if exists and sudo else (
                "不在 sudo 组" if exists else "不存在")),
            "Linux user {}: {}".format(user, "exists, in the sudo group" if exists and sudo else (
                "not in the sudo group" if exists else "missing")),
            "linux-user", fix_args={"user": user}))
    listening = facts.get("sshd")
    checks.append(_check(
        "sshd", listening, "sshd 在 22 端口监听" if listening else "22 端口上没有 sshd 在监听",
        "sshd listens on port 22" if listening else "nothing listens on port 22 (sshd)", "sshd",
        severity="warning" if role == "dev-box" else "error", fix_args={"user": user or "openpai"}))
    clock = facts.get("clock") or {}
    synced, offset = clock.get("ntp_synchronized"), clock.get("offset_ms")
    state_zh = {True: "已同步", False: "未同步", None: "未知（没有 timedatectl）"}[synced]
    state_en = {True: "synchronized", False: "not synchronized", None: "unknown (no timedatectl)"}[synced]
    offset_zh, offset_en = ("", "") if offset is None else ("，偏差 {} ms".format(offset), ", offset {} ms".format(offset))
    checks.append(_check("ntp", synced, "时钟 NTP 同步：{}{}".format(state_zh, offset_zh),
                         "clock NTP sync: {}{}".format(state_en, offset_en), "ntp", severity="warning"))
    return checks


def collect_facts(options):
    facts = {
        "docker": probe_docker(use_sdk=not options.get("no_sdk")),
        "nvidia_smi": probe_gpus(),
        "nvcc_version": probe_nvcc(),
        "os_release": parse_os_release(read_text(options.get("os_release") or "/etc/os-release")),
        "memory_available_mb": parse_meminfo_available_mb(read_text("/proc/meminfo")),
        "hostname": socket.gethostname(),
        "ip": options.get("ip") or primary_ip(),
        "vcpus": os.cpu_count(),
        "gpu_container": None,
        "linux_user": probe_linux_user(options["linux_user"]) if options.get("linux_user") else None,
        "sshd": probe_sshd(options.get("proc_net")),
        "clock": probe_clock(),
    }
    if options.get("gpu_container") and options.get("role") in GPU_ROLES:
        image = options.get("cuda_image") or DEFAULT_CUDA_IMAGE
        facts["gpu_container"] = probe_gpu_container(image, use_sdk=not options.get("no_sdk"))
    return facts


def build_record(facts, options, now=None):
    """The environment record (configs/schemas/environment-record.schema.json) from the probed facts (pure)."""
    gpus = facts["nvidia_smi"]["gpus"]
    names = sorted(set(g["name"] for g in gpus if g.get("name")))
    docker_info = facts["docker"].get("info") or {}
    os_fields = facts["os_release"]
    when = now or datetime.datetime.now(datetime.timezone.utc)
    return {
        "record_version": RECORD_VERSION,
        "member": options.get("member") or facts["hostname"],
        "role": options.get("role"),
        "hostname": facts["hostname"],
        "ip": facts["ip"],
        "os": os_fields.get("PRETTY_NAME") or platform.platform(),
        "vcpus": facts["vcpus"],
        "gpus": {
            "model": ", ".join(names) if names else None,
            "count": len(gpus),
            "memory_mib": gpus[0].get("memory_mib") if gpus else None,
        },
        "driver_version": facts["nvidia_smi"]["driver_version"],
        "cuda_version": facts["nvidia_smi"]["cuda_version"],
        "nvcc_version": facts.get("nvcc_version"),
        "docker_version": docker_info.get("version"),
        "docker_default_runtime": docker_info.get("default_runtime"),
        "docker_registry_mirrors": docker_info.get("registry_mirrors") or [],
        "clock": facts.get("clock") or {"ntp_synchronized": None, "offset_ms": None, "source": None},
        "openpai_version": options.get("openpai_version"),
        "checks": build_checks(facts, options),
        "recorded_at": when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "tool": {"name": TOOL_NAME, "version": TOOL_VERSION},
    }


def failed_checks(record):
    return [c for c in record["checks"] if c["ok"] is False and c["severity"] == "error"]


def render_text(record, lang):
    marks = {True: "OK  ", False: "FAIL", None: "SKIP"}
    lines = []
    title = "本机环境检查" if lang == "zh" else "Machine check"
    lines.append("{}: {} ({}, {})".format(title, record["member"], record["hostname"], record["ip"]))
    for check in record["checks"]:
        mark = marks[check["ok"]]
        if check["ok"] is False and check["severity"] == "warning":
            mark = "WARN"
        lines.append("  [{}] {:<15} {}".format(mark, check["id"], check["message"][lang]))
        if check["fix"]:
            lines.append("         -> " + check["fix"][lang])
    failed = failed_checks(record)
    if lang == "zh":
        lines.append("结果：{}".format("全部通过" if not failed else "{} 项未通过".format(len(failed))))
    else:
        lines.append("result: {}".format("all checks passed" if not failed else "{} check(s) failed".format(
            len(failed))))
    return "\n".join(lines)


def write_record(record, path):
    """Write the record whole or not at all."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        if not os.path.isdir(folder):
            os.makedirs(folder)
        tmp = path + ".tmp-{}".format(os.getpid())
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(record, handle, ensure_ascii=False, indent=2)
            handle.write("\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise EnvCheckError("cannot write {}: {}".format(path, exc.strerror or exc)) from None


# ---------------------------------------------------------------- command line


def add_arguments(parser):
    parser.add_argument("--member", help="the member's name as in the group inventory (default: the hostname)")
    parser.add_argument("--role", choices=("worker", "master", "dev-box"),
                        help="this machine's role: a master or dev-box needs no GPU; adds the memory check")
    parser.add_argument("--ip", help="this machine's IP as the cluster sees it (default: the outward interface's)")
    parser.add_argument("--gpu-container", action="store_true",
                        help="also run nvidia-smi in a CUDA container (pulls --cuda-image), then check that a "
                             "container given one GPU sees exactly one")
    parser.add_argument("--cuda-image", default=DEFAULT_CUDA_IMAGE,
                        help="image for --gpu-container (default: {})".format(DEFAULT_CUDA_IMAGE))
    parser.add_argument("--linux-user", default="openpai",
                        help="the Linux user of step 1.4 to look for ('' to skip; default: openpai)")
    parser.add_argument("--openpai-version", help="the OpenPAI version deployed, when known (e.g. v1.2.0)")
    parser.add_argument("--no-sdk", action="store_true", help="use the docker CLI even when the docker SDK is installed")
    parser.add_argument("--os-release", default="/etc/os-release", help=argparse.SUPPRESS)
    parser.add_argument("--proc-net", default=PROC_NET, help=argparse.SUPPRESS)
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument("--out", metavar="PATH",
                        help="where to write the record (default: env/<member>.json; '-' to write none)")
    parser.add_argument("--lang", choices=("zh", "en"), default="zh", help="language of the text (default: zh)")


def options_from_args(args):
    return {
        "member": args.member,
        "role": args.role,
        "ip": args.ip,
        "gpu_container": args.gpu_container,
        "cuda_image": args.cuda_image,
        "linux_user": args.linux_user,
        "openpai_version": args.openpai_version,
        "no_sdk": args.no_sdk,
        "os_release": args.os_release,
        "proc_net": args.proc_net,
    }


def execute(args, stdout=None):
    """Probe, judge, write and print; returns the exit status (0 all passed, 1 a check failed)."""
    stdout = stdout or sys.stdout
    options = options_from_args(args)
    record = build_record(collect_facts(options), options)
    out = args.out or os.path.join("env", "{}.json".format(_safe_name(record["member"])))
    if out != "-":
        write_record(record, out)
    if args.format == "json":
        stdout.write(json.dumps(record, ensure_ascii=False, indent=2) + "\n")
    else:
        stdout.write(render_text(record, args.lang) + "\n")
        if out != "-":
            stdout.write(("记录已写入 " if args.lang == "zh" else "record written to ") + out + "\n")
    return 1 if failed_checks(record) else 0


def _safe_name(name):
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "member"


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="00_check_env.py",
        description="Check this machine for the lab (manual step 1) and write its environment record. / "
                    "检查本机是否满足实验手册第 1 步的要求，并写出环境记录。",
        epilog="examples:\n  python3 labs/00_check_env.py --member Carol --role worker\n"
               "  sudo python3 labs/00_check_env.py --member Carol --role worker --gpu-container --format json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return execute(args)
    except EnvCheckError as exc:
        sys.stderr.write("00_check_env.py: error: {}\n".format(exc))
        return 2
    except KeyboardInterrupt:
        return 130

