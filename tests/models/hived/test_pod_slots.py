"""A group's pod slots as HiveD's AddAllocatedPod and DeleteAllocatedPod keep them (docs/hived-model.md, "What a
deleted pod leaves in its group"): the pod that re-creates its group after a restart takes slot 0, a delete empties
the slot the pod's bind info names, and a pod object left in a slot is named as a victim on the node it was bound to."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import yaml

from hivedlab.models.hived import Bind, BindInfo, HivedScheduler, PodRef, Preempt, load_config
from hivedlab.models.hived.types import Phase
from tests.support.scoring import PUBLIC_V2, load_scenario

LAB2 = yaml.safe_load(load_scenario(PUBLIC_V2 / "pub2-0001-lab-config-2.json")["config"])  # 2 nodes of 1 GPU


def _spec(priority: int, group: str) -> dict[str, Any]:
    return {"virtualCluster": "default", "priority": priority, "leafCellNumber": 1,
            "affinityGroup": {"name": group, "members": [{"podNumber": 2, "leafCellNumber": 1}]}}


LOW = _spec(10, "low")
HIGH = _spec(100, "high")


def _pod(name: str) -> PodRef:
    return PodRef("default", name, name)


def _run(sched: HivedScheduler, name: str, spec: dict[str, Any], phase: Phase = "Preempting") -> Any:
    """One call with every node suggested; a bind is reported back at once, as Kubernetes does."""
    result = sched.schedule(_pod(name), spec, set(sched.reported_nodes), phase)
    if isinstance(result, Bind):
        sched.add_allocated_pod(_pod(name), spec, result.bind_info)
    return result


def _victims(result: Any) -> dict[str, list[str]]:
    assert isinstance(result, Preempt)
    return {node: sorted(p.name for p in pods) for node, pods in result.victims.items()}


def _low_bound() -> tuple[HivedScheduler, dict[str, BindInfo]]:
    sched = HivedScheduler(load_config(LAB2))
    infos = {}
    for name in ("low-0", "low-1"):
        result = _run(sched, name, LOW, "Filtering")
        assert isinstance(result, Bind)
        infos[name] = result.bind_info
    return sched, infos


def _restarted_with(infos: dict[str, BindInfo], names: list[str]) -> HivedScheduler:
    fresh = HivedScheduler(load_config(LAB2))
    for name in names:
        fresh.add_allocated_pod(_pod(name), LOW, infos[name])
    return fresh


def test_without_a_restart_the_victims_deleted_free_their_cells() -> None:
    sched, _ = _low_bound()
    sched.delete_allocated_pod(_pod("low-0"))
    sched.delete_allocated_pod(_pod("low-1"))
    assert "low" not in sched.groups
    assert isinstance(_run(sched, "high-0", HIGH), Bind)


def test_the_pod_that_re_creates_its_group_takes_slot_0_and_outlives_its_deletion() -> None:
    sched, infos = _low_bound()
    sched.delete_allocated_pod(_pod("low-0"))
    fresh = _restarted_with(infos, ["low-1"])  # low-1 is pod 1 of the bind info, but it re-creates the group
    assert _victims(_run(fresh, "high-0", HIGH, "Filtering")) == {"hostname-dan": ["low-1"]}
    fresh.delete_allocated_pod(_pod("low-1"))  # empties slot 1, the one its bind info names
    assert fresh.affinity_group("low")["status"]["allocatedPods"] == ["low-1"]
    assert _victims(_run(fresh, "high-0", HIGH)) == {"hostname-dan": ["low-1"]}
    assert fresh.affinity_group("high")["status"]["state"] == "Preempting"


def test_a_deletion_during_the_preemption_leaves_the_same_victim() -> None:
    sched, infos = _low_bound()
    sched.delete_allocated_pod(_pod("low-0"))
    fresh = _restarted_with(infos, ["low-1"])
    assert _victims(_run(fresh, "high-0", HIGH)) == {"hostname-dan": ["low-1"]}
    fresh.delete_allocated_pod(_pod("low-1"))
    assert _victims(_run(fresh, "high-1", HIGH, "Filtering")) == {"hostname-dan": ["low-1"]}


def test_a_pod_whose_bind_info_names_no_slot_is_neither_stored_nor_removed() -> None:
    sched, infos = _low_bound()
    stray = replace(infos["low-1"], node="hostname-erin")  # no slot of the group is on that node
    sched.add_allocated_pod(_pod("low-2"), LOW, stray)
    assert sorted(sched.affinity_group("low")["status"]["allocatedPods"]) == ["low-0", "low-1"]
    sched.delete_allocated_pod(_pod("low-2"))
    assert sorted(sched.affinity_group("low")["status"]["allocatedPods"]) == ["low-0", "low-1"]
    assert _victims(_run(sched, "high-0", HIGH, "Filtering")) == {"hostname-carol": ["low-0"],
                                                                  "hostname-dan": ["low-1"]}
