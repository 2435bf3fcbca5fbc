"""FrameworkController v0.8.0 completion and retry rules, and OpenPAI v1.2.0's REST job states.

Pure functions over small values; the simulated cluster keeps the state and asks these what happens next.
Source: docs/openpai-model.md#the-framework-object (retry policies); the same page covers the exit codes, waiting,
preemption and stop, and the REST job states.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SUCCEEDED = "Succeeded"
FAILED = "Failed"
TRANSIENT = "Transient"
PERMANENT = "Permanent"


@dataclass(frozen=True)
class ExitSpec:
    code: int
    phrase: str
    type_name: str  # Succeeded | Failed
    attributes: tuple[str, ...]  # Transient | Permanent (empty = unknown)

    def completion_type(self) -> dict[str, object]:
        return {"name": self.type_name, "attributes": list(self.attributes)}


_SPECS = (
    ExitSpec(0, "Succeeded", SUCCEEDED, (PERMANENT,)),
    ExitSpec(-100, "ConfigMapExternalDeleted", FAILED, (TRANSIENT,)),
    ExitSpec(-101, "PodExternalDeleted", FAILED, (TRANSIENT,)),
    ExitSpec(-200, "PodCreationPermanentError", FAILED, (PERMANENT,)),
    ExitSpec(-210, "StopFrameworkRequested", FAILED, (PERMANENT,)),
    ExitSpec(-220, "FrameworkAttemptCompletion", FAILED, (PERMANENT,)),
    ExitSpec(-230, "DeleteTaskRequested", FAILED, (PERMANENT,)),
    ExitSpec(-300, "PodFailedWithoutFailedContainer", FAILED, ()),
    ExitSpec(-1000, "PodEvicted", FAILED, (TRANSIENT,)),
    ExitSpec(-1003, "PodPreemptedForCriticalPod", FAILED, (TRANSIENT,)),
    ExitSpec(-1200, "UserContainerDockerOOMKilled", FAILED, (PERMANENT,)),
    ExitSpec(137, "SIGKILL", FAILED, ()),
    ExitSpec(143, "SIGTERM", FAILED, ()),
)
EXIT_SPECS: dict[int, ExitSpec] = {spec.code: spec for spec in _SPECS}

# The codes the simulated cluster produces, by name.
CODE_SUCCEEDED = 0
CODE_POD_EXTERNAL_DELETED = -101  # a preempted pod (docs/openpai-model.md#waiting-preemption-and-stop)
CODE_STOP_REQUESTED = -210
# a task killed because its framework attempt completed (docs/openpai-model.md#job-states)
CODE_ATTEMPT_COMPLETION = -220

DIAGNOSTICS = {
    CODE_POD_EXTERNAL_DELETED: "Pod is being deleted by others",
    CODE_STOP_REQUESTED: "User has requested to stop the Framework",
    CODE_ATTEMPT_COMPLETION: "FrameworkAttempt has completed",
}


def exit_spec(code: int) -> ExitSpec:
    """The exit spec of a code; unknown codes are failures of unknown type (FC's fallback)."""
    return EXIT_SPECS.get(code, ExitSpec(code, "ContainerFailed" if code > 0 else "Unknown", FAILED, ()))


@dataclass(frozen=True)
class RetryPolicy:
    fancy: bool
    max_retry_count: int

    def as_dict(self) -> dict[str, object]:
        return {"fancyRetryPolicy": self.fancy, "maxRetryCount": self.max_retry_count}


def task_retry_policy(gang: bool, task_retry_count: int = 0) -> RetryPolicy:
    """docs/openpai-model.md#gang-allocation-and-affinity-groups: a gang job's tasks never retry on their own; a
    non-gang job's tasks use fancy retry."""
    return RetryPolicy(False, 0) if gang else RetryPolicy(True, task_retry_count)


def framework_retry_policy(job_retry_count: int = 0) -> RetryPolicy:
    """docs/openpai-model.md#the-framework-object: every Framework uses fancy retry with jobRetryCount."""
    return RetryPolicy(True, job_retry_count)


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    accountable: bool  # counts against maxRetryCount (REST retryDetails.user)
    delay_sec: int | None  # None when not retried


def should_retry(policy: RetryPolicy, code: int, accountable_retried: int) -> RetryDecision:
    """FC's RetryPolicySpec: fancy policy retries transient failures always and unaccountably
    (docs/openpai-model.md#waiting-preemption-and-stop step 3), never retries permanent ones; otherwise an accountable
    retry while under maxRetryCount (−2 = always)."""
    spec = exit_spec(code)
    if spec.type_name == SUCCEEDED:
        return RetryDecision(False, False, None)
    if policy.fancy and TRANSIENT in spec.attributes:
        return RetryDecision(True, False, 0)
    if policy.fancy and PERMANENT in spec.attributes:
        return RetryDecision(False, False, None)
    if policy.max_retry_count == -2 or accountable_retried < policy.max_retry_count:
        return RetryDecision(True, True, 0)
    return RetryDecision(False, False, None)


@dataclass(frozen=True)
class CompletionPolicy:
    min_failed: int  # -1 = never triggers
    min_succeeded: int  # -1 = never triggers


@dataclass(frozen=True)
class TaskOutcome:
    """A completed task of the current framework attempt (tasks still live are not listed)."""

    task_role: str  # FC task-role name
    index: int
    code: int


@dataclass(frozen=True)
class AttemptCompletion:
    code: int
    task_role: str
    index: int
    message: str


def attempt_completion(
    policies: dict[str, tuple[CompletionPolicy, int]],
    completed: Sequence[TaskOutcome],
    trigger: TaskOutcome,
) -> AttemptCompletion | None:
    """Whether the framework attempt completes now that `trigger` completed (FC's frameworkAttemptCompletionPolicy).

    `policies` maps FC task-role name -> (policy, task count). Checked on the trigger's task role: enough failed
    tasks fail the attempt with the trigger's code; enough succeeded tasks succeed it (the other tasks are then
    killed, docs/openpai-model.md#job-states); once every task of every role completed without either, the attempt
    succeeds.
    """
    policy, _ = policies[trigger.task_role]
    in_role = [t for t in completed if t.task_role == trigger.task_role]
    failed = sum(1 for t in in_role if t.code != CODE_SUCCEEDED)
    succeeded = len(in_role) - failed
    role = trigger.task_role
    if trigger.code != CODE_SUCCEEDED and policy.min_failed != -1 and failed >= policy.min_failed:
        message = f"FailedTaskCount {failed} has reached MinFailedTaskCount {policy.min_failed} in TaskRole {role}"
        return AttemptCompletion(trigger.code, role, trigger.index, message)
    if trigger.code == CODE_SUCCEEDED and policy.min_succeeded != -1 and succeeded >= policy.min_succeeded:
        message = (
            f"SucceededTaskCount {succeeded} has reached MinSucceededTaskCount {policy.min_succeeded} "
            f"in TaskRole {role}"
        )
        return AttemptCompletion(CODE_SUCCEEDED, role, trigger.index, message)
    if len(completed) >= sum(count for _, count in policies.values()):
        return AttemptCompletion(CODE_SUCCEEDED, role, trigger.index, "All Tasks are completed")
    return None


_WAITING_FC = ("AttemptCreationPending", "AttemptCreationRequested", "AttemptPreparing")
_DELETING_FC = ("AttemptDeletionPending", "AttemptDeletionRequested", "AttemptDeleting")


def rest_state(fc_state: str, code: int | None = None, retry_delay_sec: int | None = None) -> str:
    """OpenPAI's REST state of a job (or task) from its FC state (docs/openpai-model.md#job-states)."""
    if fc_state in _WAITING_FC:
        return "WAITING"
    if fc_state == "AttemptRunning":
        return "RUNNING"
    if fc_state in _DELETING_FC:
        return "STOPPING" if code in (CODE_STOP_REQUESTED, CODE_ATTEMPT_COMPLETION) else "RUNNING"
    if fc_state == "AttemptCompleted":
        return "RUNNING" if retry_delay_sec is None else "WAITING"
    if fc_state == "Completed":
        if code == CODE_SUCCEEDED:
            return "SUCCEEDED"
        return "STOPPED" if code in (CODE_STOP_REQUESTED, CODE_ATTEMPT_COMPLETION) else "FAILED"
    return "UNKNOWN"
