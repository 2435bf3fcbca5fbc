"""An experiment's task attempts as the report and its chart need them: `hivedlab.checker.judging.timeline` flattened.

Times become seconds since the log's first record (the chart's and the report's `T+`), job names lose the
`-<user>-<experiment>-<run tag>` suffix the runner adds to make them unique (`hivedlab.runner.turns.job_name_for`), and
a submission the REST server refused (it leaves no pod, only the runner's record) becomes a `Rejection` (marked on
the chart at its submit time).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hivedlab.basics.text import Text
from hivedlab.checker.judging.timeline import Mark, Timeline, build_timeline, display_names
from hivedlab.checker.report.charts import Rejection, Switch, TaskAttempt
from hivedlab.checker.report.faults import NodeFault, node_faults, task_labels
from hivedlab.evidence import NO_RECORDS, RehearsalSigns, iter_evidence
from hivedlab.rundir import EVIDENCE

__all__ = ["ExperimentTimeline", "NodeFault", "Rejection", "attempts_of", "switches_of", "timeline_for_chart"]


@dataclass(frozen=True)
class ExperimentTimeline:
    attempts: tuple[TaskAttempt, ...] = ()
    started: str = ""  # RFC 3339 time of the log's first record (T+0)
    into_second: float = 0.0  # how far into its second the first record is: the report's T+0 is that whole second
    end: float = 0.0  # seconds from `started` to the last record
    source: str = ""  # sim | k8s
    config_name: str = ""
    vc_nodes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # from the log's config-switch record
    nodes: tuple[str, ...] = ()  # nodes pods were bound to
    rejections: tuple[Rejection, ...] = ()
    end_status: str = ""  # the runner's end record: finished | interrupted | failed
    problems: tuple[Text, ...] = ()  # what is wrong with the log, each line starting with the log's folder/name
    switches: tuple[Switch, ...] = ()  # plan steps that switched HiveD's config or restarted it while jobs ran
    faults: tuple[NodeFault, ...] = ()  # nodes whose Ready condition changed, or cordoned (a real cluster's Nodes)
    emulated: bool = False  # its pods ran in the rehearsal cluster's emulated containers (`RehearsalSigns`)
    emulated_nodes: tuple[str, ...] = ()  # the emulated nodes the log shows


def attempts_of(timeline: Timeline, names: dict[str, str]) -> tuple[TaskAttempt, ...]:
    """One TaskAttempt per pod uid, times relative to the log's first record."""
    t0 = timeline.first.t if timeline.first else 0.0

    def rel(mark: Mark | None) -> float | None:
        return None if mark is None else round(mark.t - t0, 6)

    result = []
    for job in timeline.jobs:
        labels = task_labels(job)
        for a in job.attempts:
            task, index = labels[a.uid]
            ran_from = a.started or a.bound  # a pod bound but never running still holds its node
            waiting: tuple[tuple[float, float | None], ...] = ()
            if a.waits:
                until = a.bound or a.ended
                waiting = ((rel(a.waits[0].mark) or 0.0, rel(until)),)
            result.append(TaskAttempt(
                job=names.get(job.framework_name, job.framework_name), task=task, attempt=index, node=a.node,
                gpus=a.gpus, start=rel(ran_from) if a.node else None, end=rel(a.ended) if a.node else None,
                outcome=a.outcome, waiting=waiting, preempted=a.outcome == "preempted", recreated=index > 0,
                created=rel(a.created), bound=rel(a.bound),
            ))
    return tuple(sorted(result, key=lambda x: (x.created if x.created is not None else float("inf"))))


def switches_of(timeline: Timeline) -> tuple[Switch, ...]:
    """The reached `switch_config` and `restart` steps, times relative to the log's first record."""
    t0 = timeline.first.t if timeline.first else 0.0
    found = []
    for step in timeline.steps:
        body = step.step if isinstance(step.step, dict) else {}
        if step.status != "reached":
            continue
        if "switch_config" in body:
            found.append(Switch(round(step.mark.t - t0, 6), "config", str(body["switch_config"])))
        elif "restart" in body:
            found.append(Switch(round(step.mark.t - t0, 6), "restart"))
    return tuple(found)


def _about(where: str, said: Text) -> Text:
    """A problem line about the log `where` (its folder/name)."""
    return Text(f"{where}：{said.zh}", f"{where}: {said.en}")


def timeline_for_chart(path: Path, run_tag: str = "") -> ExperimentTimeline:
    """Read an evidence log into the report's view of it. Never raises: problems become lines."""
    where = f"{path.parent.name}/{EVIDENCE}"
    stream = iter_evidence(path)  # streamed: a long real-cluster log is never held whole
    signs = RehearsalSigns()
    try:
        timeline = build_timeline(signs.watch(stream))
    except Exception as exc:  # a log the timeline cannot fold must not stop the report
        return ExperimentTimeline(problems=(_about(where, Text(f"无法构建时间线（{exc}）",
                                                               f"no timeline could be built ({exc})")),))
    warnings = [*stream.said, *([stream.unreadable_said] if stream.unreadable_said else [])]
    problems = [_about(where, w) for w in warnings[:3]]
    if len(warnings) > 3:
        more = len(warnings) - 3
        problems.append(_about(where, Text(f"另有 {more} 条警告", f"{more} more warning(s)")))
    if stream.count == 0:
        return ExperimentTimeline(problems=(*problems, _about(where, NO_RECORDS)))
    names = display_names(timeline.jobs, timeline.experiment or path.parent.name, run_tag)
    t0 = timeline.first.t if timeline.first else 0.0
    rejections = tuple(
        Rejection(names.get(job.framework_name, job.framework_name), round(sub.mark.t - t0, 6), sub.status,
                  sub.message or "")
        for job in timeline.jobs for sub in job.submissions if sub.status is not None and sub.status >= 400
    )
    return ExperimentTimeline(
        attempts=attempts_of(timeline, names),
        started=timeline.first.time if timeline.first else "",
        into_second=round(t0 % 1, 6),
        end=round(timeline.last.t - t0, 6) if timeline.last else 0.0,
        source=timeline.source or "",
        config_name=timeline.config_name or "",
        vc_nodes=dict(timeline.vc_nodes),
        nodes=tuple(timeline.nodes_seen),
        rejections=rejections,
        end_status=timeline.end_status or "",
        problems=tuple(problems) + tuple(_about(where, note) for note in timeline.notes),
        switches=switches_of(timeline),
        faults=node_faults(timeline, names),
        emulated=signs.found,
        emulated_nodes=tuple(signs.nodes),
    )
