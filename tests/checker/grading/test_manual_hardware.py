"""A group whose single worker has one GPU ran on the manual's simulated hardware: the grader accepts the simulated
worker as the group's own machine where run.json records that, and only there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hivedlab.backends.sim import SimCluster
from hivedlab.evidence import EvidenceWriter
from hivedlab.lab_group.inventory import Inventory, Member
from hivedlab.lab_group.layouts import SIM_WORKER
from hivedlab.plans.loader import Plan, load_plan
from hivedlab.runner import RunContext, experiment_seed, run_experiments, run_pipeline
from tests.support.graded_runs import grade

GROUP = Inventory("solo", (Member("Ana", "ana", ("dev-box",), "box-ana", "192.0.2.1"),
                           Member("Cy", "cy", ("master",), "master-cy", "192.0.2.2"),
                           Member("Ben", "ben", ("worker",), "node-ben", "192.0.2.3", 1)))


def _sim(plan: Plan, writer: EvidenceWriter) -> SimCluster:
    return SimCluster(writer, experiment_seed(1, plan.id))


@pytest.fixture
def solo_run(tmp_path: Path, quick_charts: None) -> Path:
    root = tmp_path / "solo"
    runs = run_experiments([load_plan("gang")], _sim, RunContext(root, "sim", 1, GROUP, "s1"))
    run_pipeline(root, runs, "en")
    return root


def test_the_simulated_worker_is_the_groups_where_run_json_says_so(solo_run: Path) -> None:
    assert SIM_WORKER in (solo_run / "hived" / "one-vc.yaml").read_text(encoding="utf-8")
    flags = grade(solo_run).flags
    assert "config-unknown-node" not in flags and "unknown-node" not in flags


def test_without_the_record_the_simulated_worker_is_a_stranger(solo_run: Path) -> None:
    run = json.loads((solo_run / "run.json").read_text(encoding="utf-8"))
    del run["hardware"]
    (solo_run / "run.json").write_text(json.dumps(run), encoding="utf-8")
    flags = grade(solo_run).flags
    assert "config-unknown-node" in flags and "unknown-node" in flags
