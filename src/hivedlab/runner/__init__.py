"""Run experiment plans on a backend (simulated or real) into a run directory (`hivedlab.rundir`).

- `run_types`: the plain data (a run's context, a turn, what a run submitted and how it ended);
- `turns`: who submits what under which name;
- `steps`: one plan on one backend, every action recorded in the evidence log (docs/experiment-plans.md);
- `refusals`: a submission the rest-server answered against the plan, said at once and in the run's end record;
- `experiments`: several plans into a run directory, nothing recorded lost, the run record kept current;
- `pipeline`: afterwards, the verdicts and the report;
- `backends`: the one place that opens a backend for a cluster kind.
"""

from hivedlab.runner.experiments import prepare_folder, run_experiments, submitters
from hivedlab.runner.pipeline import PIPELINE, PipelineResult, PipelineStep, run_pipeline
from hivedlab.runner.run_types import (
    BackendFactory,
    ExperimentRun,
    RunContext,
    Submitted,
    Turn,
    is_group_plan,
    turn_folder,
)
from hivedlab.runner.steps import experiment_seed, group_seed, layout_for, run_plan
from hivedlab.runner.turns import (
    job_name_for,
    k8s_plans,
    plan_turns,
    protocol_with_name,
    step_members,
    submitting_members,
)

__all__ = [
    "PIPELINE", "BackendFactory", "ExperimentRun", "PipelineResult", "PipelineStep", "RunContext", "Submitted", "Turn",
    "experiment_seed", "group_seed", "is_group_plan", "job_name_for", "k8s_plans", "layout_for", "plan_turns",
    "prepare_folder", "protocol_with_name", "run_experiments", "run_pipeline", "run_plan", "step_members", "submitters",
    "submitting_members", "turn_folder",
]
