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
from typing import Any

from hivedlab.basics.text import Text
from hivedlab.evidence import EMULATED_CONTAINER_PREFIX, Record
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


def emulated_containers(records: Iterable[Record]) -> int:
    """How many pods of these records ran in a rehearsal cluster's emulated containers (their container ids say
    `emulated://`, docs/checker.md#rehearsal-cluster-evidence-grading): the real control plane ran them, but no GPU
    did."""
    found = set()
    for record in records:
        obj = record.object
        if record.resource == "pods" and isinstance(obj, dict) and any(
                cid.startswith(EMULATED_CONTAINER_PREFIX) for cid in _container_ids(obj)):
            found.add(str((obj.get("metadata") or {}).get("uid")))
    return len(found)


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


def real_identity(records: Sequence[Record]) -> frozenset[tuple[str, str]]:
    """What makes a real-cluster log unique (compared across groups by `copies.flag_copies`): its final hash, its
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


def sim_inputs(inventory: Any, record: RunRecord | None) -> frozenset[tuple[str, str]]:
    """A simulator run's inputs as one key: the inventory read from the group's folder and the seed."""
    if inventory is None or record is None or record.seed is None:
        return frozenset()
    digest = hashlib.sha256(f"{inventory!r}\n{record.seed!r}".encode()).hexdigest()
    return frozenset({("inputs", digest)})
