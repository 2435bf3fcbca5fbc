"""Wrong behaviour made by a deliberately broken simulator (the second way, beside edited and re-sealed logs): no
preemption (the preemptor bound onto the victim's GPU at once), VC boundaries ignored, a gang started task by task,
`gangAllocation: false` ignored. The checker must call every such run inconsistent, for the right reason."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hivedlab.backends.sim import SimCluster, hooks
from hivedlab.models import hived
from tests.backends.sim.test_lab_experiments import run


def judged(cli: Callable[..., Any], tmp_path: Path, experiment: str) -> dict[str, Any]:
    """Run a shipped plan on the (broken) simulator and judge its log with `hivedlab check`."""
    run(tmp_path, experiment, 1)
    log = tmp_path / "experiments" / experiment / "evidence.jsonl"
    result = cli("check", str(log), "--format", "json")
    data: dict[str, Any] = json.loads(result.out)
    return data


def answer(data: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(a for a in data["answers"] if a["kind"] == kind)


@pytest.fixture
def no_preemption(monkeypatch: pytest.MonkeyPatch) -> None:
    real_ask, real_add = SimCluster._ask_hived, hived.HivedScheduler.add_allocated_pod

    def ask(self, ref, spec, nodes, phase):  # type: ignore[no-untyped-def]
        result = real_ask(self, ref, spec, nodes, phase)
        if phase == hived.PHASE_FILTERING and isinstance(result, hived.Preempt):
            victim = result.victims[sorted(result.victims)[0]][0]
            info = self._bound[victim.uid][2]
            return hived.Bind(info.node, info.leaf_cell_isolation, info)
        return result

    def add(self, ref, spec, info):  # type: ignore[no-untyped-def]
        try:
            return real_add(self, ref, spec, info)
        except Exception:  # the broken cluster double-books what HiveD refuses
            return None

    monkeypatch.setattr(SimCluster, "_ask_hived", ask)
    monkeypatch.setattr(hived.HivedScheduler, "add_allocated_pod", add)


@pytest.mark.parametrize("experiment", ["priority", "opportunistic"])
def test_a_simulator_that_never_preempts_is_caught(cli, tmp_path: Path, no_preemption: None, experiment: str) -> None:
    data = judged(cli, tmp_path, experiment)
    assert data["verdict"] == "inconsistent", data
    exclusive = answer(data, "gpu-exclusive")
    assert exclusive["verdict"] == "inconsistent" and "still held it" in exclusive["answer"]["en"]


@pytest.fixture
def vc_boundaries_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """The broken cluster's HiveD hands vc1 every cell of the physical cluster, while the log records the lab's
    two-VC config: vc1's jobs may then run on the default VC's machine."""
    real_new = hooks.new_scheduler

    def new(mapping, name, clock):  # type: ignore[no-untyped-def]
        if name == "two-vc":
            mapping = copy.deepcopy(mapping)
            cells = [cell for vc in mapping["virtualClusters"].values() for cell in vc["virtualCells"]]
            mapping["virtualClusters"] = {"default": {"virtualCells": []}, "vc1": {"virtualCells": cells}}
        return real_new(mapping, name, clock)

    monkeypatch.setattr(hooks, "new_scheduler", new)


def test_a_simulator_that_ignores_vc_boundaries_is_caught(cli, tmp_path: Path, vc_boundaries_ignored: None) -> None:
    data = judged(cli, tmp_path, "vc-safety")
    assert data["verdict"] == "inconsistent"
    placement = answer(data, "placement")
    assert placement["verdict"] == "inconsistent" and "hostname-carol" in placement["answer"]["en"]


@pytest.fixture
def gang_started_piecemeal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The broken cluster asks HiveD about each pod of a gang as if it were a job of its own (no affinity group):
    a gang's tasks then start one by one, whenever a GPU is free."""
    real_ask = SimCluster._ask_hived

    def ask(self, ref, spec, nodes, phase):  # type: ignore[no-untyped-def]
        return real_ask(self, ref, {k: v for k, v in spec.items() if k != "affinityGroup"}, nodes, phase)

    monkeypatch.setattr(SimCluster, "_ask_hived", ask)


def test_a_simulator_that_starts_a_gang_piecemeal_is_caught(cli, tmp_path: Path, gang_started_piecemeal: None) -> None:
    data = judged(cli, tmp_path, "gang")
    assert data["verdict"] == "inconsistent"
    waits = answer(data, "gang-waits")
    assert waits["verdict"] == "inconsistent", waits["answer"]["en"]


@pytest.fixture
def incremental_made_gang(monkeypatch: pytest.MonkeyPatch) -> None:
    """The broken cluster ignores `gangAllocation: false`: the incremental job's two single-GPU tasks are asked for
    as one gang (HiveD then waits until both GPUs are free)."""
    real_ask = SimCluster._ask_hived

    def ask(self, ref, spec, nodes, phase):  # type: ignore[no-untyped-def]
        if spec.get("affinityGroup") is None:
            framework = ref.name.split("-", 1)[0]
            spec = {**spec, "affinityGroup": {"name": f"broken/{framework}",
                                              "members": [{"podNumber": 2, "leafCellNumber": 1}]}}
        return real_ask(self, ref, spec, nodes, phase)

    monkeypatch.setattr(SimCluster, "_ask_hived", ask)


def test_a_simulator_that_ignores_gang_allocation_false_is_caught(cli, tmp_path: Path,
                                                                  incremental_made_gang: None) -> None:
    data = judged(cli, tmp_path, "incremental")
    assert data["verdict"] == "inconsistent"
    incremental = answer(data, "incremental")
    assert incremental["verdict"] == "inconsistent", incremental["answer"]["en"]
