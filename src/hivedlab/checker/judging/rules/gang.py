"""Rules about gang and incremental scheduling and the quota check (docs/lab-experiments.md#gang-scheduling;
incremental scheduling follows it on the same page)."""

from __future__ import annotations

from hivedlab.basics.clock import elapsed
from hivedlab.basics.text import Text
from hivedlab.checker.judging.rules.cells import cell_ids, free_cells, free_text
from hivedlab.checker.judging.rules.rule_base import (
    CONSISTENT,
    INCONCLUSIVE,
    INCONSISTENT,
    INF,
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
    task_list,
    unknown_only,
    where,
    who,
)
from hivedlab.checker.judging.timeline import Attempt, JobTimeline
from hivedlab.models.openpai.jobstate import CODE_ATTEMPT_COMPLETION
from hivedlab.models.scheduler_messages import Unknown
from hivedlab.plans.rule_params import GangTogether, JobWhile, PartialRun, Rejected


def _tasks(job: JobTimeline) -> dict[int, Attempt]:
    """The first attempt of each task index (the first framework attempt's pods)."""
    first: dict[int, Attempt] = {}
    for attempt in job.attempts:
        if attempt.task_index is not None and attempt.task_index not in first:
            first[attempt.task_index] = attempt
    return dict(sorted(first.items()))


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
    if reason and not any(reason in r for r in reasons):
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


def _freed_by(early: dict[int, Attempt], task: Attempt) -> tuple[int, Attempt] | None:
    """The earlier task whose GPU `task` took: it ran on the same node and ended before `task` started."""
    if task.started is None:
        return None
    for i, a in early.items():
        if a.node == task.node and a.ended is not None and a.ended.seq <= task.started.seq:
            return i, a
    return None


def incremental(ctx: Context, params: JobWhile) -> Outcome:
    """Some task started while `while` ran; the others waited (for `reason`) and started later, or never because the
    job had already succeeded (minSucceededInstances: 1, docs/openpai-model.md#job-states)."""
    job, holder = ctx.one(params.job), ctx.one(params.while_)
    if job is None or not job.attempts:
        return not_run(params.job)
    if holder is None or holder.first_started is None:
        return not_run(params.while_)
    tasks = _tasks(job)
    if len(tasks) < 2:
        return missing(f"{who(job).zh} 只出现了 {len(tasks)} 个子任务",
                       f"only {len(tasks)} task(s) of {who(job).en} appeared")
    holder_end = released_at(holder)
    # a task that first waited and then started while the holder still ran took a GPU a sibling freed: it ran after
    # that sibling, not with it (on the rehearsal cluster's instant containers it may even start before
    # FrameworkController stops it for the job's success)
    started = {i: a for i, a in tasks.items() if a.started and a.started.t < holder_end}
    early = {i: a for i, a in started.items()
             if not (a.waits and _freed_by({j: b for j, b in started.items() if j != i}, a))}
    rest = {i: a for i, a in tasks.items() if i not in early}
    evidence = list(seqs(holder.end, job.finished, *(a.started for a in tasks.values())))
    if not early:
        starts = [a.started for a in tasks.values() if a.started]
        if starts or ctx.run_finished:
            return Outcome(INCONSISTENT, Text(
                f"{who(holder).zh} 运行期间（到 {clock(holder.end)}）{who(job).zh} 没有任何子任务运行，"
                "尽管有空闲 GPU：它像群调度一样整体等待。",
                f"While {who(holder).en} ran (until {clock(holder.end)}) no task of {who(job).en} ran although a "
                "GPU was free: it waited as a whole, like a gang."), tuple(sorted(set(evidence))))
        return cut_short(ctx, f"日志在 {who(job).zh} 开始运行之前就结束了",
                         f"the log ends before {who(job).en} started")
    lines = [Text(f"{i} 号子任务没有等待整个任务凑齐：{who(holder).zh} 仍在运行时，"
                  f"它于 {clock(a.started)} 在 {where(a)} 上开始运行",
                  f"task {i} did not wait for the whole job: it started at {clock(a.started)} on {where(a)} while "
                  f"{who(holder).en} still ran")
             for i, a in early.items()]
    if not rest:
        return Outcome(INCONSISTENT, Text("；".join(t.zh for t in lines) + "：所有子任务同时开始，看不出弹性调度。",
                                          "; ".join(t.en for t in lines) + ": all tasks started at once; nothing shows "
                                          "incremental scheduling."), tuple(sorted(set(evidence))))
    reason = params.reason
    holder_nodes = {a.node for a in holder.attempts if a.node}
    never_ran: list[int] = []
    after_sibling: list[int] = []
    for i, a in rest.items():
        reasons = sorted({w.reason for w in a.waits})
        evidence += [w.mark.seq for w in a.waits[:1]]
        waited = Text(f"{i} 号子任务等待空闲的 GPU（{speaker(ctx).zh}：{'；'.join(reasons)}）" if reasons
                      else f"{i} 号子任务没有等待事件",
                      f"task {i} waited for a free GPU ({speaker(ctx).en}: {'; '.join(reasons)})" if reasons
                      else f"task {i} has no wait event")
        unknown = unknown_only(a.waits, reason)
        if unknown:
            said = Unknown(unknown).text()
            return Outcome(INCONCLUSIVE, waited + Text("：", ": ") + said + Text("。", "."),
                           tuple(sorted(set(evidence))), (said,))
        if reason and reasons and not any(reason in r for r in reasons):
            return Outcome(INCONSISTENT, waited + Text(f"，原因不是“{reason}”。", f", not for '{reason}'."),
                           tuple(sorted(set(evidence))))
        sibling = _freed_by(early, a)
        if a.started is not None and a.started.t < holder_end and sibling is not None:
            k, b = sibling
            stopped = (Text(f"，直到 {who(job).zh} 成功（minSucceededInstances 为 1）后被 FrameworkController 停止",
                            f", until FrameworkController stopped it because {who(job).en} had SUCCEEDED "
                            "(minSucceededInstances: 1)") if job.state == "SUCCEEDED"
                       and a.fc_exit_code == CODE_ATTEMPT_COMPLETION else Text("", ""))
            after_sibling.append(i)
            lines.append(waited + Text(f"，{k} 号子任务于 {clock(b.ended)} 结束后，于 {clock(a.started)} 在它释放的 "
                                       f"{where(a)} 上运行", f" and ran from {clock(a.started)} on {where(a)}, which "
                                       f"task {k} freed when it ended at {clock(b.ended)}") + stopped)
            evidence += [m.seq for m in (b.ended, a.started) if m is not None]
        elif a.started is not None:
            freed = Text(f" {who(holder).zh} 释放的", f" the one {who(holder).en} freed,") if a.node in holder_nodes \
                else Text("", "")
            lines.append(waited + Text(f"，{who(holder).zh} 结束后于 {clock(a.started)} 在{freed.zh} {where(a)} 上运行",
                                       f" and ran from {clock(a.started)} on {where(a)},{freed.en} after "
                                       f"{who(holder).en} ended"))
        elif job.state == "SUCCEEDED" and job.finished is not None:
            lines.append(waited + Text(
                f"，但从未运行：{who(job).zh} 已于 {clock(job.finished)} 成功（minSucceededInstances 为 1），"
                "FrameworkController 停止了剩余的子任务",
                f" but never ran: {who(job).en} had already SUCCEEDED at {clock(job.finished)} "
                "(minSucceededInstances: 1), so FrameworkController stopped the remaining task"))
            never_ran.append(i)
        elif ctx.run_finished:
            return Outcome(INCONSISTENT, waited + Text("，之后一直没有运行，任务也没有成功。",
                                                       " and never ran, and the job did not succeed."),
                           tuple(sorted(set(evidence))))
        else:
            return cut_short(ctx, f"日志在 {who(job).zh} 的 {i} 号子任务运行之前就结束了",
                             f"the log ends before task {i} of {who(job).en} ran")
    first, later = task_list(list(early)), task_list(list(rest))
    if never_ran:
        close = Text("。子任务没有一起等待，也没有一起运行：任务只靠先开始的子任务就成功了。",
                     ". The tasks neither waited nor ran together: the job succeeded on the task that started first.")
        summary = Text(f"{first.zh}不等整个任务就开始运行；"
                       f"{later.zh}等待空闲的 GPU，但任务已成功（minSucceededInstances 为 1），它从未运行。",
                       f"{first.en.capitalize()} started without waiting for the whole job; {later.en} waited for "
                       "a free GPU but never ran, because the job had already succeeded (minSucceededInstances: 1).")
    elif after_sibling:
        close = Text("。子任务先后运行，而不是一起等待、一起开始。",
                     ". The tasks ran one after the other instead of waiting and starting together.")
        summary = Text(f"{first.zh}不等整个任务就开始运行；{later.zh}等待空闲的 GPU，"
                       "在先开始的子任务释放 GPU 后才运行：子任务先后运行。",
                       f"{first.en.capitalize()} started without waiting for the whole job; "
                       f"{later.en} waited for a free GPU and ran on the one the first freed: the tasks ran one after "
                       "the other.")
    else:
        close = Text("。子任务先后运行，而不是一起等待、一起开始。",
                     ". The tasks ran one after the other instead of waiting and starting together.")
        summary = Text(f"{first.zh}不等整个任务就开始运行；"
                       f"{later.zh}等到 {short_name(ctx, holder)} 释放 GPU 后才运行：子任务先后运行。",
                       f"{first.en.capitalize()} started without waiting for the whole job; {later.en} ran only once "
                       f"{short_name(ctx, holder)} freed a GPU: the tasks ran one after the other.")
    english = "; ".join(t.en for t in lines)
    text = Text("；".join(t.zh for t in lines) + close.zh, english[:1].upper() + english[1:] + close.en)
    return Outcome(CONSISTENT, text, tuple(sorted(set(evidence))), summary=summary)


def partial_run(ctx: Context, params: PartialRun) -> Outcome:
    """The over-quota non-gang job was accepted and ran partially: at most `max_parallel` tasks at once, others
    waited."""
    job = ctx.one(params.job)
    if job is None or not job.submissions:
        return not_run(params.job)
    sub = job.submissions[-1]
    if not sub.accepted:
        return Outcome(INCONSISTENT, Text(f"{who(job).zh} 提交时被拒绝（HTTP {sub.status}：{sub.message}）。",
                                          f"{who(job).en} was rejected at submission "
                                          f"(HTTP {sub.status}: {sub.message})."),
                       seqs(sub.mark))
    tasks = _tasks(job)
    intervals = sorted((a.started.t, a.ended.t if a.ended else INF) for a in tasks.values() if a.started)
    if not intervals:
        if ctx.run_finished:
            return Outcome(INCONSISTENT, Text(f"{who(job).zh} 被接受，但没有任何子任务运行。",
                                              f"{who(job).en} was accepted but no task ran."), seqs(sub.mark))
        return cut_short(ctx, f"日志在 {who(job).zh} 运行之前就结束了", f"the log ends before {who(job).en} ran")
    peak = max(sum(1 for s, e in intervals if s <= start < e) for start, _ in intervals)
    ran = [i for i, a in tasks.items() if a.started]
    waited = [i for i, a in tasks.items() if a.waits]
    first = [i for i in ran if i not in waited]
    later = [i for i in waited if tasks[i].started]
    limit = params.max_parallel

    first_text = task_list(first) if first else Text("没有子任务", "no task")
    waited_text = task_list(waited) if waited else Text("没有子任务", "no task")
    if later and later == waited:
        later_text = Text("，之后都运行了", " and all ran later")
    elif later:
        later_text = Text(f"（其中 {task_list(later).zh}之后运行了）", f" ({task_list(later).en} of them ran later)")
    else:
        later_text = Text("", "")
    text = Text(
        f"{who(job).zh}（{len(tasks)} 个子任务，gangAllocation 为 false）"
        f"于 {clock(sub.mark)} 被接受（HTTP {sub.status}），"
        f"并部分运行：{first_text.zh}先运行，{waited_text.zh}等待{later_text.zh}，最多同时运行 {peak} 个",
        f"{who(job).en} ({len(tasks)} tasks, gangAllocation: false) "
        f"was accepted at {clock(sub.mark)} (HTTP {sub.status}) "
        f"and ran partially: {first_text.en} ran first while {waited_text.en} waited{later_text.en}; "
        f"at most {peak} ran at once",
    )
    if job.finished is not None:
        text = text + Text(f"；任务于 {clock(job.finished)} 结束（{job.state}）。",
                           f"; the job finished at {clock(job.finished)} ({job.state}).")
    else:
        text = text + Text("。", ".")
    evidence = seqs(sub.mark, job.finished, *(a.started for a in tasks.values()),
                    *(a.waits[0].mark for a in tasks.values() if a.waits))
    if peak > limit:
        return Outcome(INCONSISTENT, text + Text(f"同时运行的子任务超过了 {limit} 个 GPU。",
                                                 f"More tasks ran at once than the {limit} GPUs."), evidence)
    if not waited and len(ran) == len(tasks):
        return Outcome(INCONSISTENT, text + Text("所有子任务同时运行，没有部分运行。",
                                                 "All tasks ran at once; it did not run partially."), evidence)
    name = short_name(ctx, job)
    summary = Text(f"{name}（{len(tasks)} 个子任务，gangAllocation 为 false）被接受，"
                   f"最多同时运行 {peak} 个子任务，其余的等待。",
                   f"{name} ({len(tasks)} tasks, gangAllocation: false) was accepted and ran at most {peak} tasks at "
                   "once while the others waited.")
    return Outcome(CONSISTENT, text, evidence, summary=summary)


def rejected(ctx: Context, params: Rejected) -> Outcome:
    """The submission was rejected with HTTP `status` and `message`, and no pod of the job appeared."""
    job = ctx.one(params.job)
    if job is None or not job.submissions:
        return not_run(params.job)
    sub = job.submissions[-1]
    expected_status, message = params.status, params.message
    got = Text(f"{who(job).zh} 于 {clock(sub.mark)} 提交，返回 HTTP {sub.status}（“{sub.message}”）",
               f"{who(job).en} was submitted at {clock(sub.mark)} and got HTTP {sub.status} (\"{sub.message}\")")
    if sub.accepted or job.attempts:
        return Outcome(INCONSISTENT, got + Text("；它被接受了，而 OpenPAI 会以超出配额拒绝它。",
                                                "; it was accepted, but OpenPAI rejects it for exceeding the quota."),
                       seqs(sub.mark))
    if sub.status != expected_status or (message and message not in (sub.message or "")):
        return Outcome(INCONSISTENT, got + Text(f"；预期 HTTP {expected_status}：{message}",
                                                f"; expected HTTP {expected_status}: {message}"), seqs(sub.mark))
    # the question may have other answers (a non-gang job of the same size is accepted): say which job cannot
    name = short_name(ctx, job)
    summary = Text(f"{name} 不能提交：提交时即被拒绝（HTTP {sub.status}），没有创建任何 Pod。",
                   f"{name} cannot be submitted: it was rejected at submission (HTTP {sub.status}) and no pod was "
                   "created.")
    refused = Text("，提交时即被拒绝，没有创建任何 Pod。", "; it was rejected at submission and no pod was created.")
    return Outcome(CONSISTENT, Text(f"{name} 不能提交：", f"{name} cannot be submitted: ") + got + refused,
                   seqs(sub.mark), summary=summary)


RULES: dict[str, RuleCheck] = {
    "gang-waits": gang_waits,
    "gang-together": gang_together,
    "incremental": incremental,
    "partial-run": partial_run,
    "rejected": rejected,
}
