"""Wrong behaviour made by a deliberately broken simulator (the second way, beside edited and re-sealed logs):
HiveD's filter answers "preempt" but the broken cluster binds the preemptor onto the victim's GPU at once, with no
preemption. The checker must call every such run inconsistent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hivedlab.cluster import hived
from hivedlab.cluster.sim import SimCluster
from tests.sim.test_lab_experiments import run


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
        except Exception:  # noqa: BLE001 - the broken cluster double-books what HiveD refuses
            return None

    monkeypatch.setattr(SimCluster, "_ask_hived", ask)
    monkeypatch.setattr(hived.HivedScheduler, "add_allocated_pod", add)


@pytest.mark.parametrize("experiment", ["priority", "opportunistic"])
def test_a_simulator_that_never_preempts_is_caught(cli, tmp_path: Path, no_preemption: None, experiment: str) -> None:
    run(tmp_path, experiment, 1)
    log = tmp_path / "experiments" / experiment / "evidence.jsonl"
    result = cli("check", str(log), "--format", "json")
    data = json.loads(result.out)
    assert data["verdict"] == "inconsistent", result.out
    exclusive = next(a for a in data["answers"] if a["kind"] == "gpu-exclusive")
    assert exclusive["verdict"] == "inconsistent" and "still held it" in exclusive["answer"]["en"]
