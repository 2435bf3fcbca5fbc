"""Parsing of what the probes read (pure): nvidia-smi's CSV and XML, nvcc, /etc/os-release, /proc/meminfo,
/proc/net/tcp, timedatectl, chronyc, and Docker's /info and error messages."""

# Python 3.6 code keeps str.format (tests/cli/test_env_python36.py refuses f-strings in it), whatever UP032 says.
# ruff: noqa: UP032

import re
import xml.etree.ElementTree as ElementTree
from typing import Any, Dict, List, Optional, Set, Tuple

QUERY_GPU_FIELDS = "index,name,uuid,driver_version,memory.total,pci.bus_id"


def parse_query_gpu_csv(text: str) -> List[Dict[str, str]]:
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
    result: List[Dict[str, str]] = []
    for line in rows:
        cells = [cell.strip() for cell in line.split(",")]
        result.append(dict(zip(header, cells)))
    return result


def _field_name(cell: str) -> str:
    # "memory.total [MiB]" -> "memory.total"
    return cell.strip().split(" [")[0].strip()


def parse_mib(value: object) -> Optional[int]:
    """'143771 MiB' -> 143771; None when it is not a number (e.g. '[N/A]')."""
    try:
        return int(str(value).split()[0])
    except (ValueError, IndexError):
        return None


def parse_nvidia_smi_xml(text: str) -> Dict[str, Any]:
    """Driver and CUDA versions and the GPUs from `nvidia-smi -q -x`."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise ValueError("nvidia-smi -q -x did not print valid XML: {}".format(exc)) from None
    gpus: List[Dict[str, Any]] = []
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


def parse_nvcc_version(text: str) -> Optional[str]:
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


def parse_os_release(text: str) -> Dict[str, str]:
    """Fields of /etc/os-release as a dict (quotes removed)."""
    fields: Dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        fields[key.strip()] = value.strip().strip('"').strip("'")
    return fields


def parse_meminfo_available_mb(text: str) -> Optional[int]:
    """MemAvailable from /proc/meminfo in MB (10^6 bytes, as requirement.sh's `free -m` is close enough)."""
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            try:
                return int(line.split()[1]) * 1024 // 1000000
            except (ValueError, IndexError):
                return None
    return None


def explain_docker_error(error: object) -> Optional[Tuple[str, str]]:
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


def parse_listening_ports(text: str) -> Set[int]:
    """Local TCP ports in state LISTEN (0A) from /proc/net/tcp or tcp6."""
    ports: Set[int] = set()
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[3] == "0A" and ":" in fields[1]:
            try:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
            except ValueError:
                continue
    return ports


def parse_timedatectl(text: str) -> Optional[bool]:
    """'System clock synchronized: yes' (18.04) or 'NTP synchronized: yes' (16.04) -> True/False; else None."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("System clock synchronized", "NTP synchronized"):
            return value.strip() == "yes"
    return None


def parse_clock_offset_ms(text: str) -> Optional[float]:
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


def summarize_docker_info(info: Dict[str, Any]) -> Dict[str, Any]:
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
