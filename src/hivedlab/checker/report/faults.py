"""Node faults as the report tells them: a node whose Ready condition changed during an experiment
(`hivedlab.checker.judging.timeline.Outage`) or that was cordoned or uncordoned during it (`Cordon`), from a real
cluster's Node records; the pods each touched as the evidence shows them, and the sentence the report prints for it in
zh and en (docs/checker.md#node-faults). A cordon is a kind of node fault (`NodeFault.kind`) with its own words: the
table, the notes on the pods and the chart show both kinds together; the answer text, the lists and claims.json name
cordons apart (`node_cordons`), so that a NotReady node reads as before.

Every part of a sentence follows from records it cites: the Node records that show the change, the pod records that
show a pod on the node (bound, running, ended) and the FailedScheduling events in which HiveD names the node bad. A
simulator's log has no Node record and so no fault.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hivedlab.basics.clock import time_of_day
from hivedlab.basics.text import Text
from hivedlab.checker.judging.timeline import (
    Attempt,
    JobTimeline,
    Mark,
    NodeSpan,
    Outage,
    Timeline,
    bad_marks,
    began,
    on_node,
)
from hivedlab.checker.report.wording import cell, in_lang

Since = Callable[[float | None], str]  # seconds after the log's first record -> the T+ time printed
NOT_READY, CORDONED = "not_ready", "cordoned"  # the kinds of node fault (also the chart's band and legend keys)

_OUTCOMES = {"succeeded": Text("成功", "succeeded"), "failed": Text("失败", "failed"),
             "preempted": Text("被抢占", "preempted"), "deleted": Text("被删除", "deleted"),
             "stopped": Text("被用户停止", "stopped by the user"),
             "job-completed": Text("任务已完成，被停止", "stopped: the job had completed")}


@dataclass(frozen=True)
class PodTouched:
    """A pod a node fault touched. `how`: stayed (Running on the node through the end of the fault or of the log),
    ran-until (on the node when the fault began, ended during it), bound (bound to the node during the fault),
    waited-bad (HiveD's wait reason named the node bad). `start`/`end`: seconds since the log's first record of what
    `how` says (the run; the binding; the first and last such wait)."""

    user: str
    job: str
    task: str
    attempt: int  # 0-based, as the report's TaskAttempt
    how: str
    start: float | None
    end: float | None
    outcome: str
    seqs: tuple[int, ...]
    message: str = ""  # waited-bad: HiveD's reason
    count: int = 0  # waited-bad: how many such waits


@dataclass(frozen=True)
class NodeFault:
    """One span in which a node was not Ready (`kind` NOT_READY; `status`, `reason`: its Ready condition's) or
    cordoned (CORDONED), seconds since the log's first record (`start` None: since before the log began; `end` None:
    until the log ended); `start_at`/`end_at` the same instants as POSIX seconds."""

    node: str
    status: str
    reason: str
    start: float | None
    end: float | None
    start_at: float | None
    end_at: float | None
    seqs: tuple[int, ...]
    pods: tuple[PodTouched, ...] = ()
    kind: str = NOT_READY


def task_labels(job: JobTimeline) -> dict[str, tuple[str, int]]:
    """Each attempt's task (`role-index`) and its attempt number within the task (0 first), by pod uid."""
    seen: dict[str, int] = {}
    labels = {}
    for a in job.attempts:
        task = f"{a.task_role or 'task'}-{a.task_index if a.task_index is not None else 0}"
        labels[a.uid] = (task, seen.get(task, 0))
        seen[task] = seen.get(task, 0) + 1
    return labels


def node_faults(timeline: Timeline, names: Mapping[str, str]) -> tuple[NodeFault, ...]:
    """The log's node faults (NotReady and cordoned) with the pods each touched, in the order they began; `names` maps
    framework names to the jobs' display names."""
    t0 = timeline.first.t if timeline.first else 0.0

    def rel(mark: Mark | None) -> float | None:
        return None if mark is None else round(mark.t - t0, 6)

    spans: list[tuple[NodeSpan, str]] = [*((o, NOT_READY) for o in timeline.node_outages),
                                         *((c, CORDONED) for c in timeline.node_cordons)]
    spans.sort(key=lambda pair: began(pair[0]))
    faults = []
    for span, kind in spans:
        pods: list[PodTouched] = []
        for job in timeline.jobs:
            labels = task_labels(job)
            for a in job.attempts:
                task, index = labels[a.uid]
                base = (job.user or "", names.get(job.framework_name, job.framework_name), task, index)
                if on_node(span, a):
                    pods.append(_on_node(span, a, base, rel))
                marks = bad_marks(span, (a,))
                if marks:
                    first, last = marks[0][1], marks[-1][1]
                    pods.append(PodTouched(*base, "waited-bad", rel(first.mark), rel(last.mark), a.outcome,
                                           tuple(dict.fromkeys((first.mark.seq, last.mark.seq))), first.reason,
                                           len(marks)))
        seqs = tuple(m.seq for m in (span.start, span.end) if m is not None)
        status, reason = (span.status, span.reason) if isinstance(span, Outage) else ("", "")
        faults.append(NodeFault(span.node, status, reason, rel(span.start), rel(span.end),
                                span.start.t if span.start else None, span.end.t if span.end else None,
                                seqs, tuple(pods), kind))
    return tuple(faults)


def _on_node(span: NodeSpan, a: Attempt, base: tuple[str, str, str, int],
             rel: Callable[[Mark | None], float | None]) -> PodTouched:
    assert a.bound is not None  # on_node: it was bound to the node
    ended = a.ended
    if span.start is not None and a.bound.seq >= span.start.seq:
        return PodTouched(*base, "bound", rel(a.bound), None, a.outcome, (a.bound.seq,))
    ran_from = a.started or a.bound
    if ended is not None and (span.end is None or ended.seq <= span.end.seq):
        return PodTouched(*base, "ran-until", rel(ran_from), rel(ended), a.outcome, (ended.seq,))
    seqs = tuple(m.seq for m in (ran_from, ended) if m is not None)
    return PodTouched(*base, "stayed", rel(ran_from), rel(ended), a.outcome if a.started else "bound", seqs)


def _span(fault: NodeFault, since: Since) -> Text:
    if fault.start_at is None:
        clock = Text(f"日志开始前至 {time_of_day(fault.end_at or 0.0)} UTC",
                     f"from before the log began to {time_of_day(fault.end_at or 0.0)} UTC")
    elif fault.end_at is None:
        clock = Text(f"{time_of_day(fault.start_at)} UTC 起直至日志结束",
                     f"from {time_of_day(fault.start_at)} UTC to the end of the log")
    else:
        span = f"{time_of_day(fault.start_at)}–{time_of_day(fault.end_at)} UTC"
        clock = Text(span, span)
    t_span = f"{since(fault.start) or '…'}–{since(fault.end) or '…'}"
    seqs = ", ".join(str(s) for s in fault.seqs)
    if fault.kind == CORDONED:
        return Text(f"节点 {fault.node} {clock.zh} 被封锁（cordon，spec.unschedulable；{t_span}；证据记录 seq {seqs}）",
                    f"node {fault.node} cordoned {clock.en} (spec.unschedulable; {t_span}; "
                    f"evidence records seq {seqs})")
    state = "NotReady" if fault.status == "False" else f"Ready={fault.status or '?'}"
    return Text(f"节点 {fault.node} {clock.zh} 未就绪（{state}；{t_span}；证据记录 seq {seqs}）",
                f"node {fault.node} {state} {clock.en} ({t_span}; evidence records seq {seqs})")


def _pod(pod: PodTouched, who: Callable[[str], str], since: Since, kind: str) -> Text:
    owner = who(pod.user)
    name_zh = f"{owner} 的 {pod.job} {pod.task}" if owner else f"{pod.job} {pod.task}"
    name_en = f"{owner}'s {pod.job} {pod.task}" if owner else f"{pod.job} {pod.task}"
    if pod.attempt:
        name_zh, name_en = f"{name_zh}（第 {pod.attempt + 1} 次）", f"{name_en} (try {pod.attempt + 1})"
    seqs = ", ".join(str(s) for s in pod.seqs)
    ran = f"{since(pod.start) or '…'}–{since(pod.end) or '…'}"
    if pod.how == "stayed" and pod.outcome == "bound":
        return Text(f"{name_zh} 的 pod 一直绑定在其上、未启动（seq {seqs}）",
                    f"the pod of {name_en} stayed bound to it without starting (seq {seqs})")
    if pod.how == "stayed":
        return Text(f"{name_zh} 的 pod 在其上一直处于 Running（运行于 {ran}；seq {seqs}）",
                    f"the pod of {name_en} stayed Running on it (it ran {ran}; seq {seqs})")
    if pod.how == "ran-until":
        outcome = _OUTCOMES.get(pod.outcome, Text(pod.outcome, pod.outcome))
        return Text(f"{name_zh} 的 pod 在其上运行至 {since(pod.end)}（{outcome.zh}；seq {seqs}）",
                    f"the pod of {name_en} was on it until {since(pod.end)} ({outcome.en}; seq {seqs})")
    if pod.how == "bound":
        state = Text("被封锁", "cordoned") if kind == CORDONED else Text("未就绪", "not Ready")
        return Text(f"{name_zh} 的 pod 在它{state.zh}时于 {since(pod.start)} 被绑定到它上面（seq {seqs}）",
                    f"the pod of {name_en} was bound to it at {since(pod.start)} while it was {state.en} (seq {seqs})")
    times = since(pod.start) if pod.count == 1 else f"{since(pod.start)}–{since(pod.end)}, {pod.count}"
    times_zh = since(pod.start) if pod.count == 1 else f"{since(pod.start)}–{since(pod.end)}，共 {pod.count} 次"
    return Text(f"HiveD 将它计为坏节点：{name_zh} 的 pod 等待，原因“{pod.message}”（{times_zh}；seq {seqs}）",
                f"HiveD counted it bad: the pod of {name_en} waited with \"{pod.message}\" ({times}"
                f"{' times' if pod.count > 1 else ''}; seq {seqs})")


def fault_sentence(fault: NodeFault, who: Callable[[str], str], since: Since) -> Text:
    """The report's sentence for one fault: the node, the span, the records, then each pod it touched."""
    head = _span(fault, since)
    pods = [_pod(pod, who, since, fault.kind) for pod in fault.pods]
    if not pods:
        return Text(f"{head.zh}；本实验没有 pod 在其上，也没有 pod 因它等待。",
                    f"{head.en}; no pod of the experiment was on it or waited for it.")
    return Text(f"{head.zh}；" + "；".join(p.zh for p in pods) + "。",
                f"{head.en}; " + "; ".join(p.en for p in pods) + ".")


def fault_row(fault: NodeFault, since: Since, lang: str) -> list[str]:
    """The fault as a row of the report's timeline table (a node's row: no job, task or attempt)."""
    state = Text("节点被封锁（cordon）", "node cordoned") if fault.kind == CORDONED else \
        Text("节点未就绪（NotReady）", "node NotReady") if fault.status == "False" else \
        Text(f"节点未就绪（Ready={fault.status or '?'}）", f"node not Ready (Ready={fault.status or '?'})")
    return [cell("—"), "—", "—", cell(fault.node), since(fault.start) or "—", since(fault.end) or "…", "—",
            cell(state.get(lang))]


def touched_note(faults: tuple[NodeFault, ...], job: str, task: str, attempt: int, since: Since, lang: str) -> str:
    """What the outcome cell of a task attempt adds when a fault touched its pod (unescaped), else ""."""
    notes = []
    for fault in faults:
        for pod in fault.pods:
            if (pod.job, pod.task, pod.attempt) == (job, task, attempt):
                span = f"{since(fault.start) or '…'}–{since(fault.end) or '…'}"
                state = Text(f"{span} 被封锁", f"cordoned {span}") if fault.kind == CORDONED else \
                    Text(f"{span} 未就绪", f"not Ready {span}")
                note = Text(f"HiveD 将节点 {fault.node} 计为坏节点（{state.zh}）",
                            f"HiveD counted node {fault.node} bad ({state.en})") if pod.how == "waited-bad" \
                    else Text(f"节点 {fault.node} {state.zh}", f"node {fault.node} {state.en}")
                notes.append(note.get(lang))
    return in_lang(lang, "；", "; ").join(dict.fromkeys(notes))


def fault_lines(faults: tuple[NodeFault, ...], names: Mapping[str, str], since: Since, lang: str,
                kind: str = NOT_READY) -> list[str]:
    """The sentence of each fault of `kind` in `lang` (unescaped); `names` maps OpenPAI users to the members' names."""
    return [fault_sentence(f, lambda user: names.get(user, user), since).get(lang) for f in faults if f.kind == kind]


def fault_claims(faults: tuple[NodeFault, ...]) -> list[dict[str, Any]]:
    """The NotReady faults for claims.json (`node_faults`): every time in seconds since the log's first record, every
    fact with its records."""
    return [{"node": f.node, "ready_status": f.status, "reason": f.reason, "start_s": f.start, "end_s": f.end,
             "evidence": list(f.seqs), "pods": _pod_claims(f)}
            for f in faults if f.kind == NOT_READY]


def cordon_claims(faults: tuple[NodeFault, ...]) -> list[dict[str, Any]]:
    """The cordons for claims.json (`node_cordons`), as `fault_claims` gives the NotReady faults, without a Ready
    condition."""
    return [{"node": f.node, "start_s": f.start, "end_s": f.end, "evidence": list(f.seqs), "pods": _pod_claims(f)}
            for f in faults if f.kind == CORDONED]


def _pod_claims(fault: NodeFault) -> list[dict[str, Any]]:
    return [{"user": p.user or None, "job": p.job, "task": p.task, "attempt": p.attempt, "how": p.how,
             "start_s": p.start, "end_s": p.end, "outcome": p.outcome, "evidence": list(p.seqs),
             **({"hived_reason": p.message, "count": p.count} if p.how == "waited-bad" else {})}
            for p in fault.pods]
