"""Small evidence logs for the grading tests, written through the real EvidenceWriter (so chains are genuine)."""

from __future__ import annotations

import copy
import hashlib
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from checker.evidence import EvidenceWriter, format_time
from checker.grading.labspec import ExpectedJob, ExperimentSpec, LabSpec

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
BIND_INFO = "hivedscheduler.microsoft.com/pod-bind-info"
ISOLATION = "hivedscheduler.microsoft.com/pod-leaf-cell-isolation"
SPEC = "hivedscheduler.microsoft.com/pod-scheduling-spec"

LOW = ExpectedJob("low", "job-config-1", "vc1", "test", (("train", 1, 1),), True)
HIGH = ExpectedJob("high", "job-config-2", "vc1", "prod", (("train", 1, 1),), True)
PRIORITY = ExperimentSpec("priority", 2, "优先级和抢占", "Priority and preemption", "two-vc", (LOW, HIGH), 2)
LAB = LabSpec((PRIORITY,))


def protocol(job: ExpectedJob, **overrides: Any) -> dict[str, Any]:
    data = {
        "protocolVersion": 2, "name": job.name, "type": "job",
        "taskRoles": {"train": {"instances": 1, "resourcePerInstance": {"cpu": 2, "memoryMB": 4096, "gpu": 1}}},
        "defaults": {"virtualCluster": job.virtual_cluster},
        "extras": {"hivedScheduler": {"jobPriorityClass": job.priority_class}},
    }
    data.update(overrides)
    return data


def pod(user: str, job: ExpectedJob, uid: str, rv: int, node: str | None = None) -> dict[str, Any]:
    framework = hashlib.md5(f"{user}~{job.name}".encode()).hexdigest()
    annotations = {SPEC: f"virtualCluster: {job.virtual_cluster}\npriority: {job.priority}\nleafCellNumber: 1\n"}
    obj: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{framework}-train-0", "namespace": "default", "uid": uid, "resourceVersion": str(rv),
                     "labels": {"userName": user, "virtualCluster": job.virtual_cluster, "type": "kube-launcher-task"},
                     "annotations": annotations},
        "spec": {"schedulerName": f"hivedscheduler-ds-{job.virtual_cluster}"},
        "status": {"phase": "Pending"},
    }
    if node:
        obj["spec"]["nodeName"] = node
        annotations[ISOLATION] = "0"
        annotations[BIND_INFO] = (f"node: {node}\nleafCellIsolation:\n- 0\ncellChain: GPU-D-NODE-POOL\n"
                                  f"affinityGroupBindInfo:\n- podPlacements:\n  - physicalNode: {node}\n"
                                  "    physicalLeafCellIndices:\n    - 0\n")
        obj["status"] = {"phase": "Running"}
    return obj


def priority_records(dan: str = "hostname-dan") -> list[tuple[str, Any]]:
    """(kind, payload) steps of a small priority run: low binds, high preempts it, high binds, low re-created."""
    steps: list[tuple[str, Any]] = [
        ("action", ("plan", {"experiment": "priority", "cluster": "sim", "seed": 1})),
        ("action", ("submit", {"user": "alice", "job_key": "low", "job_name": "job-config-1", "protocol": protocol(LOW),
                               "reply": {"status": 202}})),
        ("object", ("ADDED", "pods", pod("alice", LOW, "u-low-1", 10))),
        ("object", ("MODIFIED", "pods", pod("alice", LOW, "u-low-1", 11, dan))),
        ("action", ("submit", {"user": "alice", "job_key": "high", "job_name": "job-config-2",
                               "protocol": protocol(HIGH), "reply": {"status": 202}})),
        ("object", ("ADDED", "pods", pod("alice", HIGH, "u-high-1", 12))),
        ("object", ("DELETED", "pods", pod("alice", LOW, "u-low-1", 13, dan))),
        ("object", ("MODIFIED", "pods", pod("alice", HIGH, "u-high-1", 14, dan))),
        ("object", ("ADDED", "pods", pod("alice", LOW, "u-low-2", 15))),
        ("action", ("end", {"result": "finished"})),
    ]
    return steps


def write_log(path: Path, steps: list[tuple[str, Any]], source: str = "sim", step_s: float = 1.0) -> Path:
    with EvidenceWriter(path, source) as writer:
        for index, (kind, payload) in enumerate(steps):
            when = format_time(T0 + timedelta(seconds=index * step_s))
            if kind == "action":
                writer.write_action(payload[0], copy.deepcopy(payload[1]), when)
            else:
                writer.write_object(payload[0], payload[1], copy.deepcopy(payload[2]), when)
    return path
