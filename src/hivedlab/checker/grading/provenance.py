"""Provenance: evidence that claims a real cluster must not carry the simulator's fingerprints.

The hash chain is tamper-evident, not tamper-proof: anyone can relabel a simulator run (`source: sim` -> `k8s`,
run.json's cluster -> `pai` or `k8s`) and recompute the chain. The same checks hold for both kinds of real cluster:
on OpenPAI the objects are pods and Frameworks, on a plain Kubernetes cluster pods, TFJobs and PodGroups. What a
relabelling cannot easily hide is what only the simulator produces, each a fact a real cluster never shows:

- object uids that are name-based (UUID version 5); Kubernetes gives every object a random uid (version 4);
- container ids derived from the pod uid; the container runtime picks them independently;
- a log that starts at the simulator's fixed virtual clock (2026-01-01T08:00:00Z,
  `src/hivedlab/backends/sim/settings.py`).

Such a log is scored as simulator evidence and flagged for the TA (docs/checker.md, "Provenance").
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hivedlab.basics.text import Text
from hivedlab.evidence import Record, parse_time
from hivedlab.models.hived.annotations import LEAF_CELL_ISOLATION
from hivedlab.rundir import RunRecord

REAL_CLUSTERS = ("pai", "k8s")  # run.json's cluster of a real run: OpenPAI + HiveD, or plain Kubernetes + Kubeflow
OWNED = ("pods", "frameworks", "tfjobs", "podgroups")  # the resources whose uids the cluster makes (events: no)
# the simulator's default virtual start (src/hivedlab/backends/sim/settings.py `start`)
SIM_START = "2026-01-01T08:00:00"


def _uid_version(uid: Any) -> int | None:
    try:
        return uuid.UUID(str(uid)).version
    except ValueError:
        return None


def _container_ids(obj: dict[str, Any]) -> Iterable[str]:
    for status in (obj.get("status") or {}).get("containerStatuses") or []:
        if not isinstance(status, dict):
            continue
        if isinstance(status.get("containerID"), str):
            yield status["containerID"]
        for state in (status.get("state") or {}).values():
            if isinstance(state, dict) and isinstance(state.get("containerID"), str):
                yield state["containerID"]


def simulator_signs(records: Iterable[Record]) -> list[Text]:
    """What in these records only the simulator produces ([] for a log a real cluster could have written)."""
    first_time: str | None = None
    uids: set[str] = set()
    name_based: set[str] = set()
    derived: set[str] = set()
    for record in records:
        first_time = record.time if first_time is None else first_time
        obj = record.object
        if not isinstance(obj, dict) or record.resource not in OWNED:
            continue
        uid = (obj.get("metadata") or {}).get("uid")
        if not isinstance(uid, str) or not uid:
            continue
        uids.add(uid)
        if _uid_version(uid) == 5:
            name_based.add(uid)
        compact = uid.replace("-", "")
        if record.resource == "pods" and any(cid.endswith(compact) for cid in _container_ids(obj)):
            derived.add(uid)
    signs = []
    if name_based:
        signs.append(Text(f"{len(name_based)}/{len(uids)} 个对象 uid 是按名字生成的（UUID 第 5 版，模拟集群的做法；"
                          "Kubernetes 的 uid 是随机的）",
                          f"{len(name_based)} of {len(uids)} object uids are name-based (UUID version 5, "
                          "as the simulator makes them; Kubernetes makes random ones)"))
    if derived:
        signs.append(Text(f"{len(derived)} 个 Pod 的容器 ID 由 Pod uid 得出（模拟集群的做法）",
                          f"{len(derived)} pod(s) have container ids made from their pod uid (as the simulator does)"))
    if first_time is not None and first_time.startswith(SIM_START):
        signs.append(Text(f"日志从模拟集群的固定虚拟时钟 {SIM_START}Z 开始",
                          f"the log starts at the simulator's fixed virtual clock {SIM_START}Z"))
    return signs


Identity = frozenset[tuple[str, str, str]]  # (kind, value, where in the group's folder), compared across groups


def real_identity(records: Sequence[Record]) -> frozenset[tuple[str, str]]:
    """What makes a real-cluster log unique (compared across groups by `copies.copy_clusters`): its final hash, its
    objects' uids, its container ids."""
    found: set[tuple[str, str]] = set()
    if records:
        found.add(("log", records[-1].hash))
    for record in records:
        obj = record.object
        if not isinstance(obj, dict) or record.resource not in OWNED:
            continue
        uid = (obj.get("metadata") or {}).get("uid")
        if isinstance(uid, str) and uid:
            found.add(("uid", uid))
        for status in (obj.get("status") or {}).get("containerStatuses") or []:
            cid = status.get("containerID") if isinstance(status, dict) else None
            if isinstance(cid, str) and cid:
                found.add(("container", cid))
    return frozenset(found)


def log_identity(records: Sequence[Record], file: str, real: bool) -> Identity:
    """One log's values compared across groups: its content fingerprint (where: the records it covers), and for a
    real-cluster log its unique values too."""
    found = {(kind, value, file) for kind, value in real_identity(records)} if real else set()
    fingerprint = content_fingerprint(records)
    if fingerprint is not None:
        found.add(("content", fingerprint.digest, f"{file}#seq={fingerprint.first_seq}-{fingerprint.last_seq}"))
    return frozenset(found)


def sim_inputs(inventory: Any, record: RunRecord | None, where: str) -> Identity:
    """A simulator run's inputs as one key: the inventory read from the group's folder and the seed."""
    if inventory is None or record is None or record.seed is None:
        return frozenset()
    digest = hashlib.sha256(f"{inventory!r}\n{record.seed!r}".encode()).hexdigest()
    return frozenset({("inputs", digest, where)})


@dataclass(frozen=True)
class Fingerprint:
    """What a renaming cannot change in one evidence log (`content_fingerprint`), and the records it covers."""

    digest: str
    records: int
    first_seq: int
    last_seq: int


class _Names:
    """Names, users, nodes and uids replaced by their order of first appearance in the log: n0, n1, …"""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def __call__(self, value: Any) -> str:
        text = str(value)
        token = self.seen.get(text)
        if token is None:
            token = self.seen[text] = f"n{len(self.seen)}"
        return token


def _micros(moment: datetime | None, start: datetime | None) -> int | None:
    if moment is None or start is None:
        return None
    delta = moment - start
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _containers(status: dict[str, Any]) -> tuple[Any, ...]:
    """Each container's state and exit code: what the run did, not what it was called."""
    found: list[Any] = []
    for entry in status.get("containerStatuses") or ():
        if isinstance(entry, dict):
            for state, detail in sorted((entry.get("state") or {}).items()):
                found.append((state, detail.get("exitCode") if isinstance(detail, dict) else None))
    return tuple(found)


def _object_part(resource: str | None, obj: Any, names: _Names) -> tuple[Any, ...]:
    if not isinstance(obj, dict):
        return ()
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    if not isinstance(meta, dict) or not isinstance(status, dict):
        return ()
    head = (names(meta.get("uid")), meta.get("resourceVersion"))
    if resource == "pods":
        spec = obj.get("spec") or {}
        node = spec.get("nodeName") if isinstance(spec, dict) else None
        annotations = meta.get("annotations") or {}
        gpus = annotations.get(LEAF_CELL_ISOLATION) if isinstance(annotations, dict) else None
        return (*head, names(node) if node else None, gpus, status.get("phase"), _containers(status))
    if resource == "events":
        involved = obj.get("involvedObject")
        return (*head, obj.get("reason"), names(involved.get("uid")) if isinstance(involved, dict) else None)
    state = status.get("state")
    return (*head, state if isinstance(state, str) else status.get("phase"))


def content_fingerprint(records: Sequence[Record]) -> Fingerprint | None:
    """A log's content with everything a renaming or re-sealing can change set aside: each record's kind, time
    relative to the first record, and for an object its uid (by order of first appearance), resource version, node
    (by order), GPU indices, phase or state and containers' exits; for an action its type and status. Job, group,
    member and user names, tags, absolute times and the hash chain are left out. Two logs with the same fingerprint
    are the same run (docs/checker.md, "Copies")."""
    if not records:
        return None
    start = parse_time(records[0].time)
    names = _Names()
    rows: list[tuple[Any, ...]] = []
    for record in records:
        when = _micros(parse_time(record.time), start)
        if record.kind == "object":
            rows.append((when, record.watch_type, record.resource,
                         _object_part(record.resource, record.object, names)))
        elif isinstance(record.action, dict):
            action = record.action
            rows.append((when, action.get("type"), action.get("status"), action.get("expect")))
        else:
            rows.append((when, record.kind))
    digest = hashlib.sha256(repr(rows).encode("utf-8", "backslashreplace")).hexdigest()
    return Fingerprint(digest, len(records), records[0].seq, records[-1].seq)
