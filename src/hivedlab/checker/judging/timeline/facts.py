"""The timeline's facts: frozen dataclasses of what happened to each job, task and task attempt; every fact carries a
`Mark` (the record's seq and time). Built by `builder`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from hivedlab.basics.text import Text
from hivedlab.checker.judging.pod_facts import LeafCell, VcShare
from hivedlab.models.openpai.jobstate import CODE_ATTEMPT_COMPLETION, CODE_POD_EXTERNAL_DELETED
from hivedlab.models.scheduler_messages import UNKNOWN

# FrameworkController exit codes (docs/openpai-model.md#exit-codes)
OUTCOMES = ("waiting", "bound", "running", "succeeded", "failed", "preempted", "deleted", "job-completed", "stopped")


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
    # the event's own time (series.lastObservedTime, lastTimestamp or eventTime; POSIX seconds, whole seconds on
    # core/v1): a scheduler's event can reach the log seconds after it happened (kube-batch's recorder is throttled)
    observed: float | None = None

    @property
    def t(self) -> float:
        """When the scheduler said it: the event's own time where it has one, else when the log saw it."""
        return self.observed if self.observed is not None and self.observed <= self.mark.t else self.mark.t


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
    stopped_by_user: bool = False  # its job was among those the user stopped (the end record's `jobs`)
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
        if self.stopped_by_user and self.exit_code != 0 and (self.ended is not None or self.fc_exit_code is not None):
            return "stopped"  # not "completed": the user stopped its job (`hivedlab stop`, the Ctrl-C question)
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
class Outage:
    """One span in which a node was not Ready: from the record that showed its Ready condition leave "True" (None:
    it was not Ready when the log first showed it) to the record that showed it "True" again (None: still not Ready
    when the log ended)."""

    node: str
    start: Mark | None
    end: Mark | None
    status: str = "False"  # the Ready condition's status in the span: False | Unknown | "" (no Ready condition)
    reason: str = ""  # the condition's reason, e.g. KubeletNotReady


@dataclass(frozen=True)
class Cordon:
    """One span in which a node was cordoned (`spec.unschedulable: true`, what `kubectl cordon` and `kubectl drain`
    set): from the record that showed it set (None: set when the log first showed the node) to the record that showed
    it cleared (None: still set when the log ended). No new pod is scheduled onto the node meanwhile; HiveD counts it
    bad (docs/hived-config-and-cells.md#bad-nodes-and-doomed-cells)."""

    node: str
    start: Mark | None
    end: Mark | None


NodeSpan = Outage | Cordon  # what `timeline.nodes` finds the pods of: a node not Ready, or cordoned


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
    end_reason_zh: str | None = None  # the end record's reason in Chinese (`hivedlab.rundir.RunOutcome`)
    sessions: int = 0  # `plan` records: a resumed run adds one per session (docs/evidence.md)
    first: Mark | None = None
    last: Mark | None = None
    record_count: int = 0
    end_mark: Mark | None = None  # the end record
    experiments_seen: tuple[str, ...] = ()
    nodes_seen: tuple[str, ...] = ()
    notes: tuple[Text, ...] = field(default=())  # what the report notes about the log, in both languages
    node_gpus: dict[str, int] = field(default_factory=dict)  # GPUs per node in the log's HiveD config
    vc_cells: dict[str, tuple[VcShare, ...]] = field(default_factory=dict)  # each VC's cells in that config
    cell_history: tuple[tuple[int, dict[str, tuple[VcShare, ...]]], ...] = ()  # (switch record, vc_cells) in order
    scheduler: str = "hived"  # the plan record's scheduler (docs/other-schedulers.md)
    node_outages: tuple[Outage, ...] = ()  # nodes whose Ready condition changed in the log (`timeline.nodes`)
    node_cordons: tuple[Cordon, ...] = ()  # nodes cordoned or uncordoned in the log (`timeline.nodes`)

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


