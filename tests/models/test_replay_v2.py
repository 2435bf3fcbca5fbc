"""The v2 replay operations on a small cluster: phases, suggested nodes, preemption cancellation and restarts."""

from __future__ import annotations

from typing import Any

import yaml

from hivedlab.models.hived import load_config
from hivedlab.models.hived_replay import Replay


def _config(nodes: int) -> dict[str, Any]:
    return {
        "physicalCluster": {
            "cellTypes": {"NODE": {"childCellType": "GPU", "childCellNumber": 1, "isNodeLevel": True}},
            "physicalCells": [{"cellType": "NODE", "cellAddress": f"n{i}"} for i in range(1, nodes + 1)],
        },
        "virtualClusters": {"a": {"virtualCells": [{"cellType": "NODE", "cellNumber": nodes}]}},
    }


def _spec(priority: int, **extra: Any) -> dict[str, Any]:
    return {"virtualCluster": "a", "priority": priority, "leafCellNumber": 1, **extra}


def _schedule(pod: str, spec: dict[str, Any], phase: str = "Preempting", **extra: Any) -> dict[str, Any]:
    return {"op": "schedule", "pod": pod, "spec": spec, "phase": phase, **extra}


class _Session:
    def __init__(self, nodes: int = 2) -> None:
        self.replay = Replay(load_config(_config(nodes)))
        self.i = 0

    def __call__(self, op: dict[str, Any]) -> dict[str, Any]:
        line = self.replay.step(self.i, op)
        self.i += 1
        return line


def test_filtering_then_preempting_and_the_victims_deleted() -> None:
    run = _Session()
    assert run(_schedule("lo1", _spec(0), "Filtering"))["node"] == "n1"
    assert run(_schedule("lo2", _spec(0), "Filtering"))["node"] == "n2"
    hi = _spec(10)
    assert run(_schedule("hi", hi, "Filtering"))["result"] == "preempt"
    first = run(_schedule("hi", hi))
    assert first["result"] == "preempt"
    (node, victims), = first["victims"].items()
    run({"op": "delete", "pod": victims[0]})
    assert run(_schedule("hi", hi, "Filtering")) == {"i": 5, "op": "schedule", "pod": "hi", "result": "bind",
                                                      "node": node, "leafCellIsolation": [0]}


def test_a_preemption_whose_node_is_not_suggested_is_cancelled_and_placed_again() -> None:
    run = _Session()
    run(_schedule("lo1", _spec(0)))
    run(_schedule("lo2", _spec(0)))
    hi = _spec(10, ignoreK8sSuggestedNodes=False)
    first = run(_schedule("hi", hi))
    (node, _), = first["victims"].items()
    other = {"n1", "n2"} - {node}
    again = run(_schedule("hi", hi, suggestedNodes=sorted(other)))
    assert again["result"] == "preempt" and set(again["victims"]) == other
    # the cancelled preemption gave its cells back: a pod of the victims' priority still cannot use them
    assert run(_schedule("eq", _spec(0)))["result"] == "wait"
    # in the Filtering phase the preempting group goes on, whatever the suggested list
    assert run(_schedule("hi", hi, "Filtering", suggestedNodes=[node]))["result"] == "preempt"
    status = run.replay.scheduler.affinity_group("default/hi")["status"]
    assert status["state"] == "Preempting" and set(status["physicalPlacement"]) == other


def test_suggested_nodes_bound_a_new_group_only_when_honoured() -> None:
    run = _Session()
    assert run(_schedule("p", _spec(0), suggestedNodes=["n2"]))["node"] == "n1"  # ignored by default
    honoured = run(_schedule("q", _spec(0, ignoreK8sSuggestedNodes=False), suggestedNodes=["n1"]))
    assert honoured["result"] == "wait"
    # the unbound virtual node looks suggested; mapping it onto the free, non-suggested n2 fails
    assert honoured["reason"].startswith("Mapping the virtual placement would need to use at least one bad or "
                                         "non-suggested node")


def test_restart_re_adds_bound_pods_and_keeps_not_ready_nodes_bad() -> None:
    run = _Session(3)
    assert run(_schedule("p", _spec(0)))["node"] == "n1"
    run({"op": "node_bad", "node": "n2"})
    assert run({"op": "restart"}) == {"i": 2, "op": "restart", "result": "ok"}
    assert run(_schedule("q", _spec(0)))["node"] == "n3"  # n1 is still p's, n2 still bad
    assert run(_schedule("r", _spec(0)))["result"] == "wait"
    run({"op": "node_healthy", "node": "n2"})
    assert run(_schedule("r", _spec(0)))["node"] == "n2"


def test_restart_forgets_preemptions_and_a_new_config_changes_the_suggested_nodes() -> None:
    run = _Session(1)
    run(_schedule("lo", _spec(0)))
    assert run(_schedule("hi", _spec(10)))["result"] == "preempt"
    bigger = yaml.safe_dump(_config(2))
    assert run({"op": "restart", "config": bigger})["result"] == "ok"
    assert run({"op": "delete", "pod": "hi"})["result"] == "ok"  # an unallocated pod now
    assert run(_schedule("other", _spec(0)))["node"] == "n2"  # the added node is suggested
    assert run(_schedule("hi", _spec(10), "Filtering"))["result"] == "preempt"
    assert run(_schedule("hi", _spec(10)))["victims"] in ({"n1": ["lo"]}, {"n2": ["other"]})


def test_malformed_v2_operations_are_error_lines() -> None:
    run = _Session()
    assert run(_schedule("p", _spec(0), "Binding"))["result"] == "error"
    assert run(_schedule("p", _spec(0), suggestedNodes="n1"))["result"] == "error"
    assert run({"op": "restart", "config": "physicalCluster: ["})["result"] == "error"
    assert run(_schedule("p", _spec(0)))["node"] == "n1"  # the replay goes on with the old scheduler
