"""The interface the cluster backends implement: the simulated cluster (`hivedlab.backends.sim`), a real
OpenPAI v1.2.0 + HiveD v0.3.4 cluster (`hivedlab.backends.pai`) and a plain Kubernetes cluster with Kubeflow's TFJob
(`hivedlab.backends.k8s`, docs/kubeflow-on-kubernetes.md).

The runner (`hivedlab.runner`) drives a plan only through this interface. A backend writes every object it
observes (Pods, core/v1 Events, Frameworks) into the run's `EvidenceWriter`; the runner writes the action
records (`plan`, `config-switch`, `submit`, `stop`, `step`, `end`) through the same writer. What a backend learnt
about its cluster (`RunInfo`) goes into run.json; a real backend asks before undoing a run on Ctrl-C
(`confirm_on_interrupt`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

# REST job / task states of OpenPAI v1.2.0 (docs/openpai-model.md#job-states)
JOB_STATES = ("WAITING", "RUNNING", "STOPPING", "SUCCEEDED", "FAILED", "STOPPED", "UNKNOWN")
FINISHED_STATES = ("SUCCEEDED", "FAILED", "STOPPED")


@dataclass(frozen=True)
class Reply:
    """An HTTP reply of the rest-server: status code and the decoded body (JSON value, or text)."""

    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "body": self.body}


@dataclass(frozen=True)
class SubmitResult:
    """What a submission did. `job_name` is the name on the cluster (the protocol's `name`),
    `framework_name` the md5 of `user~job_name` (docs/openpai-model.md#framework-names)."""

    user: str
    job_key: str
    job_name: str
    framework_name: str
    reply: Reply

    @property
    def accepted(self) -> bool:
        return self.reply.ok


@dataclass(frozen=True)
class TaskStatus:
    """One task as the REST job detail shows it (`taskRoles.<fcTaskRole>.taskStatuses[i]`)."""

    task_role: str  # FrameworkController task-role name (lower-cased, [a-z0-9] only)
    index: int
    state: str  # one of JOB_STATES
    node: str | None = None
    retries: int = 0
    exit_code: int | None = None


@dataclass(frozen=True)
class JobStatus:
    """A job's state as the runner's `wait` steps need it.

    `waiting`: some task pod of the job has had a `FailedScheduling` event;
    `ran`: some task container of the job has run (now or earlier).
    """

    user: str
    job_name: str
    state: str  # one of JOB_STATES; WAITING right after submission
    retries: int = 0
    waiting: bool = False
    ran: bool = False
    tasks: tuple[TaskStatus, ...] = field(default_factory=tuple)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_STATES


@dataclass(frozen=True)
class RunInfo:
    """What a backend learnt about its cluster, kept in run.json (`hivedlab.rundir.RunRecord`); empty on the simulator.

    `openpai_version`: what the rest-server's /api/v2/info said ("" when it said nothing); `emulated_nodes`: the
    nodes labelled as emulated (a rehearsal cluster, docs/rehearsal.md); `gpu_nodes`: a plain Kubernetes cluster's
    nodes with their allocatable GPUs."""

    openpai_version: str = ""
    emulated_nodes: tuple[str, ...] = ()
    gpu_nodes: Mapping[str, int] = field(default_factory=dict)

    @property
    def rehearsal(self) -> bool:
        return bool(self.emulated_nodes)

    @property
    def cluster_kind(self) -> dict[str, Any]:
        """run.json's `cluster_kind`: `{kind: rehearsal, emulated_nodes}` on a rehearsal cluster, else empty."""
        return {"kind": "rehearsal", "emulated_nodes": list(self.emulated_nodes)} if self.rehearsal else {}

    def then(self, later: RunInfo) -> RunInfo:
        """What the run knows once `later`'s backend has run too: what `later` learnt replaces what was known, what
        it did not learn stays."""
        return RunInfo(later.openpai_version or self.openpai_version, later.emulated_nodes or self.emulated_nodes,
                       later.gpu_nodes or self.gpu_nodes)


# puts the named HiveD config (`two-vc`, `one-vc`) in place on the cluster; returns what else it changed, to be said
ConfigSwitcher = Callable[[str], str | None]

_YES = ("y", "yes", "是")


def confirm_on_interrupt(ask: Callable[[str], str], interactive: bool, question_en: str, question_zh: str) -> bool:
    """Ctrl-C on a real cluster: whether the user wants what this run did undone (its jobs stopped, its objects
    removed). No terminal, an end of input or a second Ctrl-C is a no: the run's jobs stay, and it can be resumed."""
    if not interactive:
        return False
    try:
        answer = ask(f"\n{question_en}? [y/N] / {question_zh} ")
    except (EOFError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in _YES


@runtime_checkable
class Backend(Protocol):
    """A cluster the runner can drive. Every method may raise `hivedlab.basics.errors.HivedlabError`
    for a failure the user must see (one line); a rejected submission is not a failure but a reply."""

    cluster: str  # "sim", "pai" or "k8s"
    run_info: RunInfo  # what it learnt about its cluster while it opened (and ran): read after `close`

    def use_config_switcher(self, switcher: ConfigSwitcher) -> None:
        """From now on, let `switcher(name)` put a HiveD config in place where `switch_config` would ask the admin
        (a rehearsal cluster run from this machine: it stands for the admin's paictl commands). The simulator, its
        own admin, ignores it; a backend without HiveD refuses it."""

    def switch_config(self, name: str, text: str) -> None:
        """Make `text` (a HiveD config YAML, named `two-vc` or `one-vc`) the scheduler's config.
        On a real cluster this checks that the deployed config matches or asks the user to switch it.
        Called again by a plan's `switch_config` step while jobs run: HiveD's work-preserving reconfiguration."""

    def restart_hived(self) -> None:
        """Restart HiveD with the config it runs (crash recovery), jobs left running (a plan's `restart` step)."""

    def submit(self, user: str, job_key: str, protocol: str) -> SubmitResult:
        """Submit the job protocol YAML text exactly as given (POST /api/v2/jobs, text/yaml) as `user`.
        `job_key` is the plan's job key (the simulator looks up per-job knobs by it)."""

    def stop(self, user: str, job_name: str) -> Reply:
        """Stop a job (PUT .../executionType {"value": "STOP"})."""

    def job_status(self, user: str, job_name: str) -> JobStatus:
        """The job's current status; state UNKNOWN for a job the cluster does not know."""

    def advance_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Let the cluster run until `predicate()` is true (True) or `timeout_s` seconds passed (False):
        virtual seconds on the simulator, wall seconds on a real cluster."""

    def now(self) -> str:
        """The backend's current time, RFC 3339 UTC with microseconds (virtual time on the simulator)."""

    def close(self) -> None:
        """Release connections/watchers; the evidence writer is closed by its owner, not here."""
