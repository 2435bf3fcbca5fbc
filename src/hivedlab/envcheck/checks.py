"""The checks (pure): each probed fact judged, with the manual's fix for each failed check."""

# Python 3.6 code keeps str.format (tests/cli/test_env_python36.py refuses f-strings in it), whatever UP032 says.
# ruff: noqa: UP032

import platform
from typing import Any, Dict, List, Optional, Tuple

from .parsing import explain_docker_error
from .shapes import DEFAULT_CUDA_IMAGE, GPU_ROLES, Check, Facts, Options, Probe

# docs/openpai-model.md#quick-start-inputs (requirement.sh): free memory on workers >= 16000 MB, on the master
# >= 40000 MB.
MIN_MEMORY_MB = {"worker": 16000, "master": 40000}
SLOW_PULL_S = 120  # a first `docker run` of the small CUDA base image slower than this: pulls need a mirror

DAEMON_JSON = (
    '{"default-runtime": "nvidia", "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}}}'
)

# check id -> (zh fix, en fix): the manual's commands (step 1) for each failed check.
FIXES: Dict[str, Tuple[str, str]] = {
    "docker": (
        "按实验手册 1.1 安装 Docker Engine（https://docs.docker.com/engine/install/ubuntu/），然后 "
        "`sudo systemctl start docker`；无 root 时用 `sudo usermod -aG docker $USER` 后重新登录，"
        "或用 sudo 运行本检查。",
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
        "给定 NVIDIA_VISIBLE_DEVICES=0 的容器应只看到一块 GPU：确认 Default Runtime 为 nvidia、"
        "nvidia-container-runtime 已安装，且 /etc/nvidia-container-runtime/config.toml 没有改动 "
        "accept-nvidia-visible-devices-envvar-when-unprivileged。",
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


def _check(check_id: str, ok: Optional[bool], zh: str, en: str, fix_key: Optional[str] = None, severity: str = "error",
           fix_args: Optional[Dict[str, str]] = None) -> Check:
    """One check: passed (True), failed (False) or not checked (None), in both languages, with the fix unless passed."""
    fix: Optional[Dict[str, str]] = None
    if ok is not True and fix_key:
        fix_zh, fix_en = FIXES[fix_key]
        for key, value in (fix_args or {}).items():
            fix_zh = fix_zh.replace("{" + key + "}", value)
            fix_en = fix_en.replace("{" + key + "}", value)
        fix = {"zh": fix_zh, "en": fix_en}
    return {"id": check_id, "ok": ok, "severity": severity, "message": {"zh": zh, "en": en}, "fix": fix}


def _skip(check_id: str, role: Optional[str]) -> Check:
    """A GPU check not made: the role needs no GPU."""
    return _check(check_id, None, "{} 不需要 GPU：未检查".format(role), "a {} needs no GPU: not checked".format(role),
                  severity="warning")


def build_checks(facts: Facts, options: Options) -> List[Check]:
    """The checks and their outcomes from the probed facts (pure)."""
    checks: List[Check] = []
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
            "the nvidia runtime is registered" if has_nvidia else
            "Docker has no nvidia runtime (registered: {})".format(", ".join(info["runtimes"]) or "none"),
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


def _gpu_checks(facts: Facts, options: Options) -> List[Check]:
    """nvidia-smi, the GPUs it lists, and a GPU in a container (--gpu-container)."""
    checks: List[Check] = []
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
    elif not facts["docker"]["ok"]:  # no container can run: say why in plain words, not the SDK's error
        checks.append(_check("gpu-container", False,
                             "无法在容器内检查 GPU：Docker Engine 不可用（见 docker 检查）",
                             "GPU in a container not checked: Docker Engine is not reachable (see the docker check)",
                             "docker"))
    else:
        checks.append(_check("gpu-container", False, "容器内看不到 GPU：{}".format(container["error"]),
                             "no GPU in a container: {}".format(container["error"]), "gpu-container",
                             fix_args={"image": image}))
    if container is not None and facts["docker"]["ok"]:
        checks += _container_checks(container, image, facts["docker"].get("info") or {})
    return checks


def _container_checks(container: Probe, image: str, docker_info: Dict[str, Any]) -> List[Check]:
    """The isolation probe's outcome, and a registry-mirror hint when the pull failed or was slow."""
    checks: List[Check] = []
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
        what_zh = "镜像拉取失败" if container.get("pull_failed") else "第一次运行用了 {} 秒".format(
            container["elapsed_s"])
        what_en = "the image pull failed" if container.get("pull_failed") else "the first run took {} s".format(
            container["elapsed_s"])
        checks.append(_check("registry-mirror", False, "{}；已配置的镜像站：{}".format(what_zh, mirrors or "无"),
                             "{}; registry mirrors configured: {}".format(what_en, mirrors or "none"),
                             "registry-mirror", severity="warning", fix_args={"image": image}))
    return checks


def _machine_checks(facts: Facts, options: Options) -> List[Check]:
    """What every machine needs whatever its role: OS, memory, the Linux user, sshd, a synchronized clock."""
    checks: List[Check] = []
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
    offset_zh, offset_en = ("", "") if offset is None else (
        "，偏差 {} ms".format(offset), ", offset {} ms".format(offset))
    checks.append(_check("ntp", synced, "时钟 NTP 同步：{}{}".format(state_zh, offset_zh),
                         "clock NTP sync: {}{}".format(state_en, offset_en), "ntp", severity="warning"))
    return checks
