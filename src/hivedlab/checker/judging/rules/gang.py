"""Rules about gang scheduling (docs/lab-experiments.md#gang-scheduling): a gang waits as a whole, and its tasks are
bound in one round and start together. Incremental scheduling and the quota check are in `incremental.py`."""

from __future__ import annotations

from hivedlab.basics.clock import elapsed
from hivedlab.basics.text import Text
from hivedlab.checker.judging.rules.cells import cell_ids, free_cells, free_text
from hivedlab.checker.judging.rules.rule_base import (
    CONSISTENT,
    INCONCLUSIVE,
    INCONSISTENT,
    Context,
    Outcome,
    RuleCheck,
    clock,
    cut_short,
    missing,
    not_run,
    released_at,
    seqs,
    short_name,
    span,
    speaker,
    unknown_only,
    waited_for,
    where,
    who,
)
from hivedlab.checker.judging.timeline import Attempt, JobTimeline
from hivedlab.models.scheduler_messages import Unknown
from hivedlab.plans.rule_params import GangTogether, JobWhile


def _bound_attempt(job: JobTimeline) -> dict[int, Attempt]:
    """Per task index, the attempts of the latest framework attempt in which some task was bound."""
    bound_ids = [a.framework_attempt for a in job.attempts if a.bound is not None]
    if not bound_ids:
        return {}
    target = bound_ids[-1]
    return {a.task_index: a for a in job.attempts if a.framework_attempt == target and a.task_index is not None}


def gang_waits(ctx: Context, params: JobWhile) -> Outcome:
    """No task of the gang `job` was bound while `while` ran; they waited (for `reason`) even with a node free."""
    job, holder = ctx.one(params.job), ctx.one(params.while_)
    if job is None or not job.attempts:
        return not_run(params.job)
    if holder is None or holder.first_started is None:
        return not_run(params.while_)
    holder_end = released_at(holder)
    early = [a for a in job.attempts if a.bound is not None and a.bound.t < holder_end]
    waits = [w for a in job.attempts for w in a.waits]
    reasons = sorted({w.reason for w in waits})
    holder_node = next((a.node for a in holder.attempts if a.node), None)
    first_wait = min((w.mark for w in waits), key=lambda m: m.seq, default=None)
    spare, idle = free_cells(ctx, job.virtual_cluster or "", first_wait.seq) if first_wait is not None else (0, ())
    free = free_text(job.virtual_cluster or "", spare, idle, ctx.timeline.scheduler) if spare and idle else None
    facts = {"free_cells": cell_ids(idle)} if free else {}
    holder_text = Text(f"{who(holder).zh} 在 {holder_node} 上运行到 {clock(holder.end)}",
                       f"{who(holder).en} ran on {holder_node} until {clock(holder.end)}")
    evidence = seqs(holder.end, first_wait, *(a.bound for a in job.attempts))
    if early:
        bound_zh = "、".join(f"{a.task_index} 号子任务 {clock(a.bound)} 到 {a.node}" for a in early)
        bound_en = ", ".join(f"task {a.task_index} at {clock(a.bound)} to {a.node}" for a in early)
        return Outcome(INCONSISTENT, holder_text + Text(
            f"；期间 {who(job).zh} 已有子任务被调度（{bound_zh}），没有整体等待。",
            f"; meanwhile {who(job).en} already had tasks bound ({bound_en}): "
            "it did not wait as a whole."), evidence)
    bound = [a for a in job.attempts if a.bound is not None]
    if not waits:
        return missing(f"{who(job).zh} 没有 FailedScheduling 等待事件",
                       f"{who(job).en} has no FailedScheduling wait event")
    reason = params.reason
    unknown = unknown_only(waits, reason)
    if unknown:
        said = Unknown(unknown).text()
        return Outcome(INCONCLUSIVE, holder_text + Text("；", "; ") + said + Text("。", "."), evidence, (said,))
    if not waited_for(reason, reasons):
        return Outcome(INCONSISTENT, holder_text + Text(
            f"；{who(job).zh} 的等待原因是 {'；'.join(reasons)}，不是“{reason}”。",
            f"; {who(job).en} waited for {'; '.join(reasons)}, not '{reason}'."), evidence)
    although = Text(f"，尽管 {free.zh} 空闲" if free else "", f" although {free.en} was free" if free else "")
    text = holder_text + Text(
        f"；期间 {who(job).zh} 的所有子任务都在等待（{speaker(ctx).zh}：{'；'.join(reasons)}）{although.zh}",
        f"; meanwhile every task of {who(job).en} waited ({speaker(ctx).en}: {'; '.join(reasons)}){although.en}",
    )
    if not bound:
        if ctx.run_finished:
            return Outcome(CONSISTENT, text + Text("，直到日志结束都没有运行。",
                                                   ", and it had not run when the log ended."), evidence, facts=facts)
        return cut_short(ctx, f"日志在 {who(job).zh} 开始运行之前就结束了",
                         f"the log ends before {who(job).en} started")
    first = min((a.bound for a in bound if a.bound), key=lambda m: m.seq)
    name, holder_name = short_name(ctx, job), short_name(ctx, holder)
    summary = Text(f"{name} 的子任务一起等待{although.zh}，直到 {holder_name} 结束后才于 {clock(first)} 被调度。",
                   f"{name}'s tasks waited together{although.en}, and were bound only at {clock(first)}, after "
                   f"{holder_name} ended.")
    return Outcome(CONSISTENT, text + Text(f"；它在 {who(holder).zh} 结束后于 {clock(first)} 才开始调度。",
                                           f"; it was bound only at {clock(first)}, after {who(holder).en} ended."),
                   evidence, facts=facts, summary=summary)


def gang_together(ctx: Context, params: GangTogether) -> Outcome:
    """All tasks bound in one scheduling round (no task waited after another was bound) and their containers
    started within the source's tolerance (default 30 s on a real cluster, 0 on the simulator)."""
    job = ctx.one(params.job)
    if job is None or not job.attempts:
        return not_run(params.job)
    tolerance = params.tolerance_s.of(ctx.source)
    tasks = _bound_attempt(job)
    if not tasks:
        if ctx.run_finished:
            return Outcome(INCONSISTENT, Text(f"{who(job).zh} 的子任务一直没有被调度。",
                                              f"{who(job).en}'s tasks were never bound."), seqs(job.submitted))
        return cut_short(ctx, f"日志在 {who(job).zh} 被调度之前就结束了",
                         f"the log ends before {who(job).en} was bound")
    unbound = [a for a in tasks.values() if a.bound is None]
    first_bind = min((a.bound for a in tasks.values() if a.bound), key=lambda m: m.seq)
    late_waits = [(a, w) for a in tasks.values() for w in a.waits if w.mark.seq > first_bind.seq]
    placed = "，".join(f"{i} 号子任务在 {where(a)}" for i, a in tasks.items() if a.bound)
    placed_en = ", ".join(f"task {i} on {where(a)}" for i, a in tasks.items() if a.bound)
    evidence = seqs(*(a.bound for a in tasks.values()), *(a.started for a in tasks.values()),
                    *(w.mark for _, w in late_waits[:1]))
    if unbound or late_waits:
        waited = late_waits[0][0] if late_waits else unbound[0]
        return Outcome(INCONSISTENT, Text(
            f"{who(job).zh} 的子任务没有在同一轮调度中绑定：{placed}；"
            f"{waited.task_index} 号子任务在 {clock(first_bind)} 之后仍在等待，子任务是先后运行的。",
            f"{who(job).en}'s tasks were not bound in one scheduling round: {placed_en}; "
            f"task {waited.task_index} still waited after {clock(first_bind)}, "
            "so the tasks ran one after the other."), evidence)
    binds = [a.bound.t for a in tasks.values() if a.bound]
    starts = [a.started for a in tasks.values()]
    text = Text(f"{who(job).zh} 的 {len(tasks)} 个子任务在同一轮调度中于 {clock(first_bind)} 绑定（{placed}）",
                f"{'Both' if len(tasks) == 2 else f'All {len(tasks)}'} tasks of {who(job).en} were bound in the same "
                f"scheduling round at {clock(first_bind)} ({placed_en})")
    if any(s is None for s in starts):
        ran = [s for s in starts if s is not None]
        last = ctx.timeline.last
        if ran and last is not None and (last.t - min(s.t for s in ran)) > tolerance and ctx.run_finished:
            return Outcome(INCONSISTENT, text + Text("，但有子任务一直没有启动。", ", but a task never started."),
                           evidence)
        return cut_short(ctx, f"日志在 {who(job).zh} 的全部子任务启动之前就结束了",
                         f"the log ends before all tasks of {who(job).en} started")
    gap = max(s.t for s in starts if s) - min(s.t for s in starts if s)
    bind_gap = max(binds) - min(binds)
    shown = elapsed(min(s.t for s in starts if s), max(s.t for s in starts if s))
    allowed = (Text(f"（容差 {span(tolerance).zh}）", f" (tolerance {span(tolerance).en})") if tolerance > 0
               else Text("", ""))
    printed = sorted({clock(s) for s in starts})
    if len(printed) == 1:
        text = text + Text(f"，容器都于 {printed[0]} 启动{allowed.zh}",
                           f"; their containers all started at {printed[0]}{allowed.en}")
    else:
        times, times_en = "、".join(clock(s) for s in starts), ", ".join(clock(s) for s in starts)
        text = text + Text(f"，容器分别于 {times} 启动，相差 {span(shown).zh}{allowed.zh}",
                           f"; their containers started at {times_en}, {span(shown).en} apart{allowed.en}")
    if gap > tolerance or bind_gap > tolerance:
        return Outcome(INCONSISTENT, text + Text("，超过容差：子任务是先后启动的。",
                                                 ", more than the tolerance: they started one after the other."),
                       evidence)
    summary = Text(f"{short_name(ctx, job)} 的 {len(tasks)} 个子任务在同一轮调度中一起绑定、一起启动，而不是先后运行。",
                   f"The {len(tasks)} tasks of {short_name(ctx, job)} were bound in one scheduling round and started "
                   "together, not one after the other.")
    return Outcome(CONSISTENT, text + Text("：子任务同时运行，而不是先后运行。",
                                           ": the tasks ran together, not one after the other."), evidence,
                   summary=summary)


RULES: dict[str, RuleCheck] = {
    "gang-waits": gang_waits,
    "gang-together": gang_together,
}
