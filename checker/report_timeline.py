"""An experiment's task attempts as the report and its chart need them, from the evidence log.

`checker.timeline` (the checker's timeline) is used when it is importable; until then, and for logs it cannot
read, a small reader of the raw Pod and Event objects gives the same facts: per pod uid (one task attempt,
openpai.md §3.1: a retried attempt keeps the pod name with a new uid) its node, GPU indices, run span,
FailedScheduling (waiting) span and whether a `Preempted` event hit it (openpai.md §3.4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from checker.charts import TaskAttempt
from checker.evidence import Record, parse_time, read_evidence

ISOLATION = "hivedscheduler.microsoft.com/pod-leaf-cell-isolation"


@dataclass(frozen=True)
class ExperimentTimeline:
    attempts: tuple[TaskAttempt, ...] = ()
    started: str = ""  # RFC 3339 time of the experiment's first record (chart time 0)
    end: float = 0.0  # seconds from `started` to the last record
    source: str = ""  # sim | k8s
    hived_config_text: str = ""
    jobs: dict[str, str] = field(default_factory=dict)  # framework name -> job name (from submit actions)
    problems: tuple[str, ...] = ()


@dataclass
class _Pod:
    uid: str
    name: str
    framework: str
    task: str
    first_seen: float
    node: str = ""
    gpus: tuple[int, ...] = ()
    bound: float | None = None
    start: float | None = None
    end: float | None = None
    phase: str = ""
    deleted: bool = False
    preempted: bool = False
    waiting_from: float | None = None


def _gpus(annotations: dict[str, Any]) -> tuple[int, ...]:
    raw = str(annotations.get(ISOLATION) or "")
    return tuple(int(part) for part in raw.split(",") if part.strip().isdigit())


def _seconds(t0: datetime, text: str) -> float | None:
    when = parse_time(text)
    return None if when is None else (when - t0).total_seconds()


def _observe_pod(pods: dict[str, _Pod], record: Record, now: float) -> None:
    obj = record.object or {}
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    uid = str(meta.get("uid") or meta.get("name") or "")
    if not uid:
        return
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    name = str(meta.get("name") or uid)
    pod = pods.get(uid)
    if pod is None:
        task = f"{labels.get('FC_TASKROLE_NAME', 'task')}-{labels.get('FC_TASK_INDEX', '0')}"
        pod = pods[uid] = _Pod(uid, name, str(labels.get("FC_FRAMEWORK_NAME") or name), task, now)
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    if spec.get("nodeName") and pod.bound is None:
        pod.node, pod.bound = str(spec["nodeName"]), now
    if _gpus(annotations):
        pod.gpus = _gpus(annotations)
    phase = str(status.get("phase") or "")
    running = phase == "Running" or any(
        isinstance(c, dict) and isinstance(c.get("state"), dict) and "running" in c["state"]
        for c in status.get("containerStatuses") or []
    )
    if running and pod.start is None:
        pod.start = now
    if phase in ("Succeeded", "Failed") and pod.end is None:
        pod.end, pod.phase = now, phase
    if record.watch_type == "DELETED":
        pod.deleted = True
        if pod.end is None:
            pod.end = now


def _observe_event(pods: dict[str, _Pod], record: Record, now: float) -> None:
    obj = record.object or {}
    involved = obj.get("involvedObject") if isinstance(obj.get("involvedObject"), dict) else {}
    if involved.get("kind") not in (None, "Pod"):
        return
    uid = str(involved.get("uid") or "")
    pod = pods.get(uid) or next((p for p in reversed(list(pods.values())) if p.name == involved.get("name")), None)
    if pod is None:
        return
    reason = obj.get("reason")
    if reason == "FailedScheduling" and pod.bound is None and pod.waiting_from is None:
        pod.waiting_from = now
    elif reason == "Preempted":
        pod.preempted = True


def _attempts(pods: dict[str, _Pod], jobs: dict[str, str]) -> tuple[TaskAttempt, ...]:
    result: list[TaskAttempt] = []
    counts: dict[tuple[str, str], int] = {}
    for pod in sorted(pods.values(), key=lambda p: p.first_seen):
        key = (pod.framework, pod.task)
        index = counts.get(key, 0)
        counts[key] = index + 1
        waiting: tuple[tuple[float, float | None], ...] = ()
        if pod.waiting_from is not None:
            until = pod.bound if pod.bound is not None else pod.end
            waiting = ((pod.waiting_from, until),)
        start = pod.start if pod.start is not None else (pod.bound if pod.end is not None and pod.bound else None)
        if pod.preempted:
            outcome = "preempted"
        elif pod.phase:
            outcome = pod.phase.lower()
        elif pod.deleted:
            outcome = "deleted"
        else:
            outcome = "running" if start is not None else "waiting"
        result.append(TaskAttempt(
            job=jobs.get(pod.framework, pod.framework), task=pod.task, attempt=index, node=pod.node or None,
            gpus=pod.gpus, start=start, end=pod.end if start is not None else None, outcome=outcome,
            waiting=waiting, preempted=pod.preempted, recreated=index > 0, created=pod.first_seen,
        ))
    return tuple(result)


def timeline_for_chart(path: Path) -> ExperimentTimeline:
    """Read an evidence log into task attempts (times in seconds since its first record). Never raises."""
    log = read_evidence(path)
    problems = [f"{path.parent.name}/evidence.jsonl: {w}" for w in log.warnings[:3]]
    if not log.records:
        return ExperimentTimeline(problems=tuple(problems))
    t0 = parse_time(log.records[0].time)
    if t0 is None:
        return ExperimentTimeline(problems=(*problems, f"{path.parent.name}/evidence.jsonl: unreadable times"))
    pods: dict[str, _Pod] = {}
    jobs: dict[str, str] = {}
    config_text = ""
    now = 0.0
    for record in log.records:
        now = _seconds(t0, record.time) if _seconds(t0, record.time) is not None else now
        action = record.action or {}
        if record.kind == "action" and action.get("type") == "submit" and action.get("framework_name"):
            jobs[str(action["framework_name"])] = str(action.get("job_name") or action["framework_name"])
        elif record.kind == "action" and action.get("type") == "config-switch":
            config_text = str(action.get("text") or action.get("config") or action.get("hived_config") or "")
        elif record.resource == "pods":
            _observe_pod(pods, record, now)
        elif record.resource == "events":
            _observe_event(pods, record, now)
    return ExperimentTimeline(
        attempts=_attempts(pods, jobs),
        started=log.records[0].time,
        end=now,
        source=log.sources[0] if log.sources else log.records[0].source,
        hived_config_text=config_text,
        jobs=jobs,
        problems=tuple(problems),
    )
