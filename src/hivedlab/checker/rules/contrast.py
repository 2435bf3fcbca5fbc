"""Rules for runs without HiveD (docs/other-schedulers.md): does a job start partially or all at once, and do two
such jobs deadlock?"""

from __future__ import annotations

from typing import Any

from hivedlab.basics.text import Text
from hivedlab.checker.rules.common import (
    CONSISTENT,
    INCONSISTENT,
    INF,
    Context,
    Outcome,
    clock,
    missing,
    not_run,
    seqs,
    who,
)
from hivedlab.checker.timeline import Attempt, JobTimeline

TOLERANCE_S = {"sim": 0.0, "k8s": 30.0}


def _first_attempts(job: JobTimeline) -> list[Attempt]:
    """The first pod of each task (role and index) of the job's first framework attempt, in task order."""
    first: dict[tuple[str, int], Attempt] = {}
    for attempt in job.attempts:
        key = (attempt.task_role or "", attempt.task_index if attempt.task_index is not None else -1)
        first.setdefault(key, attempt)
    return [first[key] for key in sorted(first)]


def _label(attempt: Attempt) -> str:
    return f"{attempt.task_role}-{attempt.task_index}"


def _bound_t(attempt: Attempt) -> float:
    return attempt.bound.t if attempt.bound is not None else INF


def gang_start(ctx: Context, rule: dict[str, Any]) -> Outcome:
    """`expect: partial`: some task of `job` held a node while another of its tasks waited (Kubernetes' default
    scheduler places pods one by one); `expect: all-or-nothing`: every task was bound in one round and none waited
    bound while the rest waited (kube-batch's gang)."""
    job = ctx.one(rule["job"])
    if job is None or not job.attempts:
        return not_run(rule["job"])
    tasks = _first_attempts(job)
    bound = [a for a in tasks if a.bound is not None]
    if not bound:
        return missing(f"{who(job).zh} 没有子任务被调度", f"no task of {who(job).en} was ever bound")
    first = min(bound, key=_bound_t)
    late = [a for a in tasks if _bound_t(a) > _bound_t(first) + TOLERANCE_S.get(ctx.source, 0.0) and a.waits]
    evidence = seqs(first.bound, *(a.waits[0].mark for a in late), *(a.bound for a in late))
    if late:
        until = min(map(_bound_t, late))
        early = [a for a in tasks if _bound_t(a) < until]
        names = ", ".join(f"{_label(a)} ({a.node}, {clock(a.bound)})" for a in early)
        held = Text(f"{who(job).zh} 的 {names} 已被调度，", f"{who(job).en}'s {names} held nodes ")
        rest = "、".join(f"{_label(a)}（等到 {clock(a.bound) if a.bound else '结束'}）" for a in late)
        rest_en = ", ".join(f"{_label(a)} (until {clock(a.bound) if a.bound else 'the end'})" for a in late)
        what = held + Text(f"而 {rest} 仍在等待：部分启动，已占用的 GPU 无法推进训练。",
                           f"while {rest_en} still waited: a partial start, holding GPUs that cannot make progress.")
        return Outcome(CONSISTENT if rule.get("expect") == "partial" else INCONSISTENT, what, evidence)
    unbound = [a for a in tasks if a.bound is None]
    if unbound:
        return missing(f"{who(job).zh} 的子任务 {'、'.join(_label(a) for a in unbound)} 没有被调度",
                       f"tasks {', '.join(_label(a) for a in unbound)} of {who(job).en} were never bound")
    waited = any(a.waits for a in tasks)
    what = Text(f"{who(job).zh} 的 {len(tasks)} 个子任务在 {clock(first.bound)} 同一轮被调度"
                f"{'，此前全部等待' if waited else ''}：全有或全无。",
                f"all {len(tasks)} tasks of {who(job).en} were bound in one round at {clock(first.bound)}"
                f"{', all waiting before' if waited else ''}: all or nothing.")
    evidence = seqs(*(a.bound for a in tasks), *(a.waits[0].mark for a in tasks if a.waits))
    return Outcome(CONSISTENT if rule.get("expect") == "all-or-nothing" else INCONSISTENT, what, evidence)


def _partial_from(job: JobTimeline) -> tuple[float, float, list[Attempt]]:
    """(first bind, when every task was bound — INF if never —, the tasks)."""
    tasks = _first_attempts(job)
    return min(map(_bound_t, tasks), default=INF), max(map(_bound_t, tasks), default=INF), tasks


def deadlock(ctx: Context, rule: dict[str, Any]) -> Outcome:
    """`expect: true`: each of `jobs` held nodes while other tasks of its own waited, at the same time, and none of
    them ever had every task bound (each waits for the others: a deadlock, ended only by stopping them);
    `expect: false`: no such moment, every job had all its tasks bound in the end."""
    jobs = []
    for key in rule["jobs"]:
        job = ctx.one(key)
        if job is None or not job.attempts:
            return not_run(key)
        jobs.append(job)
    spans = [_partial_from(job) for job in jobs]
    stuck = all(full == INF and first < INF for first, full, _ in spans)
    evidence = seqs(*(a.bound for _, _, tasks in spans for a in tasks),
                    *(a.waits[0].mark for _, _, tasks in spans for a in tasks if a.waits and a.bound is None))
    parts = []
    for job, (_, _, tasks) in zip(jobs, spans, strict=True):
        held = sum(1 for a in tasks if a.bound is not None)
        parts.append(Text(f"{who(job).zh} {held}/{len(tasks)} 个子任务占有机器",
                          f"{who(job).en} held nodes for {held}/{len(tasks)} tasks"))
    summary = Text("；".join(p.zh for p in parts), "; ".join(p.en for p in parts))
    if stuck:
        what = summary + Text("；每个任务都在等另一个任务占着的 GPU，谁也完成不了：死锁（直到被停止）。",
                              "; each waited for GPUs the other held and none could finish: "
                              "a deadlock (until stopped).")
        return Outcome(CONSISTENT if rule.get("expect") is True else INCONSISTENT, what, evidence)
    what = summary + Text("；每个任务最终都全部被调度：没有死锁。",
                          "; every job had all its tasks bound in the end: no deadlock.")
    return Outcome(CONSISTENT if rule.get("expect") is False else INCONSISTENT, what, evidence)


RULES = {"gang-start": gang_start, "deadlock": deadlock}
