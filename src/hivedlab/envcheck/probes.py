"""Probing (I/O): run nvidia-smi, nvcc, docker, timedatectl and chronyc, read /proc and /etc, and gather the facts."""

# Python 3.6 code keeps str.format (tests/cli/test_env_python36.py refuses f-strings in it), whatever UP032 says.
# ruff: noqa: UP032

import grp
import json
import os
import pwd
import shutil
import socket
import subprocess
import time
from typing import Any, Callable, List, Optional, Tuple

from .parsing import (
    QUERY_GPU_FIELDS,
    parse_clock_offset_ms,
    parse_listening_ports,
    parse_meminfo_available_mb,
    parse_mib,
    parse_nvcc_version,
    parse_nvidia_smi_xml,
    parse_os_release,
    parse_query_gpu_csv,
    parse_timedatectl,
    summarize_docker_info,
)
from .shapes import DEFAULT_CUDA_IMAGE, GPU_ROLES, Facts, Options, Probe

COMMAND_TIMEOUT_S = 60
CONTAINER_TIMEOUT_S = 600
SSH_PORT = 22
PROC_NET = "/proc/net"
# words in a failed `docker run` that mean the image could not be pulled
PULL_FAILURES = ("pull", "manifest", "TLS handshake", "i/o timeout", "toomanyrequests", "Client.Timeout",
                 "request canceled", "no such host", "connection reset")


def run_command(argv: List[str], timeout: float = COMMAND_TIMEOUT_S) -> Tuple[int, str, str]:
    """(exit code, stdout, stderr); exit code 127 when the program is missing, 124 on timeout."""
    if shutil.which(argv[0]) is None:
        return 127, "", "{}: command not found".format(argv[0])
    try:
        # Python 3.6's subprocess.run has neither capture_output= nor text= (3.7)
        done = subprocess.run(  # noqa: UP022
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout  # noqa: UP021
        )
    except subprocess.TimeoutExpired:
        return 124, "", "{} timed out after {} s".format(argv[0], timeout)
    except OSError as exc:
        return 126, "", "{}: {}".format(argv[0], exc)
    return done.returncode, done.stdout, done.stderr


def probe_gpus() -> Probe:
    """nvidia-smi through its machine-readable outputs: the CSV query, and the XML for the CUDA version."""
    result: Probe = {"ok": False, "error": None, "driver_version": None, "cuda_version": None, "gpus": []}
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


def probe_nvcc() -> Optional[str]:
    """The nvcc version (the CUDA toolkit), None without nvcc."""
    code, out, _ = run_command(["nvcc", "--version"])
    return parse_nvcc_version(out) if code == 0 else None


def _missing_docker_socket() -> Optional[str]:
    """The Docker socket DOCKER_HOST names (default /var/run/docker.sock) when it is a unix socket that does not
    exist: Docker is not installed or not running, and the SDK would only say "Connection aborted"."""
    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    path = host[len("unix://"):]
    return path if host.startswith("unix://") and not os.path.exists(path) else None


def _docker_sdk(use_sdk: bool) -> Tuple[Any, Optional[str]]:
    """The docker SDK module when it is wanted and installed (else None: the docker CLI is used), and, when Docker's
    unix socket is missing, why no SDK call can work (the SDK itself would fail with "Error while fetching server API
    version: ('Connection aborted.', ...)")."""
    if not use_sdk:
        return None, None
    try:
        import docker  # optional: only when installed
    except ImportError:
        return None, None
    missing = _missing_docker_socket()
    return docker, ("FileNotFoundError: no {}".format(missing) if missing else None)


def probe_docker(use_sdk: bool = True) -> Probe:
    """Docker's /info through the docker SDK when importable (DOCKER_HOST is honoured), else the docker CLI."""
    docker, unreachable = _docker_sdk(use_sdk)
    if unreachable:
        return {"ok": False, "error": unreachable, "via": "sdk"}
    if docker is not None:
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


def run_nvidia_smi_in_container(
    image: str, use_sdk: bool = True, visible: Optional[str] = None
) -> Tuple[Optional[int], Optional[str]]:
    """(GPUs listed by `nvidia-smi -L` in a container of `image`, error); `visible` sets NVIDIA_VISIBLE_DEVICES."""
    environment = {"NVIDIA_VISIBLE_DEVICES": visible} if visible is not None else None
    docker, unreachable = _docker_sdk(use_sdk)
    if unreachable:
        return None, unreachable
    if docker is not None:
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


def probe_gpu_container(image: str, use_sdk: bool = True, clock: Callable[[], float] = time.monotonic) -> Probe:
    """Step 1.3's `docker run IMAGE nvidia-smi` (timed: the first run pulls), then the isolation probe: a container
    given one GPU (NVIDIA_VISIBLE_DEVICES=0, as HiveD hands GPUs to pods) must list exactly one."""
    started = clock()
    gpus, error = run_nvidia_smi_in_container(image, use_sdk)
    result: Probe = {"ok": False, "gpus": gpus or 0, "error": error, "elapsed_s": round(clock() - started, 1),
                     "pull_failed": bool(error and any(word in error for word in PULL_FAILURES)),
                     "isolated": None}
    if error is None and not gpus:
        result["error"] = "no GPU listed by nvidia-smi -L inside the container"
    if result["error"]:
        return result
    result["ok"] = True
    one, error = run_nvidia_smi_in_container(image, use_sdk, visible="0")
    result["isolated"] = {"ok": one == 1, "gpus": one, "error": error}
    return result


def probe_sshd(proc_net: Optional[str] = None) -> bool:
    """True when something listens on TCP port 22 (IPv4 or IPv6), from /proc/net/tcp{,6}."""
    folder = proc_net or PROC_NET
    return any(SSH_PORT in parse_listening_ports(read_text(os.path.join(folder, name))) for name in ("tcp", "tcp6"))


def probe_clock() -> Probe:
    """{ntp_synchronized, offset_ms, source}: timedatectl's sync state, the offset from chronyc or timesyncd."""
    code, out, _ = run_command(["timedatectl", "status"])
    clock: Probe = {"ntp_synchronized": parse_timedatectl(out) if code == 0 else None, "offset_ms": None,
                    "source": None}
    for argv in (["chronyc", "tracking"], ["timedatectl", "timesync-status"]):
        code, out, _ = run_command(argv)
        offset = parse_clock_offset_ms(out) if code == 0 else None
        if offset is not None:
            clock["offset_ms"], clock["source"] = offset, argv[0]
            break
    return clock


def read_text(path: str) -> str:
    """The file's text, or '' when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return ""


def primary_ip() -> Optional[str]:
    """The address of the interface that routes outwards (a UDP connect sends no packet)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.connect(("192.0.2.1", 9))
        return str(sock.getsockname()[0])  # typeshed has the address as Any
    except OSError:
        try:
            return socket.gethostbyname(socket.gethostname())
        except OSError:
            return None
    finally:
        sock.close()


def probe_linux_user(user: str) -> Tuple[bool, bool]:
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


def _first_line(text: object) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


def collect_facts(options: Options) -> Facts:
    """Run every probe the options ask for."""
    facts: Facts = {
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
