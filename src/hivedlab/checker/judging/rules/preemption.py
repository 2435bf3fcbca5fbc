"""Rules about priority and preemption (docs/lab-experiments.md#priority-and-preemption; the opportunistic job
follows it on the same page): the preemptor does not wait, the victim is re-created and runs again after it. A job
that starts while another runs (the opportunistic job, and a non-gang job's first task) is `no_wait.py`'s."""

from __future__ import annotations

from typing import Any

from hivedlab.basics.text import Text
from hivedlab.checker.judging.rules.cells import (
    cell_ids,
    cells_text,
    free_cells,
    held_at,
)
from hivedlab.checker.judging.rules.rule_base import (
    CONSISTENT,
    INCONSISTENT,
    INF,
    Context,
    Outcome,
    RuleCheck,
    between,
    clock,
    cut_short,
    end_of,
    missing,
    not_run,
    released_at,
    seqs,
    short_name,
    speaker,
    started_seq,
    waited_for,
    where,
    who,
)
from hivedlab.checker.judging.timeline import Attempt, JobTimeline, Mark
from hivedlab.plans.rule_params import Preempts, RetriedAfter


def _running_at(job: JobTimeline, t: float) -> Attempt | None:
    for attempt in job.attempts:
        if attempt.started is not None and attempt.started.t <= t and (attempt.ended is None or attempt.ended.t >= t):
            return attempt
    return None


def preemption_how(victim: Attempt) -> Text:
    """What shows the attempt was preempted: the event, FrameworkController's code, or its deletion and re-creation."""
    if victim.preempted is not None:
        event = victim.preempted_by or ""
        return Text(f"（事件 Preempted，第 {victim.preempted.seq} 条记录：{event}）",
                    f" (event Preempted, record {victim.preempted.seq}: {event})")
    if victim.deleted is not None and victim.recreated is not None:
        return Text(f"（日志中没有 Preempted 事件：Pod 在运行中于第 {victim.deleted.seq} 条记录被删除，"
                    f"第 {victim.recreated.seq} 条记录以同名新 Pod 重建）",
                    f" (no Preempted event in the log: the pod was deleted while running at record "
                    f"{victim.deleted.seq} and re-created under the same name at record {victim.recreated.seq})")
    return Text("（FrameworkController 退出码 −101 PodExternalDeleted）",
                " (FrameworkController exit code -101 PodExternalDeleted)")


def _preemptor_wait(first: Attempt, victim: Attempt, name: str) -> Text:
    """What the preemptor's pod did between the preemption and its start: waited (as the table shows) or not; `name`
    (the preemptor's short name) says whose pod, where a pronoun would read as the job just preempted."""
    if not first.waits or first.bound is None:
        return Text("", "")
    exited = victim.terminated
    until = Text(f"（被抢占的 Pod 于 {clock(exited)} 退出）", f" (the preempted pod exited at {clock(exited)})") \
        if exited is not None and exited.seq <= first.bound.seq else Text("", "")
    return Text(f"{name} 的 Pod 只等待调度到 {clock(first.bound)}{until.zh}，",
                f"{name}'s pod waited to be scheduled only until {clock(first.bound)}{until.en}, and")


def _reran_before(low: JobTimeline, victim: Attempt, started: Mark, taken: tuple[Attempt, ...]) -> Attempt | None:
    """An attempt of the victim's job that started after the preemption and before the preemptor started, on cells
    the preemptor then took (a rerun on other, free cells takes nothing back)."""
    after = victim.ended.seq if victim.ended is not None else INF
    wanted = {cell for attempt in taken for cell in attempt.cells}
    return next((a for a in low.attempts if a.started is not None and after < a.started.seq < started.seq
                 and (not wanted or not a.cells or wanted & set(a.cells))), None)


def _on_free_cells(ctx: Context, job: JobTimeline, submitted: Mark, first: Attempt
                   ) -> tuple[Text, dict[str, Any]] | None:
    """The preemptor's VC had free cells of its own when it was submitted and the preemptor ran on them: HiveD
    needs to preempt nothing (a group's config with more GPUs than the manual's, docs/checker.md#cells-not-machines)."""
    if not job.virtual_cluster or not first.cells:
        return None
    spare, free = free_cells(ctx, job.virtual_cluster, submitted.seq)
    if not spare or not set(first.cells) <= set(free):
        return None
    return (Text(f"VC {job.virtual_cluster} 在提交时还有空闲的 GPU（{cells_text(free)}）",
                 f"VC {job.virtual_cluster} still had free cells when it was submitted ({cells_text(free)})"),
            {"vc": job.virtual_cluster, "free_cells": cell_ids(free)})


def preempts(ctx: Context, params: Preempts) -> Outcome:
    """The preemptor did not wait for the victim: the victim's running attempt was preempted after the preemptor's
    submission (event `Preempted`, FC code −101, or deleted while running and re-created), and the preemptor started
    before the victim ran again."""
    high, low = ctx.one(params.preemptor), ctx.one(params.victim)
    if high is None or high.submitted is None:
        return not_run(params.preemptor)
    if low is None:
        return not_run(params.victim)
    submitted = high.submitted
    victim_attempt = _running_at(low, submitted.t)
    if victim_attempt is None:
        return missing(f"提交 {who(high).zh}（第 {submitted.seq} 条记录）时 {who(low).zh} 没有在运行"
                       "（计划的等待步骤没有完成？）",
                       f"{who(low).en} was not running when {who(high).en} was submitted (record {submitted.seq}; did "
                       "the plan's wait step finish?)")
    started = high.first_started
    preempted = [a for a in low.attempts if a.outcome == "preempted" and a.ended and a.ended.t >= submitted.t]
    base = Text(
        f"{who(high).zh} 于 {clock(submitted)} 提交，此时 {who(low).zh} 正在 {where(victim_attempt)} 上运行。",
        f"{who(high).en} was submitted at {clock(submitted)} while {who(low).en} ran on {where(victim_attempt)}.",
    )
    victim = preempted[0] if preempted else None
    how = preemption_how(victim) if victim is not None else Text("", "")
    low_end = low.end
    if victim is not None and started is not None:
        return _preempted(ctx, (high, low), submitted, started, victim, base)
    if victim is not None:
        if low_end is not None or ctx.run_finished:
            text = base + Text(f"{who(low).zh} 在 {clock(victim.ended)} 被抢占{how.zh}，"
                               f"但 {who(high).zh} 一直没有运行。",
                               f"{who(low).en} was preempted at {clock(victim.ended)}{how.en}, but {who(high).en} "
                               "never ran.")
            return Outcome(INCONSISTENT, text, seqs(submitted, victim.preempted, victim.ended, low_end))
        return cut_short(ctx, f"{who(low).zh} 已被抢占，但到日志最后 {who(high).zh} 还没有开始运行",
                         f"{who(low).en} was preempted, but {who(high).en} had not started by the log's last record")
    if started is not None and low_end is not None and started.t >= low_end.t:
        text = base + Text(
            f"{who(high).zh} 一直等到 {who(low).zh} 于 {clock(low_end)} 结束后，"
            f"才在 {clock(started)} 开始运行，没有发生抢占"
            "（没有 Preempted 事件，也没有在运行中被删除后重建）。",
            f"{who(high).en} waited until {who(low).en} ended at {clock(low_end)} "
            f"and only started at {clock(started)}; "
            "nothing was preempted (no Preempted event, no deletion while running followed by a re-created pod).",
        )
        return Outcome(INCONSISTENT, text, seqs(submitted, low_end, started))
    if started is not None and (low_end is not None or ctx.run_finished):
        return _ran_beside(ctx, (high, low), submitted, started, base)
    if started is None and (low_end is not None or ctx.run_finished):
        text = base + Text(f"{who(high).zh} 一直没有运行，{who(low).zh} 也没有被抢占。",
                           f"{who(high).en} never ran and {who(low).en} was not preempted.")
        return Outcome(INCONSISTENT, text, seqs(submitted, low_end))
    return cut_short(ctx, f"到日志最后 {who(high).zh} 还没有开始运行，{who(low).zh} 也没有被抢占",
                     f"by the log's last record {who(high).en} had not started and {who(low).en} had not been "
                     "preempted")


def _preempted(ctx: Context, jobs: tuple[JobTimeline, JobTimeline], submitted: Mark, started: Mark,
               victim: Attempt, base: Text) -> Outcome:
    """`preempts` where the victim was preempted and the preemptor started: consistent unless the victim ran again on
    the preemptor's cells before the preemptor started."""
    high, low = jobs
    how = preemption_how(victim)
    first = min((a for a in high.attempts if a.started), key=started_seq)
    evidence = seqs(submitted, victim.preempted, victim.deleted, victim.recreated, victim.ended, started,
                    first.bound)
    rerun = _reran_before(low, victim, started, tuple(a for a in high.attempts if a.bound is not None))
    if rerun is None:
        high_name, low_name = short_name(ctx, high), short_name(ctx, low)  # named in full in `base` already
        text = base + Text(
            f"{high_name} 没有等 {low_name} 运行完："
            f"HiveD 在 {clock(victim.ended)} 抢占了 {low_name}{how.zh}，",
            f"{high_name} did not wait for {low_name} to finish: HiveD preempted {low_name} at "
            f"{clock(victim.ended)}{how.en};",
        ) + _preemptor_wait(first, victim, high_name) + Text(
            f"{high_name} 于 {clock(started)} 在 {where(first)} 上开始运行"
            f"（提交后 {between(submitted, started).zh}）。",
            f"it started at {clock(started)} on {where(first)}, {between(submitted, started).en} after submission.",
        )
        summary = Text(f"{high_name} 没有等 {low_name} 运行完：HiveD 抢占了 {low_name}，{high_name} 提交后 "
                       f"{between(submitted, started).zh}开始运行。",
                       f"{high_name} did not wait for {low_name} to finish: HiveD preempted {low_name}, and "
                       f"{high_name} started {between(submitted, started).en} after submission.")
        return Outcome(CONSISTENT, text, evidence, summary=summary)
    text = base + Text(
        f"{who(low).zh} 在 {clock(victim.ended)} 被抢占{how.zh}，但它于 {clock(rerun.started)} 重新运行，"
        f"{who(high).zh} 直到 {clock(started)} 才开始运行。",
        f"{who(low).en} was preempted at {clock(victim.ended)}{how.en}, but it ran again from "
        f"{clock(rerun.started)} and {who(high).en} only started at {clock(started)}.")
    return Outcome(INCONSISTENT, text, tuple(sorted({*evidence, *seqs(rerun.started)})))


def _ran_beside(ctx: Context, jobs: tuple[JobTimeline, JobTimeline], submitted: Mark, started: Mark,
                base: Text) -> Outcome:
    """`preempts` where the preemptor started while the victim ran on, never preempted: consistent only when the
    preemptor ran on its VC's cells that were free at its submission."""
    high, low = jobs
    low_end = low.end
    first = min((a for a in high.attempts if a.started), key=started_seq)
    found = _on_free_cells(ctx, high, submitted, first)
    if found is not None:
        free, facts = found
        text = base + Text(
            f"{free.zh}：{who(high).zh} 没有等待，也无需抢占，于 {clock(started)} 在 {where(first)} 上开始运行，"
            f"{who(low).zh} 继续运行。",
            f"{free.en}: {who(high).en} did not wait and preempted nothing; it started at {clock(started)} on "
            f"{where(first)} while {who(low).en} kept running.")
        high_name, low_name = short_name(ctx, high), short_name(ctx, low)
        summary = Text(f"{high_name} 没有等待也无需抢占：{low_name} 继续运行时，"
                       f"它在空闲的 {where(first)} 上开始运行。",
                       f"{high_name} neither waited nor preempted: it started on the free {where(first)} while "
                       f"{low_name} kept running.")
        return Outcome(CONSISTENT, text, seqs(submitted, first.bound, started), facts=facts, summary=summary)
    until = Text(f"到 {clock(low_end)}", f"until {clock(low_end)}") if low_end else Text("到日志结束",
                                                                                       "to the end of the log")
    text = base + Text(
        f"{who(high).zh} 于 {clock(started)} 在 {where(first)} 上开始运行，而 {who(low).zh} 仍在运行{until.zh}，"
        "从未被抢占（没有 Preempted 事件，也没有在运行中被删除后重建）。",
        f"{who(high).en} started at {clock(started)} on {where(first)} while {who(low).en} still ran {until.en}; "
        f"it was never preempted (no Preempted event, no deletion while running followed by a re-created pod).")
    return Outcome(INCONSISTENT, text, seqs(submitted, first.bound, started, low_end))


def _free_at_bind(ctx: Context, attempt: Attempt) -> bool:
    """The attempt was bound to leaf cells no other pod held at that moment."""
    if attempt.bound is None or not attempt.cells:
        return False
    others = {cell for _, a in held_at(ctx.timeline, attempt.bound.seq) if a is not attempt for cell in a.cells}
    return not others & set(attempt.cells)


def _spared(ctx: Context, params: RetriedAfter, low: JobTimeline) -> Outcome | None:
    """The victim was never preempted because the rule's `preemptor` ran on free cells of its own VC, and the victim
    ran on to its end: nothing to re-create. None when that is not what the log shows."""
    high = ctx.one(params.preemptor) if params.preemptor else None
    started = high.first_started if high is not None else None
    if high is None or high.submitted is None or started is None or low.end is None:
        return None
    first = min((a for a in high.attempts if a.started), key=started_seq)
    found = _on_free_cells(ctx, high, high.submitted, first)
    if found is None:
        return None
    free, facts = found
    text = Text(f"{free.zh}，{who(high).zh} 在 {where(first)} 上运行而没有抢占 {who(low).zh}；"
                f"{who(low).zh} 没有被抢占、也无需重建，一直运行到 {clock(low.end)}（{low.state}）。",
                f"{free.en}, so {who(high).en} ran on {where(first)} without preempting {who(low).en}; "
                f"{who(low).en} was never preempted, had nothing to re-create and ran on until {clock(low.end)} "
                f"({low.state}).")
    high_name, low_name = short_name(ctx, high), short_name(ctx, low)
    summary = Text(f"{low_name} 没有被抢占：{high_name} 用了空闲的 GPU，{low_name} 一直运行到结束（{low.state}）。",
                   f"{low_name} was never preempted: {high_name} used a free GPU, and {low_name} ran on to its end "
                   f"({low.state}).")
    return Outcome(CONSISTENT, text, seqs(high.submitted, first.bound, low.end), facts=facts, summary=summary)


def retried_after(ctx: Context, params: RetriedAfter) -> Outcome:
    """The preempted victim was re-created (same pod name, new uid), waited (optionally for `reason`), ran again only
    after `after` had ended (or freed its cells) and finished; or, where the cluster had a free GPU no pod held (a
    group with more GPUs than the manual's), ran again there at once. Given `preemptor`, a victim that was never
    preempted because the preemptor found free cells of its own VC (`preempts`) ran on: nothing to re-create."""
    low, high = ctx.one(params.victim), ctx.one(params.after)
    if low is None:
        return not_run(params.victim)
    if high is None:
        return not_run(params.after)
    preempted = [a for a in low.attempts if a.outcome == "preempted"]
    if not preempted:
        spared = _spared(ctx, params, low)
        if spared is not None:
            return spared
        return missing(f"{who(low).zh} 没有被抢占过，也就没有重建",
                       f"{who(low).en} was never preempted, so it was never re-created")
    victim = preempted[0]
    later = [a for a in low.attempts if a.created and victim.created and a.created.seq > victim.created.seq
             and a.pod_name == victim.pod_name]
    if not later:
        if ctx.run_finished:
            return Outcome(INCONSISTENT, Text(f"{who(low).zh} 于 {clock(victim.ended)} 被抢占"
                                              f"{preemption_how(victim).zh}后没有以新 Pod 重建。",
                                              f"{who(low).en} was preempted at {clock(victim.ended)}"
                                              f"{preemption_how(victim).en} and was not re-created."),
                           seqs(victim.preempted, victim.ended))
        return cut_short(ctx, f"到日志最后 {who(low).zh} 还没有重建", f"{who(low).en} had not been re-created by the "
                         "log's last record")
    retry = later[0]
    reasons = sorted({w.reason for w in retry.waits})
    high_end = high.end
    text = Text(
        f"{who(low).zh} 于 {clock(retry.created)} 以同名新 Pod 重建（{retry.pod_name}，新 uid）",
        f"{who(low).en} was re-created at {clock(retry.created)} (pod {retry.pod_name}, same name, new uid)",
    )
    if reasons:
        said = speaker(ctx)
        text = text + Text(f"并等待（{said.zh}：{'；'.join(reasons)}）",
                           f" and waited ({said.en}: {'; '.join(reasons)})")
    evidence = list(seqs(victim.ended, retry.created, high_end, retry.started, low.end))
    evidence += [w.mark.seq for w in retry.waits[:1]]
    if retry.started is None:
        return _not_restarted(ctx, low, text, evidence)
    started_text = Text(f"，{clock(retry.started)} 在 {where(retry)} 上重新运行",
                        f", and ran again from {clock(retry.started)} on {where(retry)}")
    text = text + started_text
    reason = params.reason
    facts: dict[str, Any] = {}
    if retry.started.t < released_at(high):
        if not _free_at_bind(ctx, retry):
            return Outcome(INCONSISTENT, text + Text(f"，而此时 {who(high).zh} 还没有结束。",
                                                     f", before {who(high).en} had ended."), tuple(sorted(evidence)))
        text = text + Text(f"：{who(high).zh} 还在运行，但 {cells_text(retry.cells)} 当时没有任何 Pod 占用",
                           f": {who(high).en} still ran, but no pod held {cells_text(retry.cells)} then")
        facts = {"free_cells": cell_ids(retry.cells)}
    elif not waited_for(reason, reasons):
        return Outcome(INCONSISTENT, text + Text(f"。它没有因“{reason}”等待。", f". It did not wait for '{reason}'."),
                       tuple(sorted(evidence)))
    else:
        text = text + Text(f"，即 {who(high).zh} 于 {clock(high_end)} 结束之后",
                           f", after {who(high).en} ended at {clock(high_end)}")
    return _finished(ctx, (low, high), text, evidence, waited=bool(reasons), facts=facts)


def _not_restarted(ctx: Context, low: JobTimeline, text: Text, evidence: list[int]) -> Outcome:
    """`retried_after` where the re-created pod never ran."""
    if low.state == "SUCCEEDED":
        return missing(f"{who(low).zh} 的新 Pod 没有运行，但作业状态是 SUCCEEDED：日志没有显示是哪个 Pod 完成了它",
                       f"{who(low).en}'s new pod never ran, yet the job SUCCEEDED: the log does not show which pod "
                       "completed it")
    if not ctx.run_finished:
        return cut_short(ctx, f"到日志最后 {who(low).zh} 的新 Pod 还没有运行",
                         f"{who(low).en}'s new pod had not run by the log's last record")
    return Outcome(INCONSISTENT, text + Text("，但之后一直没有运行。", ", but it never ran again."),
                   tuple(sorted(evidence)))


def _finished(ctx: Context, jobs: tuple[JobTimeline, JobTimeline], text: Text, evidence: list[int], *,
              waited: bool, facts: dict[str, Any]) -> Outcome:
    """`retried_after` once the re-created pod ran (on free cells, when `facts` names them): consistent when the
    victim then finished."""
    low, high = jobs
    low_end = low.end
    if low_end is None:
        return cut_short(ctx, f"到日志最后 {who(low).zh} 还没有结束", f"{who(low).en} had not finished by the log's "
                         "last record")
    submitted = high.submitted
    both = max(low_end.t, end_of(high))
    took = between(submitted, _at(both, low_end, high)) if submitted else None
    low_name, high_name = short_name(ctx, low), short_name(ctx, high)  # both named in full earlier in the answer
    # the two jobs by name: a run may hold more jobs than these two
    total = Text(f"；提交 {high_name} 后 {took.zh}，{low_name} 和 {high_name} 都已结束" if took else "",
                 f"; {low_name} and {high_name} were both done {took.en} after {high_name} was submitted"
                 if took else "")
    text = text + Text(f"；{low_name} 于 {clock(low_end)} 结束（{low.state}）", f"; {low_name} finished at "
                       f"{clock(low_end)} ({low.state})") + total + Text("。", ".")
    summary = _retry_summary(low_name, high_name, waited, bool(facts)) + Text(
        f"；提交 {high_name} 后 {took.zh}，{low_name} 和 {high_name} 都已结束。" if took else "。",
        f"; {low_name} and {high_name} were both done {took.en} after {high_name} was submitted." if took else ".")
    return Outcome(CONSISTENT, text, tuple(sorted(evidence)), facts=facts, summary=summary)


def _retry_summary(low: str, high: str, waited: bool, on_free_cells: bool) -> Text:
    """The short answer of `retried_after` for the branch it took: ran again at once on free cells while `high` still
    ran, or only after `high` ended; "waited" only where the new pod did wait."""
    if on_free_cells:
        return Text(f"{low} 被抢占后以新 Pod 重建" + ("并等待" if waited else "")
                    + f"，{high} 仍在运行时即在空闲 GPU 上重新运行",
                    f"{low} was re-created after the preemption" + (", waited," if waited else "")
                    + f" and ran again on a free GPU while {high} still ran")
    return Text(f"{low} 被抢占后以新 Pod 重建" + ("并等待" if waited else "") + f"，{high} 结束后才重新运行",
                f"{low} was re-created after the preemption" + (", waited," if waited else "")
                + f" and ran again only after {high} ended")


def _at(t: float, low_end: Mark, high: JobTimeline) -> Mark:
    """The mark of the later of the two jobs' ends (`t` is that end's time)."""
    high_end = high.end
    return high_end if high_end is not None and high_end.t == t else low_end


RULES: dict[str, RuleCheck] = {"preempts": preempts, "retried-after": retried_after}
