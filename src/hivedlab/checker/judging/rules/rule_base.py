"""What every verdict rule shares: the context, the answer shape, bilingual text and interval helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hivedlab.basics.clock import elapsed, time_of_day
from hivedlab.basics.text import Text
from hivedlab.checker.judging.timeline import Attempt, JobTimeline, Mark, Timeline, Wait
from hivedlab.models.scheduler_messages import UNKNOWN

CONSISTENT, INCONSISTENT, INCONCLUSIVE = "consistent", "inconsistent", "inconclusive"
INF = float("inf")


@dataclass(frozen=True)
class Outcome:
    """What one rule found: its verdict, the answer in full sentences, the records it rests on, what was missing."""

    verdict: str
    answer: Text
    evidence: tuple[int, ...] = ()
    missing: tuple[Text, ...] = ()
    facts: dict[str, Any] = field(default_factory=dict)  # JSON-able facts the answer names (e.g. a VC's cells)
    summary: Text | None = None  # the answer in one short sentence, for the report's results table


@dataclass(frozen=True)
class Context:
    timeline: Timeline
    source: str  # sim | k8s
    run_finished: bool  # the run reached its end record with status finished

    def jobs(self, key: str) -> tuple[JobTimeline, ...]:
        return tuple(job for job in self.timeline.jobs_for(key) if job.attempts or job.submissions)

    def one(self, key: str) -> JobTimeline | None:
        jobs = self.jobs(key)
        return jobs[0] if jobs else None

    def vc_nodes(self, vc: str) -> tuple[str, ...] | None:
        nodes = self.timeline.vc_nodes.get(vc)
        return nodes if nodes else None


# A rule kind's check: the context and the kind's typed parameters (`hivedlab.plans.rule_params.PARAMS`).
RuleCheck = Callable[[Context, Any], Outcome]


def clock(mark: Mark | None) -> str:
    """Time of day in UTC, e.g. 08:01:02 (the day is in the report header), by the one rule of `basics.clock`."""
    if mark is None:
        return "?"
    return time_of_day(mark.t)


def span(seconds: float) -> Text:
    """A length of time given as a number (a tolerance, a limit); for the time between two instants use `between`."""
    whole = max(0, int(seconds))
    minutes, rest = divmod(whole, 60)
    if minutes:
        return Text(f"{minutes} 分 {rest} 秒", f"{minutes} min {rest} s")
    return Text(f"{rest} 秒", f"{rest} s")


def between(start: Mark, end: Mark) -> Text:
    """The time from one instant to another as their printed clock times differ (`basics.clock.elapsed`)."""
    return span(elapsed(start.t, end.t))


SPEAKERS = {"hived": Text("HiveD", "HiveD"), "default": Text("默认调度器", "the default scheduler"),
            "kube-batch": Text("kube-batch", "kube-batch"), "volcano": Text("Volcano", "Volcano")}


def speaker(ctx: Context) -> Text:
    """The scheduler whose words a wait reason is: the run's (the plan record's `scheduler`)."""
    name = ctx.timeline.scheduler
    return SPEAKERS.get(name, Text(name, name))


def who(job: JobTimeline) -> Text:
    name = job.job_name or job.framework_name
    if job.user:
        return Text(f"{job.user} 的 {name}", f"{job.user}'s {name}")
    return Text(name, name)


def short_name(ctx: Context, job: JobTimeline) -> str:
    """The job's name as the lab knows it (job-config-2), without the `-<user>-<experiment>-<tag>` the runner adds."""
    name = job.job_name or job.framework_name
    suffix = f"-{job.user}-{ctx.timeline.experiment}-" if job.user and ctx.timeline.experiment else ""
    return name.rsplit(suffix, 1)[0] if suffix and suffix in name else name


def task_list(indices: list[int]) -> Text:
    """Task indices as words: 0、1 号子任务 / tasks 0 and 1 (task 0 alone)."""
    numbers = [str(i) for i in indices]
    zh = "、".join(numbers) + " 号子任务"
    if len(numbers) == 1:
        return Text(zh, f"task {numbers[0]}")
    return Text(zh, "tasks " + ", ".join(numbers[:-1]) + f" and {numbers[-1]}")


def where(attempt: Attempt) -> str:
    gpus = ",".join(str(g) for g in attempt.gpus)
    return f"{attempt.node} (GPU {gpus})" if gpus else str(attempt.node)


def missing(zh: str, en: str, evidence: tuple[int, ...] = ()) -> Outcome:
    """Inconclusive: `zh`/`en` say what evidence is lacking; `evidence`, the records that show it lacking, if any."""
    text = Text(zh, en)
    return Outcome(INCONCLUSIVE, Text(f"无法判断：{zh}", f"Cannot tell: {en}"), evidence, (text,))


def log_end(ctx: Context) -> Text:
    """How the log ends, as a fact: the end record (status, reason, record number) or the lack of one."""
    timeline, end = ctx.timeline, ctx.timeline.end_mark
    if timeline.end_status is None or end is None:
        last = timeline.last.seq if timeline.last is not None else 0
        return Text(f"日志没有结束记录，最后一条是第 {last} 条（运行被中断或日志被截断）",
                    f"the log has no end record; its last is record {last} (the run was cut off or the log truncated)")
    why = f"：{timeline.end_reason}" if timeline.end_reason else ""
    why_en = f": {timeline.end_reason}" if timeline.end_reason else ""
    return Text(f"运行于 {clock(end)} 结束（第 {end.seq} 条记录，{timeline.end_status}{why}）",
                f"the run ended at {clock(end)} (record {end.seq}, {timeline.end_status}{why_en})")


def cut_short(ctx: Context, zh: str, en: str) -> Outcome:
    """Inconclusive because something never happened in the log; says how the log ends, never guesses why."""
    end = log_end(ctx)
    return missing(f"{zh}；{end.zh}", f"{en}; {end.en}")


def not_run(key: str) -> Outcome:
    return missing(f"日志中没有计划任务 {key} 的记录（实验没有运行到这一步？）",
                   f"the log holds no record of the plan's job {key!r} (was the experiment run this far?)")


def end_of(job: JobTimeline) -> float:
    mark = job.end
    return mark.t if mark is not None else INF


def released_at(job: JobTimeline) -> float:
    """When the job's cells were free again: its last pod's end once every attempt ended (HiveD releases a group's
    cells when its pods complete, docs/hived-config-and-cells.md#allocation-and-release), which can come a moment
    before FrameworkController completes the Framework; otherwise the job's end."""
    if job.attempts and all(a.ended is not None for a in job.attempts):
        last = job.last_ended
        if last is not None:
            return min(last.t, end_of(job))
    return end_of(job)


def started_seq(attempt: Attempt) -> float:
    """Sort key for attempts that started: the start's record seq (INF for one that did not start)."""
    return attempt.started.seq if attempt.started is not None else INF


def started_t(attempt: Attempt) -> float:
    """Sort key for attempts that started: the start's time (INF for one that did not start)."""
    return attempt.started.t if attempt.started is not None else INF


def seqs(*marks: Mark | None) -> tuple[int, ...]:
    return tuple(sorted({m.seq for m in marks if m is not None}))


def join(texts: list[Text], zh_sep: str = "；", en_sep: str = "; ") -> Text:
    return Text(zh_sep.join(t.zh for t in texts), en_sep.join(t.en for t in texts))


def waited_for(reason: str, reasons: Iterable[str]) -> bool:
    """Whether the wait reasons say what a rule expects: some reason holds `reason` as a substring (a scheduler's
    message carries the pod's details around it), or no reason is expected (`reason` empty)."""
    return not reason or any(reason in r for r in reasons)


def unknown_only(waits: Sequence[Wait], reason: str) -> tuple[str, ...]:
    """The messages of `waits` when a rule expects `reason` and none of them is a scheduler message hivedlab knows: the
    rule then says it cannot tell why instead of guessing (docs/checker.md#scheduler-messages); () otherwise."""
    if not reason or not waits or any(w.kind != UNKNOWN for w in waits):
        return ()
    return tuple(dict.fromkeys(w.message for w in waits))
