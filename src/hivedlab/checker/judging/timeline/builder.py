"""Folding evidence records into a Timeline, one record at a time (O(jobs + pods) memory): the runner's actions,
pods, events, Frameworks, TFJobs, Nodes and config switches. One builder, not one per source: every kind of record
updates the same attempts and jobs, in log order.

Size: one piece over 400 lines: the builder's state and one method per kind of record, each updating the same jobs
and attempts; split apart, every part would need all of that state (`build_timeline` and `display_names` are its
thin callers).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from hivedlab.basics.text import Text
from hivedlab.checker.judging.pod_facts import (
    VcShare,
    app_status,
    bind_gpus,
    bind_node,
    gpu_request,
    hived_reason,
    node_gpus_from_config,
    pod_priority,
    vc_cells_from_config,
    vc_nodes_from_config,
)
from hivedlab.checker.judging.timeline.facts import Attempt, JobTimeline, Mark, Step, Submission, Timeline, Wait
from hivedlab.checker.judging.timeline.nodes import NodeCordons, NodeReadiness
from hivedlab.evidence import Record, parse_time
from hivedlab.models.hived.annotations import SCHEDULING_SPEC
from hivedlab.models.kubeflow.manifests import WAIT_REASONS, tf_pod, tfjob_state
from hivedlab.models.openpai.jobstate import rest_state
from hivedlab.models.openpai.naming import TURN_MARK, framework_name
from hivedlab.models.scheduler_messages import TRANSIENT, classify


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _changed(attempt: Attempt, changes: dict[str, Any]) -> Attempt:
    """`dataclasses.replace(attempt, **changes)` for the pod records' changes: Attempt, a frozen dataclass without
    __post_init__, copied field by field with the changed ones set (several times faster; records come by thousands)."""
    new = object.__new__(Attempt)
    vars(new).update(vars(attempt), **changes)
    return new


@dataclass
class _Job:
    framework_name: str
    job_key: str | None = None
    user: str | None = None
    job_name: str | None = None
    virtual_cluster: str | None = None
    submissions: list[Submission] = field(default_factory=list)
    attempt_uids: list[str] = field(default_factory=list)
    state: str = "UNKNOWN"
    finished: Mark | None = None
    exit_code: int | None = None
    fw_codes: dict[int, int] = field(default_factory=dict)
    fc_task_codes: dict[str, int] = field(default_factory=dict)  # pod uid -> code
    first_seen: Mark | None = None


class TimelineBuilder:
    """Folds records one at a time (O(jobs + pods) memory); `result()` returns the frozen Timeline."""

    def __init__(self) -> None:
        self.jobs: dict[str, _Job] = {}
        self.attempts: dict[str, Attempt] = {}
        # pod key -> (reason, mark, message, the event's own time)
        self.pending_events: dict[str, list[tuple[str, Mark, str, float | None]]] = {}
        self.waits: dict[str, list[Wait]] = {}  # pod uid -> FailedScheduling events
        self.events_seen: set[tuple[Any, Any]] = set()
        self.reasons: dict[str, tuple[str, str, str]] = {}
        self.uid_by_name: dict[str, str] = {}
        self.experiments: list[str] = []
        self.source: str | None = None
        self.cluster: str | None = None
        self.config_name: str | None = None
        self.scheduler = "hived"
        self.vc_nodes: dict[str, tuple[str, ...]] = {}
        self.node_gpus: dict[str, int] = {}
        self.vc_cells: dict[str, tuple[VcShare, ...]] = {}
        self.cell_history: list[tuple[int, dict[str, tuple[VcShare, ...]]]] = []
        self.steps: list[Step] = []
        self.end_status: str | None = None
        self.end_reason: str | None = None
        self.end_reason_zh: str | None = None
        self.stopped_jobs: set[str] = set()  # `user~job_name`: the jobs the user stopped (a `stopped` end record)
        self.sessions = 0
        self.end_mark: Mark | None = None
        self.list_start: Mark | None = None  # the first LISTED pod record of the re-list under way
        self.first: Mark | None = None
        self.last: Mark | None = None
        self.count = 0
        self.nodes: dict[str, None] = {}
        self.readiness = NodeReadiness()  # the Node records: when a node's Ready condition changed
        self.cordons = NodeCordons()  # and when it was cordoned or uncordoned
        self.job_names: dict[str, str] = {}  # protocol name -> plan key (for logs without submit records)
        self.priorities: dict[str, int | None] = {}  # scheduling spec -> its priority (a job's pods share one spec)

    # -- records ---------------------------------------------------------------------------------------
    def feed(self, record: Record) -> None:
        parsed = parse_time(record.time)
        mark = Mark(record.seq, record.time, parsed.timestamp() if parsed else float(record.seq))
        self.count += 1
        self.first = self.first or mark
        self.last = mark
        self.source = self.source or record.source
        if record.kind == "action" and record.action is not None:
            self._action(record.action, mark)
        elif record.object is not None:
            if record.resource == "pods":
                if record.watch_type == "LISTED":  # a re-list: a pod gone in the gap was gone before it began
                    self.list_start = self.list_start or mark
                elif not record.synthetic:
                    self.list_start = None
                gone = self.list_start if record.synthetic and self.list_start else mark
                self._pod(record.watch_type or "", record.object, mark, gone)
            elif record.resource == "events":
                self._event(record.object, mark)
            elif record.resource == "frameworks":
                self._framework(record.object, mark)
            elif record.resource == "tfjobs":
                self._tfjob(record.watch_type or "", record.object, mark)
            elif record.resource == "nodes":
                self.readiness.feed(record.watch_type or "", record.object, mark)
                self.cordons.feed(record.watch_type or "", record.object, mark)

    def _job(self, name: str, mark: Mark | None = None) -> _Job:
        job = self.jobs.get(name)
        if job is None:
            job = self.jobs[name] = _Job(name, first_seen=mark)
        return job

    def _action(self, action: dict[str, Any], mark: Mark) -> None:
        kind = action.get("type")
        if kind == "plan":  # a session begins: how the run ends is what its last session's `end` says
            self.sessions += 1
            self.end_status = self.end_reason = self.end_reason_zh = None
            experiment = str(action.get("experiment"))
            if experiment not in self.experiments:
                self.experiments.append(experiment)
            self.cluster = action.get("cluster") or self.cluster
            self.scheduler = str(action.get("scheduler") or self.scheduler)
            names = action.get("job_names")
            if isinstance(names, dict):
                self.job_names.update({str(k): str(v) for k, v in names.items()})
        elif kind == "config-switch":
            self.config_name = str(action.get("name"))
            self.vc_nodes = vc_nodes_from_config(str(action.get("text", "")))
            self.node_gpus = node_gpus_from_config(str(action.get("text", "")))
            self.vc_cells = vc_cells_from_config(str(action.get("text", "")))
            self.cell_history.append((mark.seq, self.vc_cells))
        elif kind == "submit":
            self._submit(action, mark)
        elif kind == "step":
            self.steps.append(Step(mark, _int(action.get("index")), str(action.get("status")), action.get("step")))
        elif kind == "end":
            self.end_status = str(action.get("status"))
            self.end_reason = action.get("reason")
            self.end_reason_zh = action.get("reason_zh")
            jobs = action.get("jobs")
            self.stopped_jobs = {str(j) for j in jobs} if self.end_status == "stopped" and isinstance(jobs, list) \
                else set()
            self.end_mark = mark

    def _submit(self, action: dict[str, Any], mark: Mark) -> None:
        user, name = str(action.get("user", "")), str(action.get("job_name", ""))
        fw = str(action.get("framework_name") or framework_name(user, name))
        raw_reply = action.get("reply")
        reply: dict[str, Any] = raw_reply if isinstance(raw_reply, dict) else {}
        body = reply.get("body")
        message = body.get("message") if isinstance(body, dict) else (body if isinstance(body, str) else None)
        if isinstance(body, dict) and body.get("resumed") and self.jobs.get(fw) and self.jobs[fw].submissions:
            return  # a resumed session restating a submission the log already holds: not a new one
        sub = Submission(mark, user, action.get("job"), name, fw, _int(reply.get("status")), message,
                         action.get("expect"))
        job = self._job(fw, mark)
        job.submissions.append(sub)
        job.job_key = job.job_key or sub.job_key
        job.user, job.job_name = user, name

    def _pod(self, watch_type: str, pod: dict[str, Any], mark: Mark, gone: Mark) -> None:
        meta = pod.get("metadata") or {}
        labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
        uid, name = meta.get("uid"), meta.get("name")
        if not uid or not name:
            return
        if labels.get("type", "kube-launcher-task") != "kube-launcher-task":
            return
        fw = labels.get("FC_FRAMEWORK_NAME") or annotations.get("FC_FRAMEWORK_NAME")
        tf = None if fw else tf_pod(labels)  # a TFJob's pod on a plain Kubernetes cluster: the TFJob is the job
        attempt = self.attempts.get(uid)
        if attempt is None:
            attempt = Attempt(
                pod_name=name,
                uid=uid,
                task_role=tf.replica_type if tf else labels.get("FC_TASKROLE_NAME"),
                task_index=tf.index if tf else _int(labels.get("FC_TASK_INDEX")),
                framework_attempt=_int(annotations.get("FC_FRAMEWORK_ATTEMPT_ID")),
                task_attempt=_int(annotations.get("FC_TASK_ATTEMPT_ID")),
                created=mark,
                priority=self._priority(annotations),
            )
            old_uid = self.uid_by_name.get(name)
            if old_uid and old_uid != uid:
                # the old pod's deletion was never seen; its successor proves it is gone
                old = self.attempts[old_uid]
                if old.ended is None:
                    old = replace(old, deleted=mark)
                self.attempts[old_uid] = replace(old, released=old.released or mark, recreated=old.recreated or mark)
            self.uid_by_name[name] = uid
            fw = fw or (tf.job if tf else None)
            if fw:
                job = self._job(fw, mark)
                job.attempt_uids.append(uid)
                job.user = job.user or labels.get("userName")
                job.virtual_cluster = job.virtual_cluster or labels.get("virtualCluster")
            for reason, event_mark, message, observed in (self.pending_events.pop(uid, []) +
                                                          self.pending_events.pop(name, [])):
                attempt = self._apply_event(attempt, reason, event_mark, message, observed)
        attempt = self._pod_state(attempt, pod, annotations, mark)
        if watch_type == "DELETED" and (attempt.deleted is None or attempt.released is None):
            attempt = replace(attempt, deleted=attempt.deleted or mark, released=attempt.released or gone)
        self.attempts[uid] = attempt

    def _priority(self, annotations: dict[str, Any]) -> int | None:
        """`pod_priority`, each distinct scheduling spec of the log parsed once."""
        spec = annotations.get(SCHEDULING_SPEC)
        if not isinstance(spec, str):
            return pod_priority(annotations)
        if spec not in self.priorities:
            self.priorities[spec] = pod_priority(annotations)
        return self.priorities[spec]

    def _pod_state(self, attempt: Attempt, pod: dict[str, Any], annotations: dict[str, Any], mark: Mark) -> Attempt:
        spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
        node = spec.get("nodeName") or bind_node(annotations)
        changes: dict[str, Any] = {}
        if node and attempt.bound is None:
            changes.update(bound=mark, node=str(node))
            self.nodes[str(node)] = None
        gpus = bind_gpus(annotations)
        if gpus and not attempt.gpus:
            changes["gpus"] = gpus
        status = app_status(pod)
        if status:
            state = status.get("state") or {}
            running = state.get("running")
            terminated = state.get("terminated") or (status.get("lastState") or {}).get("terminated")
            if (running or terminated) and attempt.started is None:
                started_at = (running or terminated or {}).get("startedAt")
                changes.update(started=mark, started_at=started_at)
            if terminated and attempt.terminated is None:
                changes.update(terminated=mark, exit_code=_int(terminated.get("exitCode")))
        phase = (pod.get("status") or {}).get("phase")
        if attempt.released is None and (phase in ("Succeeded", "Failed") or (
                phase is None and "terminated" in ((status or {}).get("state") or {}))):
            changes["released"] = mark
        if attempt.gpu_request is None and node:
            changes["gpu_request"] = gpu_request(pod)
        if meta.get("deletionTimestamp") and attempt.deleted is None and attempt.terminated is None:
            changes["deleted"] = mark
        return _changed(attempt, changes) if changes else attempt

    def _apply_event(self, attempt: Attempt, reason: str, mark: Mark, message: str,
                     observed: float | None = None) -> Attempt:
        if reason in WAIT_REASONS:
            # kept aside (a tuple rebuilt per event would be quadratic in a long wait); attached in result()
            cached = self.reasons.get(message)
            if cached is None:  # a long wait repeats the same message thousands of times: keep one copy
                cached = self.reasons[message] = (message, hived_reason(message), classify(message))
            self.waits.setdefault(attempt.uid, []).append(Wait(mark, cached[1], cached[0], cached[2], observed))
            return attempt
        if reason == "Preempted" and attempt.preempted is None:
            return replace(attempt, preempted=mark, preempted_by=message)
        return attempt

    def _since_first(self, events: list[tuple[str, Mark, str, float | None]]) -> bool:
        """Whether a pod's events happened during this log: a watch's first list replays the events of pods of
        earlier experiments (observed before the log's first record), which are no pod of this log's."""
        start = self.first.t if self.first else None
        return any(observed is None or start is None or observed >= start for _, _, _, observed in events)

    def _event(self, event: dict[str, Any], mark: Mark) -> None:
        reason = event.get("reason")
        if reason not in (*WAIT_REASONS, "Preempted"):
            return
        involved = event.get("involvedObject") or event.get("regarding") or {}
        if involved.get("kind", "Pod") != "Pod":
            return
        meta = event.get("metadata") or {}
        key_seen = (meta.get("uid"), meta.get("resourceVersion"))
        if key_seen[0] and key_seen in self.events_seen:  # the same event version re-delivered (watch restart)
            return
        self.events_seen.add(key_seen)
        message = str(event.get("message") or event.get("note") or "")
        stamp = parse_time((event.get("series") or {}).get("lastObservedTime") or event.get("lastTimestamp")
                           or event.get("eventTime"))
        observed = stamp.timestamp() if stamp is not None else None
        uid, name = involved.get("uid"), involved.get("name")
        key = uid if uid in self.attempts else (self.uid_by_name.get(name) if not uid and name is not None else None)
        if key is None:
            self.pending_events.setdefault(uid or name or "", []).append((str(reason), mark, message, observed))
            return
        self.attempts[key] = self._apply_event(self.attempts[key], str(reason), mark, message, observed)

    def _framework(self, fw: dict[str, Any], mark: Mark) -> None:
        meta = fw.get("metadata") or {}
        name = meta.get("name")
        if not name:
            return
        job = self._job(str(name), mark)
        labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
        job.user = job.user or labels.get("userName")
        job.job_name = job.job_name or annotations.get("jobName")
        job.virtual_cluster = job.virtual_cluster or labels.get("virtualCluster")
        status = fw.get("status") or {}
        attempt = status.get("attemptStatus") or {}
        code = _int((attempt.get("completionStatus") or {}).get("code"))
        attempt_id = _int(attempt.get("id"))
        if code is not None and attempt_id is not None:
            job.fw_codes[attempt_id] = code
        for role in attempt.get("taskRoleStatuses") or []:
            for task in (role or {}).get("taskStatuses") or []:
                task_attempt = (task or {}).get("attemptStatus") or {}
                task_code = _int((task_attempt.get("completionStatus") or {}).get("code"))
                if task_attempt.get("podUID") and task_code is not None:
                    job.fc_task_codes[str(task_attempt["podUID"])] = task_code
        state = status.get("state")
        delay = _int((status.get("retryPolicyStatus") or {}).get("retryDelaySec"))
        if state == "Completed":
            if job.finished is None:
                job.finished, job.exit_code = mark, code
                job.state = rest_state(state, code)
        elif isinstance(state, str) and rest_state(state, code, delay) != "UNKNOWN":
            job.state = rest_state(state, code, delay)  # OpenPAI v1.2.0's mapping, the one the rest-server uses

    def _tfjob(self, watch_type: str, tfjob: dict[str, Any], mark: Mark) -> None:
        """A TFJob is its pods' job on a plain Kubernetes cluster; deleted before it finished, it was stopped."""
        name = (tfjob.get("metadata") or {}).get("name")
        if not name or watch_type == "BOOKMARK":
            return
        job = self._job(str(name), mark)
        if job.finished is not None:
            return
        job.state = "STOPPED" if watch_type == "DELETED" else tfjob_state(tfjob)
        if job.state in ("SUCCEEDED", "FAILED", "STOPPED"):
            job.finished = mark

    # -- result ----------------------------------------------------------------------------------------
    def _key_for(self, job: _Job) -> str | None:
        if job.job_key:
            return job.job_key
        if not job.job_name:
            return None
        best = None
        for protocol_name, key in self.job_names.items():
            if job.job_name == protocol_name or job.job_name.startswith(protocol_name + "-"):
                if best is None or len(protocol_name) > len(best[0]):
                    best = (protocol_name, key)
        return best[1] if best else None

    def set_job_names(self, names: dict[str, str]) -> None:
        """Map protocol names (`job-config-1`) to plan keys, for logs that have no submit records."""
        for name, key in names.items():
            self.job_names.setdefault(name, key)

    def result(self) -> Timeline:
        jobs = []
        for job in self.jobs.values():
            attempts = []
            for uid in job.attempt_uids:
                attempt = self.attempts[uid]
                if uid in self.waits:
                    waits = self.waits[uid]
                    attempt = replace(attempt, waits=tuple(w for w in waits if w.kind != TRANSIENT),
                                      transient=tuple(w for w in waits if w.kind == TRANSIENT))
                code = job.fc_task_codes.get(uid)
                if code is not None:
                    attempt = replace(attempt, fc_exit_code=code)
                if f"{job.user}~{job.job_name}" in self.stopped_jobs:
                    attempt = replace(attempt, stopped_by_user=True)
                attempts.append(attempt)
            state = job.state
            if job.finished is None and attempts and state == "UNKNOWN":
                state = "RUNNING" if any(a.started and a.ended is None for a in attempts) else "WAITING"
            if job.submissions and not any(s.accepted for s in job.submissions) and not attempts:
                state = "REJECTED"
            jobs.append(
                JobTimeline(
                    framework_name=job.framework_name,
                    job_key=self._key_for(job),
                    user=job.user,
                    job_name=job.job_name,
                    virtual_cluster=job.virtual_cluster,
                    submissions=tuple(job.submissions),
                    attempts=tuple(attempts),
                    state=state,
                    finished=job.finished,
                    exit_code=job.exit_code,
                    framework_attempt_codes=tuple(sorted(job.fw_codes.items())),
                    first_seen=job.first_seen,
                )
            )
        jobs.sort(key=_job_order)
        orphans = [key for key, events in self.pending_events.items() if key and self._since_first(events)]
        notes = (Text(f"{len(orphans)} 个 Pod 有事件，却从未出现在日志中",
                      f"{len(orphans)} pod(s) had events but never appeared in the log"),) if orphans else ()
        return Timeline(
            experiment=self.experiments[0] if self.experiments else None,
            source=self.source,
            cluster=self.cluster,
            config_name=self.config_name,
            scheduler=self.scheduler,
            vc_nodes=dict(self.vc_nodes),
            jobs=tuple(jobs),
            steps=tuple(self.steps),
            end_status=self.end_status,
            end_reason=self.end_reason,
            end_reason_zh=self.end_reason_zh,
            sessions=self.sessions,
            first=self.first,
            last=self.last,
            record_count=self.count,
            end_mark=self.end_mark,
            experiments_seen=tuple(self.experiments),
            nodes_seen=tuple(self.nodes),
            notes=notes,
            node_gpus=dict(self.node_gpus),
            vc_cells=dict(self.vc_cells),
            cell_history=tuple(self.cell_history),
            node_outages=self.readiness.result(),
            node_cordons=self.cordons.result(),
        )


def _job_order(job: JobTimeline) -> int:
    if job.submitted is not None:
        return job.submitted.seq
    created = [a.created.seq for a in job.attempts if a.created is not None]
    return min(created) if created else 1 << 62


def build_timeline(records: Iterable[Record], job_names: dict[str, str] | None = None) -> Timeline:
    """Fold evidence records into a Timeline. `job_names` maps protocol names to plan keys (watch-only logs)."""
    builder = TimelineBuilder()
    if job_names:
        builder.set_job_names(job_names)
    for record in records:
        builder.feed(record)
    return builder.result()


def display_names(jobs: tuple[JobTimeline, ...], experiment: str, run_tag: str) -> dict[str, str]:
    """framework name -> the name a reader knows (`job-config-1`), `job-config-0 (alice)` when several users ran it."""
    bases: dict[str, str] = {}
    for job in jobs:
        name = job.job_name or job.job_key or job.framework_name
        marks = (TURN_MARK, "") if job.user and run_tag else ()
        suffixes = [f"-{job.user}-{experiment}-{mark}{run_tag}" for mark in marks]
        suffix = next((s for s in suffixes if name.endswith(s)), "")
        bases[job.framework_name] = name[: -len(suffix)] if suffix else name
    shared = {b for b in bases.values() if list(bases.values()).count(b) > 1}
    users = {job.framework_name: job.user for job in jobs}
    return {fw: f"{b} ({users[fw]})" if b in shared and users[fw] else b for fw, b in bases.items()}
