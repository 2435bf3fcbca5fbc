"""Timelines: what happened to each OpenPAI job, task and task attempt, built from an evidence log.

Pure: `build_timeline(records)` folds evidence records (any iterable, so a 1 GB log streams) into frozen
dataclasses. Every fact carries a `Mark` — the record's seq (the evidence) and the record's time.

Times are the records' times (when the watcher received the change; virtual time on the simulator), so that
clock skew between nodes does not reorder events; the objects' own timestamps (kubelet's `startedAt`) are kept
beside them for display only.

The shapes the report's charts use:
- `Timeline.jobs` -> `JobTimeline` (one per OpenPAI job: plan key, user, job name, framework name = md5 of
  `user~job`, docs/openpai-model.md#framework-names), its `submissions` (the runner's records, a rejected one
  included) and
- `JobTimeline.attempts` -> `Attempt` (one per pod uid, i.e. per task attempt; a re-created pod has the same
  name and a new uid, docs/openpai-model.md#framework-names): `task_role`, `task_index`, `node`, `gpus`, `created`,
  `waits` (FailedScheduling with HiveD's reason, docs/hived-config-and-cells.md#wait-reasons), `bound`, `started`,
  `ended`, `outcome`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

# re-exported (`as`) for callers of hivedlab.checker.timeline
from hivedlab.checker.pod_facts import LeafCell as LeafCell
from hivedlab.checker.pod_facts import VcShare as VcShare
from hivedlab.checker.pod_facts import app_status as app_status
from hivedlab.checker.pod_facts import bind_gpus as bind_gpus
from hivedlab.checker.pod_facts import bind_node as bind_node
from hivedlab.checker.pod_facts import gpu_request as gpu_request
from hivedlab.checker.pod_facts import hived_reason as hived_reason
from hivedlab.checker.pod_facts import node_gpus_from_config as node_gpus_from_config
from hivedlab.checker.pod_facts import pod_priority
from hivedlab.checker.pod_facts import vc_cells_from_config as vc_cells_from_config
from hivedlab.checker.pod_facts import vc_nodes_from_config as vc_nodes_from_config
from hivedlab.evidence import Record, parse_time
from hivedlab.models.hived.annotations import BIND_INFO as BIND_INFO
from hivedlab.models.hived.annotations import LEAF_CELL_ISOLATION as LEAF_CELL_ISOLATION
from hivedlab.models.kubeflow.manifests import WAIT_REASONS as WAIT_REASONS
from hivedlab.models.kubeflow.manifests import tf_pod, tfjob_state
from hivedlab.models.openpai.jobstate import CODE_ATTEMPT_COMPLETION, CODE_POD_EXTERNAL_DELETED, rest_state
from hivedlab.models.openpai.naming import framework_name
from hivedlab.models.scheduler_messages import TRANSIENT, UNKNOWN, classify

# FrameworkController exit codes (docs/openpai-model.md#exit-codes)
OUTCOMES = ("waiting", "bound", "running", "succeeded", "failed", "preempted", "deleted", "job-completed")


class Mark(NamedTuple):
    """When something was observed: the evidence record's seq and time (`t`: POSIX seconds)."""

    seq: int
    time: str
    t: float


@dataclass(frozen=True)
class Wait:
    """One FailedScheduling event (or repeat of it): HiveD's reason, e.g. `insufficient capacity when scheduling
    in VC vc1` (docs/hived-config-and-cells.md#wait-reasons), or the whole message when it is not a HiveD wait; and
    its class in the table of scheduler messages (`scheduler_messages.classify`)."""

    mark: Mark
    reason: str
    message: str
    kind: str = UNKNOWN


@dataclass(frozen=True)
class Attempt:
    """One task attempt = one pod uid."""

    pod_name: str
    uid: str
    task_role: str | None
    task_index: int | None
    framework_attempt: int | None = None  # FC_FRAMEWORK_ATTEMPT_ID
    task_attempt: int | None = None  # FC_TASK_ATTEMPT_ID
    created: Mark | None = None
    waits: tuple[Wait, ...] = ()  # waits for something (capacity, quota, victims, ...): never a transient error
    transient: tuple[Wait, ...] = ()  # transient scheduler errors, retried (docs/checker.md#scheduler-messages)
    bound: Mark | None = None
    node: str | None = None
    gpus: tuple[int, ...] = ()
    started: Mark | None = None  # the app container runs
    started_at: str | None = None  # kubelet's own startedAt (node clock)
    terminated: Mark | None = None
    exit_code: int | None = None
    preempted: Mark | None = None
    preempted_by: str | None = None  # the Preempted event's message, "by default/<pod> on node <node>"
    deleted: Mark | None = None
    fc_exit_code: int | None = None  # the Framework's task attempt completion code (−101 = PodExternalDeleted)
    released: Mark | None = None  # terminal phase, DELETED record or successor, whichever first: HiveD frees the cells
    gpu_request: int | None = None  # the app container's nvidia.com/gpu limit (pods of other schedulers)
    recreated: Mark | None = None  # a new pod of the same name (new uid) appeared: FrameworkController retried it
    priority: int | None = None  # the HiveD scheduling spec's priority (-1: opportunistic)

    @property
    def cells(self) -> tuple[LeafCell, ...]:
        """The leaf cells its bind info names (none known before it was bound, or without leaf cell indices)."""
        return tuple(LeafCell(self.node, gpu) for gpu in self.gpus) if self.node is not None else ()

    @property
    def opportunistic(self) -> bool:
        return self.priority is not None and self.priority < 0

    @property
    def deleted_while_running(self) -> bool:
        """Deleted (deletion started or DELETED) while its container ran, before any exit of its own."""
        deleted = self.deleted
        return (deleted is not None and self.started is not None and self.started.seq <= deleted.seq
                and (self.terminated is None or self.terminated.seq >= deleted.seq))

    @property
    def preempted_silently(self) -> bool:
        """Preempted without a Preempted event in the log: deleted while running, then re-created."""
        return self.preempted is None and self.recreated is not None and self.deleted_while_running

    @property
    def ended(self) -> Mark | None:
        marks = [m for m in (self.terminated, self.preempted, self.deleted) if m is not None]
        return min(marks, key=lambda m: m.seq) if marks else None

    @property
    def outcome(self) -> str:
        """One of OUTCOMES (the state the attempt ended in, or is in at the end of the log)."""
        deleted = self.fc_exit_code == CODE_POD_EXTERNAL_DELETED and self.exit_code is None
        if self.preempted is not None or deleted or self.preempted_silently:
            return "preempted"
        if self.fc_exit_code == CODE_ATTEMPT_COMPLETION and self.exit_code != 0:
            return "job-completed"  # stopped (exit 143, or deleted before it ran) once the job had completed
        if self.exit_code is not None:
            return "succeeded" if self.exit_code == 0 else "failed"
        if self.deleted is not None:
            return "deleted"
        if self.started is not None:
            return "running"
        if self.bound is not None:
            return "bound"
        return "waiting"

    @property
    def waited(self) -> bool:
        return bool(self.waits)


@dataclass(frozen=True)
class Submission:
    """The runner's `submit` record; a rejected submission leaves no pod, only this."""

    mark: Mark
    user: str
    job_key: str | None
    job_name: str
    framework_name: str
    status: int | None
    message: str | None
    expect: str | None = None

    @property
    def accepted(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True)
class JobTimeline:
    """One OpenPAI job. `state` is the REST state derived from the Framework (docs/openpai-model.md#job-states) or the
    pods."""

    framework_name: str
    job_key: str | None
    user: str | None
    job_name: str | None
    virtual_cluster: str | None
    submissions: tuple[Submission, ...] = ()
    attempts: tuple[Attempt, ...] = ()
    state: str = "UNKNOWN"
    finished: Mark | None = None
    exit_code: int | None = None
    framework_attempt_codes: tuple[tuple[int, int], ...] = ()  # (FC attempt id, completion code)
    first_seen: Mark | None = None  # the job's first record of any kind

    @property
    def submitted(self) -> Mark | None:
        """The accepted submission; in a watch-only log (no runner records), when the job was first seen."""
        accepted = [s.mark for s in self.submissions if s.accepted]
        if accepted:
            return accepted[0]
        return self.submissions[0].mark if self.submissions else self.first_seen

    @property
    def first_started(self) -> Mark | None:
        starts = [a.started for a in self.attempts if a.started is not None]
        return min(starts, key=lambda m: m.seq) if starts else None

    @property
    def last_ended(self) -> Mark | None:
        ends = [a.ended for a in self.attempts if a.ended is not None]
        return max(ends, key=lambda m: m.seq) if ends else None

    @property
    def end(self) -> Mark | None:
        """When the job finished (Framework completed), else when its last attempt ended once all have."""
        if self.finished is not None:
            return self.finished
        if self.attempts and all(a.ended is not None for a in self.attempts):
            return self.last_ended
        return None


@dataclass(frozen=True)
class Step:
    mark: Mark
    index: int | None
    status: str
    step: Any


@dataclass(frozen=True)
class Timeline:
    """Everything the verdicts and the report need from one log."""

    experiment: str | None
    source: str | None
    cluster: str | None
    config_name: str | None
    vc_nodes: dict[str, tuple[str, ...]]
    jobs: tuple[JobTimeline, ...]
    steps: tuple[Step, ...] = ()
    end_status: str | None = None  # the last session's: finished | interrupted | failed | None (no end record)
    end_reason: str | None = None
    sessions: int = 0  # `plan` records: a resumed run adds one per session (docs/evidence.md)
    first: Mark | None = None
    last: Mark | None = None
    record_count: int = 0
    end_mark: Mark | None = None  # the end record
    experiments_seen: tuple[str, ...] = ()
    nodes_seen: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    node_gpus: dict[str, int] = field(default_factory=dict)  # GPUs per node in the log's HiveD config
    vc_cells: dict[str, tuple[VcShare, ...]] = field(default_factory=dict)  # each VC's cells in that config
    cell_history: tuple[tuple[int, dict[str, tuple[VcShare, ...]]], ...] = ()  # (switch record, vc_cells) in order
    scheduler: str = "hived"  # the plan record's scheduler (docs/other-schedulers.md)

    def jobs_for(self, key: str) -> tuple[JobTimeline, ...]:
        return tuple(job for job in self.jobs if job.job_key == key)

    def vc_cells_at(self, seq: float) -> dict[str, tuple[VcShare, ...]]:
        """Each VC's cells in the config in force at record `seq`: the last switch before it (the first config for a
        record before any switch; `vc_cells` when the log has no switch record)."""
        found = self.cell_history[0][1] if self.cell_history else self.vc_cells
        for switched, cells in self.cell_history:
            if switched <= seq:
                found = cells
        return found


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


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
        self.pending_events: dict[str, list[tuple[str, Mark, str]]] = {}  # pod key -> (reason, mark, message)
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
        self.sessions = 0
        self.end_mark: Mark | None = None
        self.list_start: Mark | None = None  # the first LISTED pod record of the re-list under way
        self.first: Mark | None = None
        self.last: Mark | None = None
        self.count = 0
        self.nodes: dict[str, None] = {}
        self.notes: list[str] = []
        self.job_names: dict[str, str] = {}  # protocol name -> plan key (for logs without submit records)

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

    def _job(self, name: str, mark: Mark | None = None) -> _Job:
        job = self.jobs.get(name)
        if job is None:
            job = self.jobs[name] = _Job(name, first_seen=mark)
        return job

    def _action(self, action: dict[str, Any], mark: Mark) -> None:
        kind = action.get("type")
        if kind == "plan":  # a session begins: how the run ends is what its last session's `end` says
            self.sessions += 1
            self.end_status = self.end_reason = None
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
                priority=pod_priority(annotations),
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
            for reason, event_mark, message in self.pending_events.pop(uid, []) + self.pending_events.pop(name, []):
                attempt = self._apply_event(attempt, reason, event_mark, message)
        attempt = self._pod_state(attempt, pod, annotations, mark)
        if watch_type == "DELETED" and (attempt.deleted is None or attempt.released is None):
            attempt = replace(attempt, deleted=attempt.deleted or mark, released=attempt.released or gone)
        self.attempts[uid] = attempt

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
        return replace(attempt, **changes) if changes else attempt

    def _apply_event(self, attempt: Attempt, reason: str, mark: Mark, message: str) -> Attempt:
        if reason in WAIT_REASONS:
            # kept aside (a tuple rebuilt per event would be quadratic in a long wait); attached in result()
            cached = self.reasons.get(message)
            if cached is None:  # a long wait repeats the same message thousands of times: keep one copy
                cached = self.reasons[message] = (message, hived_reason(message), classify(message))
            self.waits.setdefault(attempt.uid, []).append(Wait(mark, cached[1], cached[0], cached[2]))
            return attempt
        if reason == "Preempted" and attempt.preempted is None:
            return replace(attempt, preempted=mark, preempted_by=message)
        return attempt

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
        uid, name = involved.get("uid"), involved.get("name")
        key = uid if uid in self.attempts else (self.uid_by_name.get(name) if not uid and name is not None else None)
        if key is None:
            self.pending_events.setdefault(uid or name or "", []).append((str(reason), mark, message))
            return
        self.attempts[key] = self._apply_event(self.attempts[key], str(reason), mark, message)

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
        orphans = [key for key in self.pending_events if key]
        notes = list(self.notes)
        if orphans:
            notes.append(f"{len(orphans)} pod(s) had events but never appeared in the log")
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
            sessions=self.sessions,
            first=self.first,
            last=self.last,
            record_count=self.count,
            end_mark=self.end_mark,
            experiments_seen=tuple(self.experiments),
            nodes_seen=tuple(self.nodes),
            notes=tuple(notes),
            node_gpus=dict(self.node_gpus),
            vc_cells=dict(self.vc_cells),
            cell_history=tuple(self.cell_history),
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
        suffix = f"-{job.user}-{experiment}-{run_tag}" if job.user and run_tag else ""
        bases[job.framework_name] = name[: -len(suffix)] if suffix and name.endswith(suffix) else name
    shared = {b for b in bases.values() if list(bases.values()).count(b) > 1}
    users = {job.framework_name: job.user for job in jobs}
    return {fw: f"{b} ({users[fw]})" if b in shared and users[fw] else b for fw, b in bases.items()}
