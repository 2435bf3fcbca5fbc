"""The environment record (configs/schemas/environment-record.schema.json): built, printed as text, written."""

# Python 3.6 code keeps str.format (tests/cli/test_env_python36.py refuses f-strings in it), whatever UP032 says.
# ruff: noqa: UP032

import datetime
import json
import os
import platform
from typing import List, Optional

from .checks import build_checks
from .shapes import Check, EnvCheckError, Facts, Options, Record

TOOL_NAME = "hivedlab-env"
TOOL_VERSION = "0.1.0"
RECORD_VERSION = 1


def build_record(facts: Facts, options: Options, now: Optional[datetime.datetime] = None) -> Record:
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


def failed_checks(record: Record) -> List[Check]:
    """The failed checks that fail the run (a failed warning does not)."""
    return [c for c in record["checks"] if c["ok"] is False and c["severity"] == "error"]


def render_text(record: Record, lang: str) -> str:
    """The record as the text a member reads, in `lang` (zh or en)."""
    marks = {True: "OK  ", False: "FAIL", None: "SKIP"}
    lines: List[str] = []
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


def write_record(record: Record, path: str) -> None:
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
