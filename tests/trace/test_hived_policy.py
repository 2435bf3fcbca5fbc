"""The HiveD policy takes the HiveD model's decisions: every call it makes, replayed through `hived_replay` (the
path `hivedlab sim replay` takes), gives the same binds, waits and victims; and its cells follow the shares."""

from __future__ import annotations

import random
from typing import Any

from hivedlab.models.hived import Bind, PodRef, Preempt, load_config
from hivedlab.models.hived_replay import replay
from hivedlab.trace.cells import derive_cells, hived_config, split_into_cells
from hivedlab.trace.cluster import Cluster
from hivedlab.trace.policies.hived import HivedPolicy
from hivedlab.trace.simulate import simulate
from hivedlab.trace.workload import ServerType, largest_remainder
from tests.trace.support import job, workload

TYPES = (ServerType("2gpu", 2, 4, 12, 131072), ServerType("8gpu", 8, 3, 48, 524288))


class Recorder:
    """Stands in for the model: forwards every call and writes it down as a `sim replay` operation."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.ops: list[dict[str, Any]] = []
        self.results: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def schedule(self, pod: PodRef, spec: Any, nodes: Any, phase: str) -> Any:
        result = self.model.schedule(pod, spec, nodes, phase)
        self.ops.append({"op": "schedule", "pod": pod.name, "spec": spec, "phase": phase})
        self.results.append(result)
        return result

    def delete_allocated_pod(self, pod: PodRef) -> None:
        self.ops.append({"op": "delete", "pod": pod.name})
        self.results.append(None)
        self.model.delete_allocated_pod(pod)

    def delete_unallocated_pod(self, pod: PodRef) -> None:
        self.ops.append({"op": "delete", "pod": pod.name})
        self.results.append(None)
        self.model.delete_unallocated_pod(pod)


def _random_jobs(seed: int) -> list[Any]:
    rng = random.Random(seed)
    jobs = []
    for i in range(120):
        vc = rng.choice(["a", "b", "c"])
        jobs.append(job(f"j{i:03d}", vc, rng.randrange(0, 4000), rng.choice([1, 1, 1, 2, 4, 8, 16]),
                        rng.randrange(60, 3000)))
    return jobs


def test_every_decision_is_the_models_own() -> None:
    w = workload(_random_jobs(1), {"a": 0.5, "b": 0.3, "c": 0.2}, TYPES)
    cells = derive_cells(w.server_types, w.shares)
    policy = HivedPolicy(Cluster(w.server_types), cells)
    recorder = Recorder(policy.model)
    policy.model = recorder  # type: ignore[assignment]
    outcome = simulate(w, policy)
    assert len(outcome.results) == len(w.jobs)
    assert sum(r.preemptions for r in outcome.results) > 0  # the trace exercises preemption
    kinds = {type(r).__name__ for r in recorder.results if r is not None}
    assert kinds == {"Bind", "Preempt", "Wait"}
    config = load_config(hived_config(w.server_types, policy.cluster.names, policy.cluster.type_of, cells))
    lines = list(replay(config, recorder.ops))[1:]
    assert len(lines) == len(recorder.ops)
    for op, line, result in zip(recorder.ops, lines, recorder.results, strict=True):
        if op["op"] == "delete":
            assert line["result"] == "ok", line
        elif isinstance(result, Bind):
            assert (line["result"], line["node"], tuple(line["leafCellIsolation"])) == \
                ("bind", result.node, result.leaf_cell_isolation), (op, line)
        elif isinstance(result, Preempt):
            victims = {node: sorted(p.name for p in pods) for node, pods in result.victims.items()}
            assert (line["result"], line["victims"]) == ("preempt", victims), (op, line)
        else:
            assert line["result"] == "wait", (op, line)


def test_cells_follow_the_shares_by_largest_remainder() -> None:
    shares = {"a": 0.5, "b": 0.3, "c": 0.2}
    cells = derive_cells(TYPES, shares)
    for t, st in enumerate(TYPES):
        split = largest_remainder(st.gpus * st.count, shares)
        assert {vc: cells.gpus(vc, t) for vc in shares} == split
    assert largest_remainder(24, shares) == {"a": 12, "b": 7, "c": 5}  # 12, 7.2, 4.8: the .8 gets the last one
    assert split_into_cells(13, 8) == (8, 4, 1)
    assert split_into_cells(5, 2) == (2, 2, 1)
