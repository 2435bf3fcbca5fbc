"""The runner's plain data: a run's context, one turn of a plan, what a run submitted and how it ended."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hivedlab.backends.protocol import Backend
from hivedlab.basics.text import Text
from hivedlab.evidence import EvidenceWriter
from hivedlab.lab_group.inventory import Inventory
from hivedlab.plans.loader import Plan, SubmitStep
from hivedlab.rundir import RunDir, RunOutcome

BackendFactory = Callable[[Plan, EvidenceWriter], Backend]


@dataclass(frozen=True)
class Submitted:
    user: str
    job_key: str
    job_name: str
    accepted: bool


@dataclass(frozen=True)
class ExperimentRun:
    """What running one plan gave: where its log is and how it ended (`outcome`, as its end record and run.json say:
    finished | stopped | refused | failed; an interrupted run raises `RunInterrupted`)."""

    experiment: str
    evidence: Path
    outcome: RunOutcome
    run_id: str  # the folder under experiments/ or contrast/: the plan's run id (`<id>@<scheduler>` for a contrast
    #              run, `Plan.run_id`), or `<id>/<user>` for one member's turn (`turn_folder`)
    contrast: bool  # run without HiveD, under contrast/ (docs/other-schedulers.md)
    submitted: tuple[Submitted, ...] = ()
    hardware: Text | None = None  # why it ran on the manual's simulated hardware, not the group's (`layout_for`)
    layout_notes: tuple[Text, ...] = ()  # how the config on the group's own hardware differs from the manual's
    member: str = ""  # the user whose turn this run is; "" for the group's run (the one-member layout)


@dataclass(frozen=True)
class RunContext:
    out: Path
    cluster: str  # sim | pai | k8s
    seed: int | None
    inventory: Inventory
    run_tag: str  # makes job names unique per run: `s<seed>` on the simulator, a UTC stamp on a real cluster
    replace: bool = False  # simulated runs only: move an earlier simulated run of the same experiment aside
    member: str = ""  # whose turn (a user): their runs go to `<id>/<user>/` folders; "" = the first member's, `<id>/`

    @property
    def run_dir(self) -> RunDir:
        return RunDir(self.out)


@dataclass(frozen=True)
class Turn:
    """One run of a plan: the group's (`member` "") or one member's turn (docs/evidence.md, "several members")."""

    plan: Plan
    member: str = ""

    @property
    def run_id(self) -> str:
        return turn_folder(self.plan, self.member)


def is_group_plan(plan: Plan) -> bool:
    """Every member submits at once (vc-safety, as the manual's step 4.2 asks): the plan has no turns; it runs once
    for the group, whoever's turn it is."""
    submits = [step for step in plan.steps if isinstance(step, SubmitStep)]
    return bool(submits) and all(step.as_ == "each-member" for step in submits)


def turn_folder(plan: Plan, member: str) -> str:
    """A run's folder under experiments/ (or contrast/): `<run id>`, or `<run id>/<user>` for a member's turn. A
    contrast run (ungraded, docs/other-schedulers.md) keeps its one folder, whoever submits."""
    return f"{plan.run_id}/{member}" if member and not is_group_plan(plan) and not plan.contrast else plan.run_id


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run: its log already ends with an `interrupted` end record; `run` says so, for run.json."""

    def __init__(self, run: ExperimentRun) -> None:
        super().__init__(run.run_id)
        self.run = run
