"""Rules about switching HiveD's config while jobs run (the optional `reconfig` plan, docs/experiment-plans.md).

The switch is the plan's `switch_config` step: its `step` record (status reached) marks the moment the new config
was in place. HiveD's work-preserving reconfiguration (docs/hived-model.md, "Restart and recovery") re-adds every
bound pod, so a switch by itself ends no task; a group whose virtual cluster or cell types are gone keeps running,
demoted to opportunistic.
"""

from __future__ import annotations

from hivedlab.basics.text import Text
from hivedlab.checker.judging.rules.preemption import preempts
from hivedlab.checker.judging.rules.rule_base import (
    CONSISTENT,
    INCONCLUSIVE,
    INCONSISTENT,
    Context,
    Outcome,
    RuleCheck,
    clock,
    join,
    missing,
    not_run,
    seqs,
    where,
    who,
)
from hivedlab.checker.judging.timeline import Attempt, JobTimeline, Mark
from hivedlab.models.openpai.naming import scheduler_name
from hivedlab.plans.rule_params import JobsAtSwitch, Preempts, PreemptsOneOf, RemovedVcJob


def switch_mark(ctx: Context, config: str) -> Mark | None:
    """When the plan's `switch_config` step to `config` was reached."""
    for step in ctx.timeline.steps:
        body = step.step if isinstance(step.step, dict) else {}
        if step.status == "reached" and body.get("switch_config") == config:
            return step.mark
    return None


def _no_switch(config: str) -> Outcome:
    return missing(f"日志中没有切换到 {config} 配置的步骤记录", f"the log records no switch to the {config} config")


def _running_at(job: JobTimeline, mark: Mark) -> Attempt | None:
    for attempt in job.attempts:
        started, ended = attempt.started, attempt.ended
        if started is not None and started.seq < mark.seq and (ended is None or ended.seq > mark.seq):
            return attempt
    return None


def _next_submission(ctx: Context, after: Mark) -> Mark | None:
    marks = [s.mark for job in ctx.timeline.jobs for s in job.submissions if s.accepted and s.mark.seq > after.seq]
    return min(marks, key=lambda m: m.seq) if marks else None


def survives_switch(ctx: Context, params: JobsAtSwitch) -> Outcome:
    """Every task attempt of `jobs` that ran when the config was switched went on running: it was still running at
    the next accepted submission after the switch (or at the end of the log), or had ended by itself (exit 0)."""
    switch = switch_mark(ctx, params.config)
    if switch is None:
        return _no_switch(params.config)
    until = _next_submission(ctx, switch)
    kept, ended, evidence = [], [], [switch.seq]
    for key in params.jobs:
        job = ctx.one(key)
        if job is None:
            return not_run(key)
        attempt = _running_at(job, switch)
        if attempt is None:
            return missing(f"切换配置时 {who(job).zh} 没有在运行", f"{who(job).en} was not running when the config "
                           "was switched")
        end = attempt.ended
        evidence += [m.seq for m in (attempt.started, end) if m is not None]
        by_itself = attempt.outcome == "succeeded"
        if end is not None and not by_itself and (until is None or end.seq < until.seq):
            ended.append(Text(f"{who(job).zh} 在 {where(attempt)} 上的任务于 {clock(end)} 结束（{attempt.outcome}）",
                              f"{who(job).en}'s task on {where(attempt)} ended at {clock(end)} ({attempt.outcome})"))
        else:
            kept.append(Text(f"{who(job).zh}（{where(attempt)}）", f"{who(job).en} ({where(attempt)})"))
    head = Text(f"HiveD 于 {clock(switch)} 换成 {params.config} 配置。", f"HiveD switched to the {params.config} "
                f"config at {clock(switch)}.")
    evidence += [until.seq] if until is not None else []
    if ended:
        text = head + Text("切换后、下一次提交之前：", " Before the next submission: ") + join(ended) + Text(
            "。", ".")
        return Outcome(INCONSISTENT, text, tuple(sorted(set(evidence))))
    text = head + Text("切换没有结束任何任务，继续运行的有：", " The switch ended no task; still running: ") + join(
        kept, "、", ", ") + Text("。", ".")
    return Outcome(CONSISTENT, text, tuple(sorted(set(evidence))))


def preempts_one_of(ctx: Context, params: PreemptsOneOf) -> Outcome:
    """`preempts` for several possible victims: the preemptor did not wait; it preempted one of `jobs` (whichever
    HiveD picked) and started before that victim finished."""
    preemptor = ctx.one(params.preemptor)
    mark = preemptor.framework_name if preemptor is not None else None

    def named(key: str) -> bool:  # the victim's Preempted event names the preemptor's pod
        victim = ctx.one(key)
        return bool(mark and victim and any(mark in (a.preempted_by or "") for a in victim.attempts))

    keys = sorted(params.jobs, key=lambda key: not named(key))
    outcomes = [preempts(ctx, Preempts(params.preemptor, key)) for key in keys]
    for outcome in outcomes:
        if outcome.verdict == CONSISTENT:
            return outcome
    for verdict in (INCONCLUSIVE, INCONSISTENT):
        for outcome in outcomes:
            if outcome.verdict == verdict:
                return outcome
    return outcomes[0]


def _holders(ctx: Context, vc: str, switch: Mark) -> list[tuple[JobTimeline, Attempt]]:
    """The jobs of `vc` running at the switch, each with its running attempt: HiveD re-adds them lazy-preempted and
    lists `vc` for their opportunistic cells, so the restarted rest-server keeps `vc` and its grants
    (docs/experiment-plans.md)."""
    return [(job, attempt) for job in ctx.timeline.jobs if job.virtual_cluster == vc
            for attempt in (_running_at(job, switch),) if attempt is not None]


def submission_after_switch(ctx: Context, params: RemovedVcJob) -> Outcome:
    """A submission to `vc`, gone from the new config, made after the switch. While a job of `vc` ran at the switch,
    HiveD still lists `vc` and the rest-server keeps its grant: the job is accepted, but no scheduler serves `vc`
    any more (one kube-scheduler per VC of the config), so its pods are never scheduled and no scheduler writes an
    event. Without such a job the grant is gone: HTTP 403 `User <user> is not allowed to do operation in <vc>`."""
    switch = switch_mark(ctx, params.config)
    if switch is None:
        return _no_switch(params.config)
    job, vc = ctx.one(params.job), params.vc
    if job is None or not job.submissions:
        return not_run(params.job)
    sub = job.submissions[-1]
    if sub.mark.seq < switch.seq:
        return missing(f"{who(job).zh} 在切换配置之前就提交了", f"{who(job).en} was submitted before the switch")
    got = Text(f"切换配置（{clock(switch)}）后，{who(job).zh} 于 {clock(sub.mark)} 提交，返回 HTTP {sub.status}",
               f"After the switch ({clock(switch)}), {who(job).en} was submitted at {clock(sub.mark)} and got HTTP "
               f"{sub.status}")
    holders = _holders(ctx, vc, switch)
    if not holders:
        refused = f"is not allowed to do operation in {vc}"
        said = Text(f"（{sub.message}）", f" ({sub.message})")
        if not sub.accepted and sub.status == 403 and refused in (sub.message or ""):
            why = Text(f"：切换时没有 {vc} 的任务在运行，HiveD 不再列出 {vc}，rest-server 重启时删除了它的授权。",
                       f": no job of {vc} ran at the switch, so HiveD no longer lists {vc} and the restarted "
                       "rest-server dropped its grant.")
            return Outcome(CONSISTENT, got + said + why, seqs(switch, sub.mark))
        why = Text(f"；切换时没有 {vc} 的任务在运行，应返回 HTTP 403：{refused}。",
                   f"; no job of {vc} ran at the switch, so HTTP 403 was expected: {refused}.")
        return Outcome(INCONSISTENT, got + said + why, seqs(switch, sub.mark))
    held = join([who(h) for h, _ in holders], "、", ", ")
    because = Text(f"切换时 {held.zh} 仍在运行，HiveD 继续列出 {vc}，rest-server 保留了 {vc} 的授权",
                   f"{held.en} ran at the switch, so HiveD still lists {vc} and the rest-server kept its grant")
    holder_seqs = [a.started for _, a in holders if a.started is not None]
    if not sub.accepted:
        return Outcome(INCONSISTENT, got + Text(f"（{sub.message}）；但", f" ({sub.message}); but ") + because
                       + Text("，提交应被接受。", ", so it should have been accepted."),
                       seqs(switch, sub.mark, *holder_seqs))
    bound = [a for a in job.attempts if a.bound is not None]
    if bound:
        first = bound[0]
        return Outcome(INCONSISTENT, got + Text(f"，并于 {clock(first.bound)} 被调度到 {where(first)}；但新配置中没有 "
                                                f"{vc} 的调度器。", f", and was bound to {where(first)} at "
                                                f"{clock(first.bound)}; but the new config runs no scheduler for "
                                                f"{vc}."), seqs(switch, sub.mark, first.bound))
    waits = [w for a in job.attempts for w in a.waits]
    if waits:
        first_wait = waits[0]
        tried = Text(f"；于 {clock(first_wait.mark)} 有调度器为它写了事件（{first_wait.reason}），但新配置中没有 {vc} "
                     "的调度器。", f"; a scheduler wrote an event about it at {clock(first_wait.mark)} "
                     f"({first_wait.reason}), but the new config runs no scheduler for {vc}.")
        return Outcome(INCONSISTENT, got + tried, seqs(switch, sub.mark, first_wait.mark))
    created = [a.created for a in job.attempts if a.created is not None]
    if not created:
        return missing(f"日志中没有 {who(job).zh} 的 Pod", f"the log has no pod of {who(job).en}")
    until = job.end or job.last_ended
    text = got + Text("，被接受：", ", accepted: ") + because + Text(
        f"。它的 Pod 于 {clock(created[0])} 创建，但从未被调度，也没有任何调度事件（新配置中没有 {vc} 的调度器 "
        f"{scheduler_name(vc)}），直到 {clock(until) if until else '日志结束'}。",
        f". Its pod was created at {clock(created[0])} but never scheduled, with no scheduler event (the new config "
        f"runs no {scheduler_name(vc)}), until {clock(until) if until else 'the log ended'}.")
    return Outcome(CONSISTENT, text, seqs(switch, sub.mark, *holder_seqs, created[0], *([until] if until else [])))


def stranded_after_switch(ctx: Context, params: RemovedVcJob) -> Outcome:
    """The job of the VC `vc` that the new config no longer has lost its running attempt after the switch, and
    none of its later attempts was ever bound."""
    switch = switch_mark(ctx, params.config)
    if switch is None:
        return _no_switch(params.config)
    if params.vc in ctx.timeline.vc_nodes:
        return missing(f"日志中的最终配置仍有 {params.vc}", f"the log's final config still has {params.vc}")
    job = ctx.one(params.job)
    if job is None:
        return not_run(params.job)
    running = _running_at(job, switch)
    if running is None:
        return missing(f"切换配置时 {who(job).zh} 没有在运行", f"{who(job).en} was not running when the config was "
                       "switched")
    later = [a for a in job.attempts if a.created is not None and a.created.seq > switch.seq]
    bound = [a for a in later if a.bound is not None]
    if running.ended is None or running.outcome != "preempted":
        return missing(f"{who(job).zh} 在切换后没有被抢占", f"{who(job).en} was not preempted after the switch")
    head = Text(f"{who(job).zh} 在 {where(running)} 上的任务于 {clock(running.ended)} 被抢占",
                f"{who(job).en}'s task on {where(running)} was preempted at {clock(running.ended)}")
    if bound:
        first = bound[0]
        text = head + Text(f"，之后的尝试于 {clock(first.bound)} 又在 {where(first)} 上运行。",
                           f", and a later attempt was bound to {where(first)} at {clock(first.bound)}.")
        return Outcome(INCONSISTENT, text, seqs(switch, running.ended, first.bound))
    if not later:
        return missing(f"{who(job).zh} 被抢占后没有新的尝试", f"{who(job).en} has no new attempt after its preemption")
    waits = [w for a in later for w in a.waits]
    reason = waits[-1].reason.rsplit("]: ", 1)[-1] if waits else ""
    why = Text(f"（{reason}）", f" ({reason})") if reason else Text("", "")
    ends = [m for a in later for m in (a.ended,) if m is not None]
    text = head + Text(f"；它的新尝试从未被调度{why.zh}，"
                       f"直到 {clock(max(ends, key=lambda m: m.seq)) if ends else '日志结束'}"
                       f"：{params.vc} 已不存在。",
                       f"; its new attempt was never scheduled{why.en} until "
                       f"{clock(max(ends, key=lambda m: m.seq)) if ends else 'the log ended'}: {params.vc} is gone.")
    marks = [switch, running.ended, *(a.created for a in later), *(w.mark for w in waits[:1]), *ends[-1:]]
    return Outcome(CONSISTENT, text, seqs(*marks))


RULES: dict[str, RuleCheck] = {
    "survives-switch": survives_switch,
    "preempts-one-of": preempts_one_of,
    "submission-after-switch": submission_after_switch,
    "stranded-after-switch": stranded_after_switch,
}
