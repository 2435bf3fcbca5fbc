"""Helpers for simulator tests: a cluster on a temp evidence log, job submission from the shipped job files,
and a readable digest of what the log says happened."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hivedlab.backends.sim import SimCluster
from hivedlab.backends.sim.settings import SimSettings
from hivedlab.basics.resources import JOBS
from hivedlab.evidence import EvidenceWriter
from hivedlab.lab_group.inventory import load_inventory
from hivedlab.lab_group.layouts import render_hived_config

INVENTORY = load_inventory()
IPS = {m.hostname: m.ip for m in INVENTORY.members if m.hostname}
OPEN_WRITERS: list[EvidenceWriter] = []  # closed after each test (tests/conftest.py)


def job_text(file: str, name: str, *edits: tuple[str, str]) -> str:
    """A shipped job file renamed, with (old, new) text edits, each of which must apply."""
    text = (JOBS / file).read_text(encoding="utf-8")
    text = re.sub(r"^name:.*$", f"name: {name}", text, count=1, flags=re.MULTILINE)
    for old, new in edits:
        assert old in text, f"{old!r} is not in {file}"
        text = text.replace(old, new)
    return text


def new_cluster(
    log: Path, config: str, seed: int = 1, settings: SimSettings | None = None
) -> tuple[SimCluster, EvidenceWriter]:
    writer = EvidenceWriter(log, "sim")
    OPEN_WRITERS.append(writer)
    sim = SimCluster(writer, seed, settings, node_ips=IPS)
    sim.switch_config(config, render_hived_config(config, INVENTORY))
    return sim, writer


@dataclass(frozen=True)
class Seen:
    seq: int
    time: str
    watch: str
    resource: str
    obj: dict[str, Any]

    @property
    def name(self) -> str:
        if self.resource == "events":
            return self.obj["involvedObject"]["name"]
        return self.obj["metadata"]["name"]


def run_until_idle(sim: SimCluster, limit_s: float = 86_400.0) -> None:
    """Process every pending event; stops at `limit_s` virtual seconds."""
    sim.advance_until(lambda: sim.queue.next_time() is None, limit_s)


def read_log(path: Path) -> list[Seen]:
    seen = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["kind"] == "object":
            w = rec["watch"]
            seen.append(Seen(rec["seq"], rec["time"], w["type"], w["resource"], w["object"]))
    return seen


def events(log: list[Seen], reason: str, pod_prefix: str = "") -> list[Seen]:
    """The distinct events (their ADDED records); a repeat only bumps an event's count (see `event_counts`)."""
    return [s for s in log if s.resource == "events" and s.watch == "ADDED" and s.obj["reason"] == reason
            and s.name.startswith(pod_prefix)]


def event_counts(log: list[Seen], reason: str, pod_prefix: str = "") -> dict[str, int]:
    """Event name -> its last `count`."""
    return {s.obj["metadata"]["name"]: s.obj["count"] for s in log if s.resource == "events"
            and s.obj["reason"] == reason and s.name.startswith(pod_prefix)}


def binds(log: list[Seen], pod_prefix: str = "") -> list[tuple[str, str, str]]:
    """(time, pod name, node) of every bind (first time a pod uid shows a node), in log order."""
    out, bound = [], set()
    for s in log:
        uid = s.obj.get("metadata", {}).get("uid")
        if (
            s.resource == "pods"
            and s.name.startswith(pod_prefix)
            and uid not in bound
            and s.obj["spec"].get("nodeName")
        ):
            bound.add(uid)
            out.append((s.time, s.name, s.obj["spec"]["nodeName"]))
    return out


def waits(log: list[Seen], pod_prefix: str = "") -> list[str]:
    marker = "Pod is waiting for preemptible or free resource to appear: "
    return [
        e.obj["message"].split(marker, 1)[1].split(",")[0].rstrip(".")
        for e in events(log, "FailedScheduling", pod_prefix)
        if marker in e.obj["message"]
    ]


def framework_states(log: list[Seen], framework: str) -> list[tuple[str, int]]:
    return [
        (s.obj["status"]["state"], s.obj["status"]["attemptStatus"]["id"])
        for s in log
        if s.resource == "frameworks" and s.name == framework
    ]
