"""Rules about incremental scheduling and the quota check (docs/lab-experiments.md#gang-scheduling; incremental
scheduling follows it on the same page): a non-gang job's tasks start one by one, an over-quota non-gang job runs
partially, an over-quota gang job is refused at submission."""

from __future__ import annotations

from hivedlab.basics.text import Text
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
    speaker,
    task_list,
    unknown_only,
    waited_for,
    where,
    who,
)
from hivedlab.checker.judging.timeline import Attempt, JobTimeline
from hivedlab.models.openpai.jobstate import CODE_ATTEMPT_COMPLETION
from hivedlab.models.scheduler_messages import Unknown
from hivedlab.plans.rule_params import JobWhile, PartialRun, Rejected


def _tasks(job: JobTimeline) -> dict[int, Attempt]:
    """The first attempt of each task index (the first framework attempt's pods)."""
    first: dict[int, Attempt] = {}
    for attempt in job.attempts:
        if attempt.task_index is not None and attempt.task_index not in first:
            first[attempt.task_index] = attempt
    return dict(sorted(first.items()))


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
        return _none_early(ctx, job, holder, tasks, evidence)
    lines = [Text(f"{i} 号子任务没有等待整个任务凑齐：{who(holder).zh} 仍在运行时，"
                  f"它于 {clock(a.started)} 在 {where(a)} 上开始运行",
                  f"task {i} did not wait for the whole job: it started at {clock(a.started)} on {where(a)} while "
                  f"{who(holder).en} still ran")
             for i, a in early.items()]
    if not rest:
        return Outcome(INCONSISTENT, Text("；".join(t.zh for t in lines) + "：所有子任务同时开始，看不出弹性调度。",
                                          "; ".join(t.en for t in lines) + ": all tasks started at once; nothing shows "
                                          "incremental scheduling."), tuple(sorted(set(evidence))))
    never_ran: list[int] = []
    after_sibling: list[int] = []
    stopped_at_once: list[int] = []
    for i, a in rest.items():
        evidence += [w.mark.seq for w in a.waits[:1]]
        found = _later_task(ctx, job, holder, (i, a), early, params.reason, evidence)
        if isinstance(found, Outcome):
            return found
        line, seen, how = found
        lines.append(line)
        evidence += seen
        never_ran += [i] if how == "never" else []
        after_sibling += [i] if how == "sibling" else []
        stopped_at_once += [i] if how == "stopped" else []
    close, summary = _summary(ctx, holder, early, rest, (never_ran, stopped_at_once, after_sibling))
    english = "; ".join(t.en for t in lines)
    text = Text("；".join(t.zh for t in lines) + close.zh, english[:1].upper() + english[1:] + close.en)
    return Outcome(CONSISTENT, text, tuple(sorted(set(evidence))), summary=summary)


def _none_early(ctx: Context, job: JobTimeline, holder: JobTimeline, tasks: dict[int, Attempt],
                evidence: list[int]) -> Outcome:
    """No task started while the holder ran: the job waited as a whole (or the log ends before it started)."""
    starts = [a.started for a in tasks.values() if a.started]
    if starts or ctx.run_finished:
        return Outcome(INCONSISTENT, Text(
            f"{who(holder).zh} 运行期间（到 {clock(holder.end)}）{who(job).zh} 没有任何子任务运行，"
            "尽管有空闲 GPU：它像群调度一样整体等待。",
            f"While {who(holder).en} ran (until {clock(holder.end)}) no task of {who(job).en} ran although a "
            "GPU was free: it waited as a whole, like a gang."), tuple(sorted(set(evidence))))
    return cut_short(ctx, f"日志在 {who(job).zh} 开始运行之前就结束了",
                     f"the log ends before {who(job).en} started")


def _later_task(ctx: Context, job: JobTimeline, holder: JobTimeline, task: tuple[int, Attempt],
                early: dict[int, Attempt], reason: str, evidence: list[int]
                ) -> Outcome | tuple[Text, list[int], str]:
    """A task that did not start at once: its line of the answer, the records it adds and how it ran (`sibling`: on
    the GPU an earlier task freed, `stopped`: started there and stopped in the same second, `holder`: after the holder
    ended, `never`: not at all, the job having succeeded);
    or the Outcome it settles the rule with (`evidence`: the records so far)."""
    i, a = task
    holder_end = released_at(holder)
    reasons = sorted({w.reason for w in a.waits})
    waited = Text(f"{i} 号子任务等待空闲的 GPU（{speaker(ctx).zh}：{'；'.join(reasons)}）" if reasons
                  else f"{i} 号子任务没有等待事件",
                  f"task {i} waited for a free GPU ({speaker(ctx).en}: {'; '.join(reasons)})" if reasons
                  else f"task {i} has no wait event")
    unknown = unknown_only(a.waits, reason)
    if unknown:
        said = Unknown(unknown).text()
        return Outcome(INCONCLUSIVE, waited + Text("：", ": ") + said + Text("。", "."),
                       tuple(sorted(set(evidence))), (said,))
    if reasons and not waited_for(reason, reasons):
        return Outcome(INCONSISTENT, waited + Text(f"，原因不是“{reason}”。", f", not for '{reason}'."),
                       tuple(sorted(set(evidence))))
    sibling = _freed_by(early, a)
    if a.started is not None and a.started.t < holder_end and sibling is not None:
        k, b = sibling
        by_fc = job.state == "SUCCEEDED" and a.fc_exit_code == CODE_ATTEMPT_COMPLETION
        if a.ended is not None and clock(a.ended) == clock(a.started):  # the timeline shows no run at all
            why = Text(f"：{who(job).zh} 已成功（minSucceededInstances 为 1），FrameworkController 停止了它",
                       f": FrameworkController stopped it because {who(job).en} had SUCCEEDED "
                       "(minSucceededInstances: 1)") if by_fc else Text("", "")
            line = waited + Text(f"，{k} 号子任务于 {clock(b.ended)} 结束后，于 {clock(a.started)} 在它释放的 "
                                 f"{where(a)} 上启动，并在同一秒停止", f" and was started at {clock(a.started)} on "
                                 f"{where(a)}, which task {k} freed when it ended at {clock(b.ended)}, and stopped "
                                 "in the same second") + why
            return line, [m.seq for m in (b.ended, a.started, a.ended) if m is not None], "stopped"
        stopped = (Text(f"，直到 {who(job).zh} 成功（minSucceededInstances 为 1）后被 FrameworkController 停止",
                        f", until FrameworkController stopped it because {who(job).en} had SUCCEEDED "
                        "(minSucceededInstances: 1)") if by_fc else Text("", ""))
        line = waited + Text(f"，{k} 号子任务于 {clock(b.ended)} 结束后，于 {clock(a.started)} 在它释放的 "
                             f"{where(a)} 上运行", f" and ran from {clock(a.started)} on {where(a)}, which "
                             f"task {k} freed when it ended at {clock(b.ended)}") + stopped
        return line, [m.seq for m in (b.ended, a.started) if m is not None], "sibling"
    if a.started is not None:
        holder_nodes = {h.node for h in holder.attempts if h.node}
        freed = Text(f" {who(holder).zh} 释放的", f" the one {who(holder).en} freed,") if a.node in holder_nodes \
            else Text("", "")
        return waited + Text(f"，{who(holder).zh} 结束后于 {clock(a.started)} 在{freed.zh} {where(a)} 上运行",
                             f" and ran from {clock(a.started)} on {where(a)},{freed.en} after "
                             f"{who(holder).en} ended"), [], "holder"
    if job.state == "SUCCEEDED" and job.finished is not None:
        return waited + Text(
            f"，但从未运行：{who(job).zh} 已于 {clock(job.finished)} 成功（minSucceededInstances 为 1），"
            "FrameworkController 停止了剩余的子任务",
            f" but never ran: {who(job).en} had already SUCCEEDED at {clock(job.finished)} "
            "(minSucceededInstances: 1), so FrameworkController stopped the remaining task"), [], "never"
    if ctx.run_finished:
        return Outcome(INCONSISTENT, waited + Text("，之后一直没有运行，任务也没有成功。",
                                                   " and never ran, and the job did not succeed."),
                       tuple(sorted(set(evidence))))
    return cut_short(ctx, f"日志在 {who(job).zh} 的 {i} 号子任务运行之前就结束了",
                     f"the log ends before task {i} of {who(job).en} ran")


def _summary(ctx: Context, holder: JobTimeline, early: dict[int, Attempt], rest: dict[int, Attempt],
             how: tuple[list[int], list[int], list[int]]) -> tuple[Text, Text]:
    """The answer's closing sentence and its short form, for how the later tasks ran (`how`: the tasks that never
    ran, those started and stopped in the same second, those that ran on a GPU a sibling freed)."""
    never_ran, stopped_at_once, after_sibling = how
    first, later = task_list(list(early)), task_list(list(rest))
    if never_ran:
        close = Text("。子任务没有一起等待，也没有一起运行：任务只靠先开始的子任务就成功了。",
                     ". The tasks neither waited nor ran together: the job succeeded on the task that started first.")
        summary = Text(f"{first.zh}不等整个任务就开始运行；"
                       f"{later.zh}等待空闲的 GPU，但任务已成功（minSucceededInstances 为 1），它从未运行。",
                       f"{first.en.capitalize()} started without waiting for the whole job; {later.en} waited for "
                       "a free GPU but never ran, because the job had already succeeded (minSucceededInstances: 1).")
    elif stopped_at_once:
        close = Text("。子任务没有一起等待，也没有一起运行：后来的子任务在启动的同一秒就停止了。",
                     ". The tasks neither waited nor ran together: the later task was stopped in the same second it "
                     "was started.")
        summary = Text(f"{first.zh}不等整个任务就开始运行；{later.zh}等待空闲的 GPU，在先开始的子任务释放的 GPU "
                       "上启动，同一秒就停止了：子任务没有一起运行。",
                       f"{first.en.capitalize()} started without waiting for the whole job; {later.en} waited for "
                       "a free GPU, was started on the one the first freed and stopped in the same second: the tasks "
                       "did not run together.")
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
    return close, summary


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


RULES: dict[str, RuleCheck] = {"incremental": incremental, "partial-run": partial_run, "rejected": rejected}
