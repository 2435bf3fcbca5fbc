"""Rules for runs without HiveD (docs/other-schedulers.md): does a job start partially or all at once, and do two
such jobs deadlock?"""

from __future__ import annotations

from dataclasses import replace

from hivedlab.basics.text import Text
from hivedlab.checker.judging.rules.rule_base import (
    CONSISTENT,
    INCONSISTENT,
    INF,
    Context,
    Outcome,
    RuleCheck,
    clock,
    missing,
    not_run,
    seqs,
    who,
)
from hivedlab.checker.judging.timeline import Attempt, JobTimeline, Mark
from hivedlab.plans.rule_params import Deadlock, GangStart

TOLERANCE_S = {"sim": 0.0, "k8s": 30.0}
NEVER_BESIDE = "never-beside"  # the answer's `facts.premise` when `while`'s premise failed (a timing, not a verdict)
SAME_ROUND_S = 1.0  # a gang scheduler's events of one session may reach the log just after its first bind


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


def _waited_after(task: Attempt, first: Attempt) -> bool:
    """The task was still reported waiting well after a sibling held a node: a partial start however short (a
    rehearsal cluster's sped-up jobs free their GPUs within the real-cluster tolerance). A wait counts at the
    event's own time: kube-batch's throttled recorder delivered a gang's last `Unschedulable` events seconds after
    the session that bound it whole."""
    return first.bound is not None and any(w.t > first.bound.t + SAME_ROUND_S for w in task.waits)


def _late(tasks: list[Attempt], source: str) -> list[Attempt]:
    """The tasks that waited while a sibling already held a node (none: the tasks started all at once)."""
    bound = [a for a in tasks if a.bound is not None]
    if not bound:
        return []
    first = min(bound, key=_bound_t)
    return [a for a in tasks if a.waits and _bound_t(a) > _bound_t(first) and (
        _bound_t(a) > _bound_t(first) + TOLERANCE_S.get(source, 0.0) or _waited_after(a, first))]


def _partial_start(tasks: list[Attempt], late: list[Attempt]) -> Text:
    """Which tasks held which nodes from when, while which waited until when (or to the end)."""
    until = min(map(_bound_t, late))
    early = [a for a in tasks if _bound_t(a) < until]
    names = ", ".join(f"{_label(a)} ({a.node}, {clock(a.bound)})" for a in early)
    rest = "、".join(f"{_label(a)} 等到 {clock(a.bound)} 才被调度" if a.bound else f"{_label(a)} 到结束仍在等待"
                    for a in late)
    rest_en = ", ".join(f"{_label(a)} waited until {clock(a.bound)}" if a.bound
                        else f"{_label(a)} was still waiting at the end" for a in late)
    return Text(f"{names} 已被调度，而 {rest}", f"{names} held nodes while {rest_en}")


def _seq(mark: Mark | None) -> float:
    return mark.seq if mark is not None else INF


def _appeared(attempt: Attempt) -> Mark | None:
    """The attempt's first record: its pod's creation (else its first wait or its bind)."""
    return attempt.created or (attempt.waits[0].mark if attempt.waits else None) or attempt.bound


def _record(mark: Mark) -> Text:
    """An instant and its record: 08:00:07（第 12 条记录）/ 08:00:07 (record 12)."""
    return Text(f"{clock(mark)}（第 {mark.seq} 条记录）", f"{clock(mark)} (record {mark.seq})")


def _first(mark: Mark) -> Text:
    """The first of several instants, in parentheses: （最早在第 12 条记录，08:00:07）/ (the first at record 12, …)."""
    return Text(f"（最早在第 {mark.seq} 条记录，{clock(mark)}）", f" (the first at record {mark.seq}, {clock(mark)})")


def _all_bound(tasks: list[Attempt]) -> Mark | None:
    """When the last of the tasks was bound; None while one never was."""
    marks = [a.bound for a in tasks if a.bound is not None]
    return max(marks, key=_seq) if marks and len(marks) == len(tasks) else None


def _never_beside(ctx: Context, job: JobTimeline, holder: JobTimeline, key: str) -> Outcome | None:
    """The question's premise (`while`): at some moment `holder` held every one of its tasks' nodes (each of its
    first attempts bound, no attempt of it ended yet) while `job` had a pod and not yet every task bound. In record
    order: max(holder's last first bind, job's first pod) < min(holder's first end, job's last first bind). None when
    it held; else inconclusive, naming what happened instead and the records that show it (`facts`: the premise
    failed, and `key`, the holder's plan key)."""
    held, tasks = _first_attempts(holder), _first_attempts(job)
    ends = [a.ended for a in holder.attempts if a.ended is not None]
    first_end = min(ends, key=_seq) if ends else None
    full, whole = _all_bound(held), _all_bound(tasks)
    appeared = min((m for m in map(_appeared, tasks) if m is not None), key=_seq, default=None)
    j, h = who(job), who(holder)
    if full is None:
        never = [_label(a) for a in held if a.bound is None]
        fact = Text(f"{h.zh} 的子任务 {'、'.join(never)} 从未被调度",
                    f"tasks {', '.join(never)} of {h.en} were never bound")
        cited = seqs(*(a.created for a in held if a.bound is None))
    elif first_end is not None and first_end.seq < full.seq:
        fact = Text(f"{h.zh} 从未同时占有全部子任务的机器：它的子任务在 {_record(first_end).zh}开始结束，"
                    f"早于它最后一个子任务被调度（{_record(full).zh}）",
                    f"{h.en} never held all its tasks' nodes at once: its tasks began to end at "
                    f"{_record(first_end).en}, before its last task was bound at {_record(full).en}")
        cited = seqs(first_end, full)
    elif appeared is not None and first_end is not None and appeared.seq > first_end.seq:
        fact = Text(f"{j.zh} 的 Pod 在 {_record(appeared).zh}才被创建，此时 {h.zh} 的子任务已经结束",
                    f"{j.en}'s pods were created at {_record(appeared).en}, after {h.en}'s tasks had ended"
                    ) + _first(first_end)
        if whole is not None:
            fact += Text(f"；其子任务在 {_record(whole).zh}全部被调度",
                         f"; its tasks were all bound at {_record(whole).en}")
        cited = seqs(full, first_end, appeared, whole)
    elif whole is not None and whole.seq < full.seq:
        fact = Text(f"{j.zh} 的子任务在 {_record(whole).zh}已全部被调度，早于 {h.zh} 的子任务全部被调度"
                    f"（{_record(full).zh}）", f"all tasks of {j.en} were bound at {_record(whole).en}, before "
                    f"{h.en}'s tasks were all bound at {_record(full).en}")
        cited = seqs(whole, full)
    else:
        return None
    what = fact + Text(f"：这次运行中 {j.zh} 从未在 {h.zh} 运行时等待，无法说明调度器在该任务运行期间是否部分启动它",
                       f": the run never had {j.en} wait beside a running {h.en}, so it cannot show whether the "
                       "scheduler starts it partially while that job runs")
    if ctx.source != "sim":  # the simulator's lengths are the plan's; a sped-up rehearsal cluster's are not
        what += Text("；在演练集群上，更小的 --speedup 让该任务运行得更久",
                     "; a smaller --speedup on the rehearsal cluster gives that job time")
    outcome = missing(what.zh, what.en, cited)
    return replace(outcome, facts={"premise": NEVER_BESIDE, "while": key})


def gang_start(ctx: Context, params: GangStart) -> Outcome:
    """`expect: partial`: some task of `job` held a node while another of its tasks waited (Kubernetes' default
    scheduler places pods one by one); `expect: all-or-nothing`: every task was bound in one round and none waited
    bound while the rest waited (kube-batch's gang). With `while`, the question is asked while that job runs: unless
    the run shows `job`'s pods beside it while it held all its nodes (`_never_beside`), neither answer can be told
    (a sped-up job that ends before the next one's pods appear proves nothing about either scheduler)."""
    job = ctx.one(params.job)
    if job is None or not job.attempts:
        return not_run(params.job)
    if params.while_:
        holder = ctx.one(params.while_)
        if holder is None or not holder.attempts:
            return not_run(params.while_)
        premise = _never_beside(ctx, job, holder, params.while_)
        if premise is not None:
            return premise
    tasks = _first_attempts(job)
    bound = [a for a in tasks if a.bound is not None]
    if not bound:
        return missing(f"{who(job).zh} 没有子任务被调度", f"no task of {who(job).en} was ever bound")
    first = min(bound, key=_bound_t)
    late = _late(tasks, ctx.source)
    evidence = seqs(first.bound, *(a.waits[0].mark for a in late), *(a.bound for a in late))
    if late:
        what = Text(f"{who(job).zh} 的 ", f"{who(job).en}'s ") + _partial_start(tasks, late) + Text(
            "：部分启动，已占用的 GPU 无法推进训练。", ": a partial start, holding GPUs that cannot make progress.")
        return Outcome(CONSISTENT if params.expect == "partial" else INCONSISTENT, what, evidence)
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
    return Outcome(CONSISTENT if params.expect == "all-or-nothing" else INCONSISTENT, what, evidence)


def _partial_from(job: JobTimeline) -> tuple[float, float, list[Attempt]]:
    """(first bind, when every task was bound — INF if never —, the tasks)."""
    tasks = _first_attempts(job)
    return min(map(_bound_t, tasks), default=INF), max(map(_bound_t, tasks), default=INF), tasks


REFUSED, STARVED, PARTIAL, COMPLETE = "refused", "starved", "partial", "complete"


def job_state(job: JobTimeline) -> str:
    """How far the job got: `refused` (every submission was answered with an error, no pod), `starved` (pods, none
    ever bound), `partial` (some tasks bound, never all), `complete` (every task bound in the end)."""
    if not job.attempts:
        return REFUSED
    first, full, _ = _partial_from(job)
    if first == INF:
        return STARVED
    return PARTIAL if full == INF else COMPLETE


def _job_fact(job: JobTimeline, state: str, tasks: list[Attempt], source: str, whole: bool) -> Text:
    """What the evidence shows of one job, in the words of its state; of a job that completed, whether it first
    started partially (which tasks held nodes while which waited, until when), or, asked about a gang (`whole`),
    when its tasks were bound in one round and whether they all waited before."""
    name = who(job)
    if state == REFUSED:
        refusal = next((s for s in job.submissions if not s.accepted), None)
        status = refusal.status if refusal is not None else None
        return Text(f"{name.zh} 的提交被拒绝（HTTP {status}），没有创建任何 Pod",
                    f"{name.en}'s submission was refused (HTTP {status}) and no pod was created")
    held = sum(1 for a in tasks if a.bound is not None)
    if state == STARVED:
        return Text(f"{name.zh} 的 {len(tasks)} 个子任务一直在等待，没有一个被调度（饥饿）",
                    f"none of the {len(tasks)} tasks of {name.en} was ever bound (starved)")
    if state == PARTIAL:
        return Text(f"{name.zh} 只有 {held}/{len(tasks)} 个子任务占有机器，其余一直在等待",
                    f"{name.en} held nodes for only {held}/{len(tasks)} tasks, the rest never bound")
    late = _late(tasks, source)
    if whole and not late:
        at = clock(min(tasks, key=_bound_t).bound)
        if any(a.waits for a in tasks):
            return Text(f"{name.zh} 的 {len(tasks)} 个子任务整体等待，之后在 {at} 同一轮被调度",
                        f"all {len(tasks)} tasks of {name.en} waited whole, then were bound in one round at {at}")
        return Text(f"{name.zh} 的 {len(tasks)} 个子任务在 {at} 同一轮被调度",
                    f"all {len(tasks)} tasks of {name.en} were bound in one round at {at}")
    done = Text(f"{name.zh} 的 {len(tasks)} 个子任务最终全部被调度", f"all {len(tasks)} tasks of {name.en} were bound")
    if not late:
        return done
    return done + Text("，但先是部分启动：", " after a partial start: ") + _partial_start(tasks, late)


def deadlock(ctx: Context, params: Deadlock) -> Outcome:
    """`expect: true`: each of `jobs` held nodes while other tasks of its own waited, at the same time, and none of
    them ever had every task bound (each waits for the others: a deadlock, ended only by stopping them);
    `expect: false`: every job had all its tasks bound in the end (the answer says which job first started partially,
    as one of two TFJobs does under Kubernetes' default scheduler: which tasks held nodes while which waited, until
    when); with `waits_whole` (a gang scheduler: one job runs whole, the other waits whole and runs afterwards), a
    job that started partially contradicts it too. Anything else contradicts both: a job refused
    outright, a job starved (never a task bound) or a partial start that never completed beside a job that did."""
    jobs = []
    for key in params.jobs:
        job = ctx.one(key)
        if job is None:
            return not_run(key)
        jobs.append(job)
    spans = [_partial_from(job) for job in jobs]
    states = [job_state(job) for job in jobs]
    evidence = seqs(*(s.mark for job, state in zip(jobs, states, strict=True) if state == REFUSED
                      for s in job.submissions),
                    *(a.bound for _, _, tasks in spans for a in tasks),
                    *(a.waits[0].mark for _, _, tasks in spans for a in tasks if a.waits))
    facts = [_job_fact(job, state, tasks, ctx.source, params.waits_whole)
             for job, state, (_, _, tasks) in zip(jobs, states, spans, strict=True)]
    summary = Text("；".join(f.zh for f in facts), "; ".join(f.en for f in facts))
    if all(state == PARTIAL for state in states):
        what = summary + Text("；每个任务都在等另一个任务占着的 GPU，谁也完成不了：死锁（直到被停止）。",
                              "; each waited for GPUs the other held and none could finish: "
                              "a deadlock (until stopped).")
        return Outcome(CONSISTENT if params.expect is True else INCONSISTENT, what, evidence)
    if all(state == COMPLETE for state in states):
        partial = [who(job) for job, (_, _, tasks) in zip(jobs, spans, strict=True) if _late(tasks, ctx.source)]
        if params.waits_whole and partial:
            names = Text("、".join(n.zh for n in partial), ", ".join(n.en for n in partial))
            what = summary + Text(f"：没有死锁，但 {names.zh} 部分启动，而不是整体等待、整体运行。",
                                  f": no deadlock, but {names.en} started partially instead of waiting whole and "
                                  "running whole.")
            return Outcome(INCONSISTENT, what, evidence)
        what = summary + Text("：没有死锁。", ": no deadlock.")
        return Outcome(CONSISTENT if params.expect is False else INCONSISTENT, what, evidence)
    what = summary + Text(f"：{_neither(states).zh}，既不是死锁也不是“没有死锁”。",
                          f": {_neither(states).en}, neither a deadlock nor \"no deadlock\".")
    return Outcome(INCONSISTENT, what, evidence)


def _neither(states: list[str]) -> Text:
    """The name of what happened when the jobs neither all completed nor all deadlocked, the worst first."""
    if REFUSED in states:
        return Text("任务被拒绝", "a job was refused")
    if STARVED in states:
        return Text("任务饥饿", "a job starved")
    return Text("部分启动且从未完成", "a partial start that never completed")


RULES: dict[str, RuleCheck] = {"gang-start": gang_start, "deadlock": deadlock}
