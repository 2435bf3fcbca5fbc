"""Rules about where jobs run and how they queue inside a VC (VC safety, docs/lab-experiments.md#vc-safety)."""

from __future__ import annotations

from typing import Any

from hivedlab.basics.text import Text
from hivedlab.checker.judging.rules.cells import (
    cell_ids,
    free_cells,
    free_text,
    outside_own_cells,
    share_text,
    shares_facts,
    vc_shares,
)
from hivedlab.checker.judging.rules.rule_base import (
    CONSISTENT,
    INCONCLUSIVE,
    INCONSISTENT,
    INF,
    Context,
    Outcome,
    RuleCheck,
    clock,
    join,
    missing,
    not_run,
    seqs,
    speaker,
    started_seq,
    started_t,
    unknown_only,
    waited_for,
    where,
    who,
)
from hivedlab.checker.judging.timeline import Attempt, JobTimeline, LeafCell
from hivedlab.models.scheduler_messages import UNKNOWN, Unknown
from hivedlab.plans.rule_params import Jobs, JobsInVc, WaitsWhileIdle


def _vc_unknown(vc: str) -> Outcome:
    return missing(
        f"不知道 VC {vc} 有哪些 GPU（日志中没有 HiveD 配置记录；请用 --hived-config 指定）",
        f"which cells VC {vc} owns is unknown (no HiveD config in the log; pass --hived-config)",
    )


def placement(ctx: Context, params: JobsInVc) -> Outcome:
    """Every bound task attempt of `jobs` is in VC `vc`'s cells (`cells.outside_own_cells`), and, once the run has
    finished, every job of `jobs` ran."""
    vc = params.vc
    shares = vc_shares(ctx, vc)
    if shares is None:
        return _vc_unknown(vc)
    jobs = [job for key in params.jobs for job in ctx.jobs(key)]
    if not jobs:
        return not_run(", ".join(params.jobs))
    lines, evidence, outside, never = [], [], [], []
    for job in jobs:
        bound = [a for a in job.attempts if a.bound is not None]
        if not bound:
            never.append(job)
            continue
        places = sorted({where(a) for a in bound})
        evidence += [a.bound.seq for a in bound if a.bound]
        outside += [(job, a, why) for a in bound if (why := outside_own_cells(ctx, job, a, vc)) is not None]
        lines.append(Text(f"{who(job).zh} 运行在 {'、'.join(places)}", f"{who(job).en} ran on {', '.join(places)}"))
    if not lines:
        return missing("计划中的任务都没有被调度到任何机器上", "none of the plan's jobs was bound to a machine")
    vc_text = share_text(vc, shares)
    facts: dict[str, Any] = {"vc": vc, "vc_cells": shares_facts(shares),
                             "outside": [{"job": who(j).en, "cells": cell_ids(a.cells)} for j, a, _ in outside]}
    answer = join(lines) + Text("。", ".") + vc_text + Text("。", ".")
    names = Text("、".join(who(j).zh for j in never), ", ".join(who(j).en for j in never))
    if never and ctx.run_finished:  # every job of a finished run had its turn: one that never ran broke the rule
        answer = answer + Text(f"{names.zh} 没有运行，而实验已运行完。",
                               f"{names.en} never ran, although the run finished.")
    elif never:
        answer = answer + Text(f"{names.zh} 没有运行。", f"{names.en} never ran.")
    if outside:
        bad = [Text(f"{who(j).zh} 在 {clock(a.bound)} 被调度到 VC {vc} 的 GPU 之外（{why.zh}）",
                    f"{who(j).en} was bound at {clock(a.bound)} outside VC {vc}'s cells ({why.en})")
               for j, a, why in outside]
        return Outcome(INCONSISTENT, answer + join(bad) + Text("。", "."), tuple(sorted(evidence)), facts=facts)
    if never and ctx.run_finished:
        return Outcome(INCONSISTENT, answer, tuple(sorted(evidence)), facts=facts)
    summary = Text(f"所有任务都只运行在 VC {vc} 的 GPU 上。", f"Every job ran only on VC {vc}'s cells.")
    return Outcome(CONSISTENT, summary + answer, tuple(sorted(evidence)), facts=facts)


def _idle_while_waiting(ctx: Context, vc: str, attempt: Attempt) -> tuple[Text, tuple[LeafCell, ...]] | None:
    """`vc`'s cells that sat idle at some moment of the attempt's wait: checked when it began and whenever a pod
    freed its cells before the wait ended."""
    start = attempt.waits[0].mark.seq
    end = attempt.bound.seq if attempt.bound else (attempt.ended.seq if attempt.ended else INF)
    moments = [start] + sorted({mark.seq for job in ctx.timeline.jobs for a in job.attempts
                                for mark in (a.released or a.ended,) if mark is not None and start < mark.seq < end})
    for seq in moments:
        spare, free = free_cells(ctx, vc, seq)
        if spare and free:
            return free_text(vc, spare, free, ctx.timeline.scheduler), free
    return None


def waits_while_idle(ctx: Context, params: WaitsWhileIdle) -> Outcome:
    """Jobs that waited did so with HiveD's `reason`, while `idle_vc`'s nodes sat idle, and were never put there."""
    jobs = [job for key in params.jobs for job in ctx.jobs(key)]
    if not jobs:
        return not_run(", ".join(params.jobs))
    idle_vc, reason = params.idle_vc, params.reason
    if vc_shares(ctx, idle_vc) is None:
        return _vc_unknown(idle_vc)
    waiting = [(job, a) for job in jobs for a in job.attempts if a.waits]
    if not waiting:
        if len(jobs) < 2:
            return missing("只有一个任务，没有任务需要等待（需要至少两位组员同时提交）",
                           "only one job was submitted, so none had to wait (at least two members must submit at once)")
        return missing("没有任务等待过（这些任务的运行时间没有重叠？）",
                       "no job ever waited (did the jobs' run times overlap?)")
    lines, evidence, problems = [], [], []
    unknown: list[str] = []
    idle_cells: set[LeafCell] = set()
    for job, attempt in waiting:
        reasons = sorted({w.reason for w in attempt.waits})
        found = _idle_while_waiting(ctx, idle_vc, attempt)
        idle = found[0] if found else None
        idle_cells |= set(found[1]) if found else set()
        evidence += [w.mark.seq for w in attempt.waits] + list(seqs(attempt.bound))
        until = (Text(f"直到 {clock(attempt.bound)} 被调度到 {attempt.node}",
                      f"until it was bound to {attempt.node} at {clock(attempt.bound)}")
                 if attempt.bound else Text("直到日志结束", "until the log ends"))
        idle_text = Text(f"，期间 {idle.zh} 空闲", f", while {idle.en} sat idle") if idle else Text("", "")
        said = speaker(ctx)
        lines.append(Text(f"{who(job).zh} 从 {clock(attempt.waits[0].mark)} 起等待（{said.zh}：{'；'.join(reasons)}）"
                          f"{until.zh}{idle_text.zh}",
                          f"{who(job).en} waited from {clock(attempt.waits[0].mark)} ({said.en}: {'; '.join(reasons)}) "
                          f"{until.en}{idle_text.en}"))
        outside = outside_own_cells(ctx, job, attempt, job.virtual_cluster) if job.virtual_cluster else None
        if outside is not None:
            problems.append(Text(f"{who(job).zh} 被调度到了自己 VC 的 GPU 之外（{outside.zh}）",
                                 f"{who(job).en} was placed outside its own VC's cells ({outside.en})"))
        unknown += unknown_only(attempt.waits, reason)
        known = sorted({w.reason for w in attempt.waits if w.kind != UNKNOWN})
        if known and not waited_for(reason, known):
            problems.append(Text(f"{who(job).zh} 的等待原因不是“{reason}”",
                                 f"{who(job).en} did not wait for '{reason}'"))
    answer = join(lines) + Text("。", ".")
    facts = {"idle_vc": idle_vc, "idle_cells": cell_ids(idle_cells)}
    if unknown and not problems:
        unknown_text = Unknown(tuple(dict.fromkeys(unknown))).text()
        return Outcome(INCONCLUSIVE, answer + unknown_text + Text("。", "."), tuple(sorted(set(evidence))),
                       (unknown_text,), facts=facts)
    if problems:
        return Outcome(INCONSISTENT, answer + join(problems) + Text("。", "."), tuple(sorted(set(evidence))),
                       facts=facts)
    lead = Text(f"等待的任务一直留在队列中，从未被调度到空闲的 VC {idle_vc} 的 GPU 上。",
                f"The waiting jobs stayed queued and were never placed on the cells of the idle VC {idle_vc}.")
    return Outcome(CONSISTENT, lead + answer, tuple(sorted(set(evidence))), facts=facts)


def _first_run(job: JobTimeline) -> Attempt | None:
    started = [a for a in job.attempts if a.started is not None]
    return min(started, key=started_seq) if started else None


def sequential(ctx: Context, params: Jobs) -> Outcome:
    """The jobs ran one after another (no two attempts of different jobs overlap on a node, re-created attempts
    included) and started in submission order.

    Submissions within 1 s of each other are not ordered (K8s orders equal priority classes by submission second,
    docs/openpai-model.md#pods). On a real cluster the scheduler's back-off can still let a later pod go first, so
    there an order change is reported but not judged; on the simulator (a faithful queue) it is inconsistent."""
    jobs = [job for key in params.jobs for job in ctx.jobs(key)]
    ran = [(job, a) for job in jobs if (a := _first_run(job)) is not None]
    if len(ran) < 2:
        return missing("少于两个任务运行过，看不出运行顺序", "fewer than two jobs ran, so there is no order to see")
    ran.sort(key=lambda item: started_t(item[1]))
    runs = sorted(((job, a) for job in jobs for a in job.attempts if a.started is not None),
                  key=lambda item: started_seq(item[1]))
    lines, evidence, problems = [], [], []
    remarks: list[Text] = []
    for job, attempt in runs:
        ended = attempt.ended
        lines.append(Text(f"{who(job).zh} {clock(attempt.started)}–{clock(ended)} 在 {attempt.node}",
                          f"{who(job).en} {clock(attempt.started)}–{clock(ended)} on {attempt.node}"))
        evidence += list(seqs(attempt.started, ended, job.submitted))
    for index, (job_a, a) in enumerate(runs):  # every attempt of every job: a re-created pod runs again
        end_a = a.ended.seq if a.ended else INF
        for job_b, b in runs[index + 1:]:
            if job_b is not job_a and started_seq(b) < end_a and a.node == b.node:
                problems.append(Text(f"{who(job_b).zh} 在 {who(job_a).zh} 结束前就已在同一机器上运行",
                                     f"{who(job_b).en} ran on the same machine before {who(job_a).en} ended"))
    for (job_a, _), (job_b, _) in zip(ran, ran[1:], strict=False):
        sub_a, sub_b = job_a.submitted, job_b.submitted
        if sub_a and sub_b and sub_b.t + 1.0 < sub_a.t:
            late = Text(f"{who(job_a).zh} 后提交却先运行", f"{who(job_a).en} was submitted later but ran first")
            (problems if ctx.source == "sim" else remarks).append(late)
    order = join(lines, "，", ", ")
    if problems:
        return Outcome(INCONSISTENT, Text(f"运行顺序：{order.zh}。", f"Run order: {order.en}.") + join(problems) +
                       Text("。", "."), tuple(sorted(set(evidence))))
    if remarks:
        remark = join(remarks) + Text("（真实集群上 K8s 调度队列的退避可能改变顺序）。",
                                      " (the K8s scheduling queue's back-off can reorder pods on a real cluster).")
        return Outcome(CONSISTENT, Text(f"任务一个接一个地运行：{order.zh}。", f"The jobs ran one after another: "
                                        f"{order.en}.") + remark, tuple(sorted(set(evidence))))
    return Outcome(
        CONSISTENT,
        Text(f"任务按提交顺序一个接一个地运行：{order.zh}。",
             f"The jobs ran one after another in submission order: {order.en}."),
        tuple(sorted(set(evidence))),
    )


RULES: dict[str, RuleCheck] = {"placement": placement, "waits-while-idle": waits_while_idle,
                               "sequential": sequential}
