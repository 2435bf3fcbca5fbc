"""The normalized stream of one experiment run: what each job, task and task attempt went through, with names made
comparable across runs (run tags, uids and times removed; timing kept only as order). Built by `extract`, compared
by `diff` (docs/simulator-vs-rehearsal.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AttemptStream:
    """One task attempt (one pod uid): where it ran, the pod phases it went through, its events, how it ended."""

    node: str | None
    gpus: tuple[int, ...]
    phases: tuple[str, ...]  # pod phases in order, repeats collapsed; `Deleted` when the pod was deleted
    events: tuple[str, ...]  # `Reason: message` (normalized) in order, repeats collapsed
    failed_scheduling: int  # FailedScheduling occurrences that are waits (count, or 1 + series.count)
    transient: int  # FailedScheduling occurrences that are transient errors (scheduler_messages.TRANSIENT)
    waits: tuple[str, ...]  # the classes of its FailedScheduling messages, in order, repeats collapsed
    outcome: str
    exit_code: int | None
    fc_exit_code: int | None
    preempted_by: str | None  # the preemptor's task, from the Preempted event


@dataclass(frozen=True)
class JobStream:
    """One job, named `<plan key>@<user>`: an OpenPAI job (a Framework) or, on a plain Kubernetes cluster, a TFJob
    with the PodGroup of the same name."""

    label: str
    submit: tuple[str, ...]  # `<HTTP status> <normalized message>` per submit record
    states: tuple[str, ...]  # its controller's states in order: a Framework's `state`, a TFJob's last true condition
    rest_states: tuple[str, ...]  # the REST state the rest-server derives from each Framework state
    state: str
    exit_code: int | None
    tasks: tuple[tuple[str, tuple[AttemptStream, ...]], ...]  # (`role/index`, its attempts in order)
    events: tuple[str, ...] = ()  # on the TFJob: `Reason: message (count N)` (normalized) in order
    podgroup_events: tuple[str, ...] = ()  # on its PodGroup, the same way
    podgroup_phases: tuple[str, ...] = ()  # its PodGroup's phases in order; `Deleted` when it was deleted


@dataclass(frozen=True)
class Stream:
    """One experiment run's stream."""

    experiment: str | None
    source: str | None  # `sim` or `k8s` (the log's source)
    configs: tuple[str, ...]  # the HiveD configs in force, in order of their switch records
    steps: tuple[str, ...]  # `<step index>:<status>` of the runner's step records
    end: str | None
    jobs: tuple[JobStream, ...]
    start_order: tuple[str, ...]  # jobs in the order their first task started
    preemptions: tuple[str, ...]  # `<victim> <- <preemptor>` in order
    scheduler: str = "hived"  # the plan record's scheduler: another one makes a contrast run

    @property
    def run_id(self) -> str | None:
        """The run's name in a run directory: the experiment, or `<experiment>@<scheduler>` for a contrast run
        (`contrast/<id>@<scheduler>/`, docs/other-schedulers.md)."""
        if self.experiment is None or self.scheduler == "hived":
            return self.experiment
        return f"{self.experiment}@{self.scheduler}"

    def facts(self) -> dict[str, Any]:
        """The stream flattened: one path (`job[low@alice].task[train/0].attempt[0].node`) per fact."""
        out: dict[str, Any] = {
            "experiment": self.experiment, "scheduler": self.scheduler, "configs": list(self.configs),
            "steps": list(self.steps),
            "end": self.end, "jobs": [job.label for job in self.jobs], "start_order": list(self.start_order),
            "preemptions": list(self.preemptions),
            "placements": sorted({f"{a.node}:{','.join(map(str, a.gpus))}" for job in self.jobs for _, attempts
                                  in job.tasks for a in attempts if a.node is not None}),  # the cells the run used
        }
        for job in self.jobs:
            head = f"job[{job.label}]"
            out.update({f"{head}.submit": list(job.submit), f"{head}.states": list(job.states),
                        f"{head}.rest_states": list(job.rest_states), f"{head}.state": job.state,
                        f"{head}.events": list(job.events), f"{head}.podgroup_events": list(job.podgroup_events),
                        f"{head}.podgroup_phases": list(job.podgroup_phases),
                        f"{head}.exit_code": job.exit_code, f"{head}.tasks": [name for name, _ in job.tasks],
                        f"{head}.placements": sorted({f"{a.node}:{','.join(map(str, a.gpus))}" for _, attempts
                                                      in job.tasks for a in attempts if a.node is not None})})
            for name, attempts in job.tasks:
                out[f"{head}.task[{name}].attempts"] = len(attempts)
                for index, attempt in enumerate(attempts):
                    at = f"{head}.task[{name}].attempt[{index}]"
                    out.update({f"{at}.node": attempt.node, f"{at}.gpus": list(attempt.gpus),
                                f"{at}.phases": list(attempt.phases), f"{at}.events": list(attempt.events),
                                f"{at}.failed_scheduling": attempt.failed_scheduling,
                                f"{at}.transient": attempt.transient,
                                f"{at}.waits": list(attempt.waits), f"{at}.outcome": attempt.outcome,
                                f"{at}.exit_code": attempt.exit_code, f"{at}.fc_exit_code": attempt.fc_exit_code,
                                f"{at}.preempted_by": attempt.preempted_by})
        return out
