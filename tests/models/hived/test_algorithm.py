"""HivedScheduler behaviour around preemption, lazy preemption, reconfiguration and the inspect views."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from hivedlab.models.hived import Bind, HivedScheduler, PodRef, Preempt, UserError, Wait, load_config
from hivedlab.models.hived.types import Phase
from tests.support.scoring import PUBLIC

LAB2 = yaml.safe_load(json.loads((PUBLIC / "pub-0002-lab-config-2.json").read_text(encoding="utf-8"))["config"])


def _spec(priority: int, pods: int, group: str, lazy: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"virtualCluster": "default", "priority": priority, "leafCellNumber": 1,
                            "affinityGroup": {"name": group, "members": [{"podNumber": pods, "leafCellNumber": 1}]}}
    if lazy:
        spec["lazyPreemptionEnable"] = True
    return spec


def _run(sched: HivedScheduler, name: str, spec: dict[str, Any], phase: Phase = "Preempting") -> Any:
    pod = PodRef("default", name, name)
    result = sched.schedule(pod, spec, set(sched.reported_nodes), phase)
    if isinstance(result, Bind):
        sched.add_allocated_pod(pod, spec, result.bind_info)
    return result


@pytest.fixture
def busy() -> HivedScheduler:
    """Lab config 2 with a 2-pod test gang (priority 10) holding both nodes."""
    sched = HivedScheduler(load_config(LAB2))
    low = _spec(10, 2, "low")
    assert _run(sched, "low-0", low).node == "hostname-carol"
    assert _run(sched, "low-1", low).node == "hostname-dan"
    return sched


def test_filtering_phase_reports_victims_without_state(busy: HivedScheduler) -> None:
    result = _run(busy, "high-0", _spec(100, 1, "high"), phase="Filtering")
    assert isinstance(result, Preempt)
    assert busy.affinity_groups()["items"][0]["metadata"]["name"] == "low"
    assert "high" not in busy.groups


def test_preempting_phase_creates_the_preemption(busy: HivedScheduler) -> None:
    result = _run(busy, "high-0", _spec(100, 1, "high"))
    assert isinstance(result, Preempt)
    assert {node: sorted(p.name for p in pods) for node, pods in result.victims.items()} == {
        "hostname-carol": ["low-0"], "hostname-dan": ["low-1"]}  # gang preemption: every pod of the victim
    assert busy.affinity_group("high")["status"]["state"] == "Preempting"
    assert busy.affinity_group("low")["status"]["state"] == "BeingPreempted"
    assert isinstance(_run(busy, "eq-0", _spec(10, 1, "eq")), Wait)  # cells now carry priority 100
    busy.delete_allocated_pod(PodRef("default", "low-0", "low-0"))
    assert isinstance(_run(busy, "high-0", _spec(100, 1, "high")), Preempt)  # one victim left
    busy.delete_allocated_pod(PodRef("default", "low-1", "low-1"))
    bound = _run(busy, "high-0", _spec(100, 1, "high"))
    assert isinstance(bound, Bind) and bound.node == "hostname-carol"
    assert busy.affinity_group("high")["status"]["state"] == "Allocated"


def test_deleting_the_waiting_preemptor_cancels_the_preemption(busy: HivedScheduler) -> None:
    _run(busy, "high-0", _spec(100, 1, "high"))
    busy.delete_unallocated_pod(PodRef("default", "high-0", "high-0"))
    assert "high" not in busy.groups
    carol = busy.cluster_status()["physicalCluster"][0]["cellChildren"][0]
    assert carol["cellState"] == "Used" and carol["cellPriority"] == 10  # back to the victim


def test_equal_priority_never_preempts(busy: HivedScheduler) -> None:
    assert _run(busy, "same-0", _spec(10, 1, "same")) == Wait("insufficient capacity when scheduling in VC default")


def test_lazy_victim_is_demoted_then_really_preempted() -> None:
    sched = HivedScheduler(load_config(LAB2))
    _run(sched, "low-0", _spec(10, 2, "low", lazy=True))
    _run(sched, "low-1", _spec(10, 2, "low", lazy=True))
    result = _run(sched, "high-0", _spec(100, 1, "high"))
    assert isinstance(result, Preempt)
    low = sched.affinity_group("low")["status"]
    assert low["lazyPreemptionStatus"]["preemptor"] == "high" and "virtualPlacement" not in low
    assert low["state"] == "BeingPreempted"


def test_more_pods_than_the_group_declares_is_a_user_error() -> None:
    sched = HivedScheduler(load_config(LAB2))
    _run(sched, "g-0", _spec(10, 1, "g"))
    with pytest.raises(UserError) as info:
        _run(sched, "g-1", _spec(10, 1, "g"))
    assert info.value.message == ("Requesting more pods than the configured number for 1 leaf cells (1 pods) "
                                  "in affinity group g")


def test_reconfiguration_recovers_bound_pods(busy: HivedScheduler) -> None:
    records = [(PodRef("default", n, n), _spec(10, 2, "low")) for n in ("low-0", "low-1")]
    infos = [busy.allocated[pod.uid][1] for pod, _ in records]
    fresh = HivedScheduler(load_config(LAB2))
    for (pod, spec), info in zip(records, infos, strict=True):
        fresh.add_allocated_pod(pod, spec, info)
    status = fresh.affinity_group("low")["status"]
    assert status["state"] == "Allocated" and sorted(status["allocatedPods"]) == ["low-0", "low-1"]
    assert isinstance(_run(fresh, "x-0", _spec(10, 1, "x")), Wait)


def test_inspect_views() -> None:
    sched = HivedScheduler(load_config(LAB2))
    _run(sched, "a-0", _spec(10, 1, "a"))
    status = sched.cluster_status()
    pool = status["physicalCluster"][0]
    assert pool["leafCellType"] == "GPU" and pool["cellAddress"] == "0"
    assert [c["cellAddress"] for c in pool["cellChildren"]] == ["0/hostname-carol", "0/hostname-dan"]
    vc = status["virtualClusters"]["default"]
    assert [(c["cellAddress"], c["cellPriority"]) for c in vc] == [("default/0", 10), ("default/1", -2)]
    assert vc[0]["physicalCell"]["cellAddress"] == "0/hostname-carol"
    group = sched.affinity_group("a")
    assert group["status"]["physicalPlacement"] == {"hostname-carol": [0]}
    assert group["status"]["virtualPlacement"] == {"default/0": ["default/0/0"]}
    with pytest.raises(UserError):
        sched.affinity_group("nope")
    with pytest.raises(UserError):
        sched.vc_status("nope")
    assert HivedScheduler(load_config(LAB2)).affinity_groups() == {"items": None}


def test_opportunistic_pod_appears_in_its_vc_status() -> None:
    sched = HivedScheduler(load_config(LAB2))
    spec = {"virtualCluster": "default", "priority": -1, "leafCellNumber": 1}
    assert isinstance(_run(sched, "o-0", spec), Bind)
    entries = [c for c in sched.vc_status("default") if c["cellAddress"].endswith("-opp")]
    assert [(c["cellState"], c["cellPriority"]) for c in entries] == [("Used", -1)]
    sched.delete_allocated_pod(PodRef("default", "o-0", "o-0"))
    assert not [c for c in sched.vc_status("default") if c["cellAddress"].endswith("-opp")]


def test_nodes_not_ready_at_start_up_stay_bad() -> None:
    sched = HivedScheduler(load_config(LAB2), ready_nodes=["hostname-carol"])
    assert sched.bad_nodes == {"hostname-dan"}
    assert _run(sched, "a-0", _spec(10, 1, "a")).node == "hostname-carol"
    assert isinstance(_run(sched, "b-0", _spec(10, 1, "b")), Wait)


def _nodes_config(n: int, leaves: int = 1) -> dict[str, Any]:
    return {
        "physicalCluster": {
            "cellTypes": {"NODE": {"childCellType": "GPU", "childCellNumber": leaves, "isNodeLevel": True}},
            "physicalCells": [{"cellType": "NODE", "cellAddress": f"n{i}"} for i in range(1, n + 1)],
        },
        "virtualClusters": {"a": {"virtualCells": [{"cellType": "NODE", "cellNumber": n}]}},
    }


def test_no_suggested_node_at_the_top_level_waits_with_the_mapping_reason() -> None:
    """docs/hived-config-and-cells.md#mapping-to-physical-cells step 4: a top-level preassigned cell cannot be relaxed;
    the pod waits, HiveD does not crash."""
    sched = HivedScheduler(load_config(_nodes_config(3)))
    spec = {"virtualCluster": "a", "priority": 0, "leafCellNumber": 1, "ignoreK8sSuggestedNodes": False}
    result = sched.schedule(PodRef("default", "p", "p"), spec, set(), "Preempting")
    assert isinstance(result, Wait)
    assert result.reason.startswith("Mapping the virtual placement would need to use at least one bad or "
                                    "non-suggested node (virtual placement : {")


def test_a_single_leaf_vc_cell_is_given_back_and_merges() -> None:
    """docs/hived-config-and-cells.md#allocation-and-release: 2-leaf nodes in 2-node racks; after the last leaf of
    rack 0 is returned the top list is 1, 0."""
    config = {
        "physicalCluster": {
            "cellTypes": {"NODE": {"childCellType": "GPU", "childCellNumber": 2, "isNodeLevel": True},
                          "RACK": {"childCellType": "NODE", "childCellNumber": 2}},
            "physicalCells": [{"cellType": "RACK"}, {"cellType": "RACK"}],
        },
        "virtualClusters": {"a": {"virtualCells": [{"cellType": "RACK.GPU", "cellNumber": 2}]}},
    }
    sched = HivedScheduler(load_config(config))
    top = sched.chain_state["RACK"].free[3]
    first = [c.address for c in top][0]
    spec = {"virtualCluster": "a", "priority": 0, "leafCellNumber": 1}
    bound = [_run(sched, name, dict(spec)) for name in ("p", "q")]
    assert all(isinstance(b, Bind) for b in bound)
    for name in ("p", "q"):
        sched.delete_allocated_pod(PodRef("default", name, name))
    assert [c.address for c in top][-1] == first  # merged back up and appended at the end
