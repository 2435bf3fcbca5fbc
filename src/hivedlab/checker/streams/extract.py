"""From an evidence log's records to its normalized `Stream` (pure). The jobs, tasks, attempts, placements, waits,
outcomes and exit codes come from the checker's timeline (`build_timeline`); what the timeline does not keep, the
order of pod phases, Framework states, TFJob conditions and PodGroup phases, the events (on pods, TFJobs and
PodGroups) and their counts, is read from the same records here.

Names are made comparable: a job is `<plan key>@<user>`, a task `<job>:<role>/<index>`; every pod name, Framework,
TFJob or PodGroup name, job name (with its run tag), uid and time inside a message is replaced by its label or a
placeholder, and a Kubeflow run's namespace (the runner's `hivedlab-<experiment>-<scheduler>-<tag>`, the simulator's
`default`) by `<namespace>`. Nothing a scheduler or an operator decided is normalized: nodes, order, reasons,
counts and exit codes stay as they are."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hivedlab.checker.judging.timeline import Attempt, JobTimeline, Timeline, build_timeline
from hivedlab.checker.streams.stream_types import AttemptStream, JobStream, Stream
from hivedlab.evidence import Record
from hivedlab.models.kubeflow.manifests import true_conditions
from hivedlab.models.openpai.jobstate import rest_state
from hivedlab.models.scheduler_messages import TRANSIENT, classify

_UID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?Z?")
_HASH_NAME = re.compile(r"\b[0-9a-f]{32}(?:-[a-z0-9_]+-\d+)?\b")  # a Framework or pod name the log never explained
_POD_REF = re.compile(r"[a-z0-9-]+/([0-9a-f]{32}-[a-z0-9_]+-\d+)")  # `default/<pod>` in a Preempted message


_OWNED = ("TFJob", "PodGroup")  # the kinds besides Pod whose events a stream keeps


@dataclass
class _Trace:
    """What the timeline does not keep, per pod uid, per Framework, per TFJob and per PodGroup."""

    phases: dict[str, list[str]] = field(default_factory=dict)  # pod uid -> phases
    events: dict[str, dict[str, list[Any]]] = field(default_factory=dict)  # pod uid -> event uid -> [reason, msg, n]
    frameworks: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # name -> (FC state, REST state)
    tfjobs: dict[str, list[str]] = field(default_factory=dict)  # name -> its last true condition's type, in order
    podgroups: dict[str, list[str]] = field(default_factory=dict)  # name -> phases
    podgroup_jobs: dict[str, str] = field(default_factory=dict)  # PodGroup name -> its TFJob's (its owner's)
    owned_events: dict[tuple[str, str], dict[str, list[Any]]] = field(default_factory=dict)  # (kind, name) -> ...
    namespace: str | None = None  # a Kubeflow run's namespace (its TFJobs')
    configs: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)


def _append(seq: list[Any], item: Any) -> None:
    if not seq or seq[-1] != item:
        seq.append(item)


def _occurrences(event: dict[str, Any]) -> int:
    """How many times the event happened, as far as its object shows: core/v1's `count`, or an events.k8s.io series
    (the first occurrence, then `series.count` more)."""
    series = event.get("series") or {}
    if series.get("count"):
        return 1 + int(series["count"])
    return int(event.get("count") or 1)


def _trace(records: Sequence[Record]) -> _Trace:
    trace = _Trace()
    uid_by_name: dict[str, str] = {}
    for record in records:
        if record.kind == "action" and record.action is not None:
            kind = record.action.get("type")
            if kind == "config-switch":
                _append(trace.configs, str(record.action.get("name")))
            elif kind == "step":
                trace.steps.append(f"{record.action.get('index')}:{record.action.get('status')}")
            continue
        obj = record.object
        if obj is None or record.watch_type == "BOOKMARK":
            continue
        meta = obj.get("metadata") or {}
        if record.resource == "pods" and meta.get("uid"):
            uid_by_name[str(meta.get("name"))] = str(meta["uid"])
            phases = trace.phases.setdefault(str(meta["uid"]), [])
            _append(phases, str((obj.get("status") or {}).get("phase") or "Pending"))
            if record.watch_type == "DELETED":
                _append(phases, "Deleted")
        elif record.resource == "events":
            involved = obj.get("involvedObject") or obj.get("regarding") or {}
            kind = involved.get("kind", "Pod")
            if kind in _OWNED and involved.get("name"):
                events = trace.owned_events.setdefault((str(kind), str(involved["name"])), {})
            elif kind == "Pod" and (involved.get("uid") or uid_by_name.get(str(involved.get("name")))):
                pod = involved.get("uid") or uid_by_name[str(involved.get("name"))]
                events = trace.events.setdefault(str(pod), {})
            else:
                continue
            entry = events.setdefault(str(meta.get("uid") or id(obj)), [
                str(obj.get("reason")), str(obj.get("message") or obj.get("note") or ""), 0])
            entry[2] = max(entry[2], _occurrences(obj))
        elif record.resource in ("tfjobs", "podgroups") and meta.get("name"):
            _kubeflow_object(trace, record.resource, record.watch_type, obj)
        elif record.resource == "frameworks" and meta.get("name"):
            status = obj.get("status") or {}
            state = status.get("state")
            if isinstance(state, str):
                code = ((status.get("attemptStatus") or {}).get("completionStatus") or {}).get("code")
                delay = (status.get("retryPolicyStatus") or {}).get("retryDelaySec")
                _append(trace.frameworks.setdefault(str(meta["name"]), []),
                        (state, rest_state(state, code if isinstance(code, int) else None,
                                           delay if isinstance(delay, int) else None)))
    return trace


def _kubeflow_object(trace: _Trace, resource: str, watch_type: str | None, obj: dict[str, Any]) -> None:
    """A TFJob's last true condition (tf-operator v0.5.3 `pkg/controller.v1beta2/tensorflow/status.go`,
    `setCondition`: a condition set again moves to the end, true; Succeeded and Failed turn Running false), or a
    PodGroup's phase; the run's namespace from its TFJobs."""
    meta = obj.get("metadata") or {}
    name, status = str(meta["name"]), obj.get("status") or {}
    if resource == "tfjobs":
        trace.namespace = trace.namespace or meta.get("namespace")
        true = true_conditions(obj)
        if true:
            _append(trace.tfjobs.setdefault(name, []), true[-1])
        return
    owners = [str(o.get("name")) for o in meta.get("ownerReferences") or [] if isinstance(o, dict)
              and o.get("kind") == "TFJob"]
    trace.podgroup_jobs.setdefault(name, owners[0] if owners else name)
    phases = trace.podgroups.setdefault(name, [])
    if isinstance(status.get("phase"), str):
        _append(phases, status["phase"])
    if watch_type == "DELETED":
        _append(phases, "Deleted")


class Names:
    """Labels for the run's own names (jobs, Frameworks, pods, uids), and a message normalizer that uses them."""

    def __init__(self, timeline: Timeline, namespace: str | None = None) -> None:
        self.jobs: dict[str, str] = {}  # framework name -> job label
        self.pods: dict[str, str] = {}  # pod name or uid -> task label
        replacements: dict[str, str] = {}
        for job in timeline.jobs:
            label = job_label(job)
            self.jobs[job.framework_name] = label
            replacements[job.framework_name] = label
            for sub in job.submissions:
                replacements[sub.job_name] = label
            if job.job_name:
                replacements[job.job_name] = label
            for attempt in job.attempts:
                task = f"{label}:{attempt.task_role}/{attempt.task_index}"
                self.pods[attempt.pod_name] = self.pods[attempt.uid] = task
                replacements[attempt.pod_name] = replacements[attempt.uid] = task
        self._pattern = (re.compile("|".join(re.escape(k) for k in sorted(replacements, key=len, reverse=True)))
                         if replacements else None)
        self._replacements = replacements
        # the namespace where a message names an object in it: `<namespace>/<pod>`, tf-operator's `<namespace>.<pod>`
        self._namespace = (re.compile(rf"(?<![\w.-]){re.escape(namespace)}(?=[/.][a-z0-9])") if namespace
                           else None)

    def message(self, text: str) -> str:
        """The message with the run's names replaced by labels, its namespace (a Kubeflow run's) by `<namespace>`,
        other uids, hashes and times by placeholders."""
        if self._namespace is not None:
            text = self._namespace.sub("<namespace>", text)
        if self._pattern is not None:
            text = self._pattern.sub(lambda m: self._replacements[m.group(0)], text)
        return _TIME.sub("<time>", _HASH_NAME.sub("<name>", _UID.sub("<uid>", text))).strip()

    def preemptor(self, message: str | None) -> str | None:
        """The preemptor's task label from a Preempted event's message (`... default/<pod> on node <node>`)."""
        if not message:
            return None
        found = _POD_REF.search(message)
        return self.pods.get(found.group(1), "<unknown>") if found else "<unknown>"


def job_label(job: JobTimeline) -> str:
    """`<plan key>@<user>`; a job outside the plan keeps its protocol name."""
    return f"{job.job_key or job.job_name or job.framework_name}@{job.user or '?'}"


def _attempt(attempt: Attempt, trace: _Trace, names: Names) -> AttemptStream:
    events: list[str] = []
    failed = transient = 0
    for reason, message, count in trace.events.get(attempt.uid, {}).values():
        _append(events, f"{reason}: {names.message(message)}")
        if reason == "FailedScheduling" and classify(message) == TRANSIENT:
            transient += count
        elif reason == "FailedScheduling":
            failed += count
    waits: list[str] = []
    for wait in attempt.waits:
        _append(waits, wait.kind)
    return AttemptStream(
        node=attempt.node, gpus=tuple(sorted(attempt.gpus)), phases=tuple(trace.phases.get(attempt.uid, ())),
        events=tuple(events), failed_scheduling=failed, transient=transient, waits=tuple(waits),
        outcome=attempt.outcome, exit_code=attempt.exit_code, fc_exit_code=attempt.fc_exit_code,
        preempted_by=names.preemptor(attempt.preempted_by) if attempt.preempted is not None else None)


def _counted(events: dict[str, list[Any]], names: Names) -> tuple[str, ...]:
    """Events on a TFJob or PodGroup: `Reason: message (count N)`, in order, repeats collapsed."""
    out: list[str] = []
    for reason, message, count in events.values():
        _append(out, f"{reason}: {names.message(message)} (count {count})")
    return tuple(out)


def _job(job: JobTimeline, trace: _Trace, names: Names) -> JobStream:
    tasks: dict[str, list[AttemptStream]] = {}
    for attempt in sorted(job.attempts, key=lambda a: a.created.seq if a.created else 0):
        tasks.setdefault(f"{attempt.task_role}/{attempt.task_index}", []).append(_attempt(attempt, trace, names))
    states = trace.frameworks.get(job.framework_name, [])
    rest: list[str] = []
    for _, state in states:
        _append(rest, state)
    name = job.framework_name  # a TFJob's name on a plain Kubernetes cluster
    groups = [group for group, owner in trace.podgroup_jobs.items() if owner == name] or [name]  # tf-operator's name
    return JobStream(
        label=names.jobs[name],
        submit=tuple(f"{s.status} {names.message(s.message or '')}".strip() for s in job.submissions),
        states=tuple(s for s, _ in states) or tuple(trace.tfjobs.get(name, ())), rest_states=tuple(rest),
        state=job.state, exit_code=job.exit_code,
        tasks=tuple((task, tuple(attempts)) for task, attempts in sorted(tasks.items())),
        events=_counted(trace.owned_events.get(("TFJob", name), {}), names),
        podgroup_events=tuple(e for g in groups for e in _counted(trace.owned_events.get(("PodGroup", g), {}), names)),
        podgroup_phases=tuple(p for g in groups for p in trace.podgroups.get(g, ())))


def extract(records: Sequence[Record]) -> Stream:
    """The normalized stream of one log's records (one experiment run)."""
    timeline = build_timeline(records)
    if any(job.submissions for job in timeline.jobs):  # the run's own jobs, not those a list found on the cluster
        timeline = replace(timeline, jobs=tuple(job for job in timeline.jobs if job.submissions))
    trace = _trace(records)
    names = Names(timeline, trace.namespace)
    started = sorted((job.first_started.seq, names.jobs[job.framework_name]) for job in timeline.jobs
                     if job.first_started is not None)
    preempted = sorted(((a.preempted.seq, names.pods[a.uid], names.preemptor(a.preempted_by))
                        for job in timeline.jobs for a in job.attempts if a.preempted is not None),
                       key=lambda item: item[0])
    return Stream(
        experiment=timeline.experiment, source=timeline.source, configs=tuple(trace.configs),
        steps=tuple(trace.steps), end=timeline.end_status,
        jobs=tuple(sorted((_job(job, trace, names) for job in timeline.jobs), key=lambda j: j.label)),
        start_order=tuple(label for _, label in started),
        preemptions=tuple(f"{victim} <- {by}" for _, victim, by in preempted), scheduler=timeline.scheduler)
