"""Buddy free lists (docs/hived-config-and-cells.md#cells-and-their-states), start-up free lists and doomed bad
cells."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from hivedlab.models.hived import Bind, HivedScheduler, PodRef, Wait, load_config
from hivedlab.models.hived.cell import PhysicalCell
from tests.support.paths import FIXTURES

PUBLIC = FIXTURES / "hived-diff" / "public"


def _two_racks() -> dict[str, Any]:
    """Two racks of two 2-leaf nodes: rack 0 = nodes a, b; rack 1 = nodes c, d."""
    return {
        "physicalCluster": {
            "cellTypes": {
                "NODE": {"childCellType": "GPU", "childCellNumber": 2, "isNodeLevel": True},
                "RACK": {"childCellType": "NODE", "childCellNumber": 2},
            },
            "physicalCells": [
                {"cellType": "RACK", "cellChildren": [{"cellAddress": "a"}, {"cellAddress": "b"}]},
                {"cellType": "RACK", "cellChildren": [{"cellAddress": "c"}, {"cellAddress": "d"}]},
            ],
        },
        "virtualClusters": {"v": {"virtualCells": [{"cellType": "RACK.GPU", "cellNumber": 1}]}},
    }


def _parent(cell: PhysicalCell) -> PhysicalCell:
    assert cell.parent is not None, f"{cell.address} has no parent"
    return cell.parent


def _address(cell: PhysicalCell | None) -> str | None:
    """The address of a virtual cell's physical cell; None while it is bound to none."""
    return None if cell is None else cell.address


def _free(sched: HivedScheduler, chain: str) -> dict[int, list[str]]:
    return {lv: [c.address for c in cells] for lv, cells in sched.chain_state[chain].free.items()}


def _scenario_scheduler(name: str) -> HivedScheduler:
    scenario = json.loads((PUBLIC / f"{name}.json").read_text(encoding="utf-8"))
    return HivedScheduler(load_config(yaml.safe_load(scenario["config"])))


def test_take_splits_ancestors_with_swap_remove() -> None:
    sched = HivedScheduler(load_config(_two_racks()))
    state = sched.chain_state["RACK"]
    # start-up doomed rack 0 once (docs/hived-config-and-cells.md#the-state-after-start-up)
    assert _free(sched, "RACK") == {1: [], 2: [], 3: ["1", "0"]}
    leaf = sched.levels["RACK"][1][0]
    assert leaf.address == "0/a/0"
    assert state.remove_from_free(leaf) == 3  # split up to the rack level
    assert _free(sched, "RACK") == {1: ["0/a/1"], 2: ["0/b"], 3: ["1"]}
    assert _parent(leaf).split and _parent(_parent(leaf)).split


def test_give_back_merges_and_appends_at_the_end() -> None:
    sched = HivedScheduler(load_config(_two_racks()))
    state = sched.chain_state["RACK"]
    leaf = sched.levels["RACK"][1][0]
    state.remove_from_free(leaf)
    assert state.add_to_free(leaf) == 3
    assert _free(sched, "RACK") == {1: [], 2: [], 3: ["1", "0"]}
    assert not _parent(leaf).split


def test_give_back_stops_below_a_busy_sibling() -> None:
    sched = HivedScheduler(load_config(_two_racks()))
    state = sched.chain_state["RACK"]
    first, second = sched.levels["RACK"][1][0], sched.levels["RACK"][1][1]
    state.remove_from_free(first)
    state.remove_from_free(second)
    assert _free(sched, "RACK") == {1: [], 2: ["0/b"], 3: ["1"]}
    assert state.add_to_free(first) == 1
    assert _free(sched, "RACK") == {1: ["0/a/0"], 2: ["0/b"], 3: ["1"]}


@pytest.mark.parametrize(
    ("scenario", "chain", "expected"),
    [
        ("pub-0016-random", "4-P100-NODE", {4: ["1", "0", "2"]}),  # worked example 1
        ("pub-0060-random", "T4-NODE", {3: ["t4-host-02", "t4-host-01", "t4-host-04", "t4-host-03"]}),  # example 2
        ("pub-0054-random", "3-A100-NODE", {3: ["1", "0", "2"]}),
        ("pub-0024-random", "H100-RACK", {3: ["3/n15", "3/n14", "3/n16"]}),
        ("pub-0024-random", "H100-X-NODE", {2: ["n18", "n17", "n19"]}),
        ("pub-0047-random", "A10-A-RACK-3", {3: ["1/a10-host-04", "1/a10-host-02"], 4: ["2"]}),
        ("pub-0003-design", "CT1-NODE", {1: ["1.0.0.2/9"], 2: ["0.0.0.1", "0.0.0.0"]}),
    ],
)
def test_free_lists_after_start_up(scenario: str, chain: str, expected: dict[int, list[str]]) -> None:
    """docs/hived-config-and-cells.md#the-state-after-start-up: marking every node bad and then healthy permutes the
    free lists through doomed bindings."""
    free = {lv: cells for lv, cells in _free(_scenario_scheduler(scenario), chain).items() if cells}
    assert free == expected


def _three_nodes() -> dict[str, Any]:
    return {
        "physicalCluster": {
            "cellTypes": {"NODE": {"childCellType": "GPU", "childCellNumber": 1, "isNodeLevel": True}},
            "physicalCells": [{"cellType": "NODE", "cellAddress": n} for n in ("n1", "n2", "n3")],
        },
        "virtualClusters": {"a": {"virtualCells": [{"cellType": "NODE", "cellNumber": 2}]}},
    }


GANG = {"virtualCluster": "a", "priority": 0, "leafCellNumber": 1,
        "affinityGroup": {"name": "g", "members": [{"podNumber": 2, "leafCellNumber": 1}]}}


def _schedule(sched: HivedScheduler, name: str, spec: dict[str, Any]) -> Any:
    pod = PodRef("default", name, name)
    result = sched.schedule(pod, spec, set(sched.reported_nodes), "Preempting")
    if isinstance(result, Bind):
        sched.add_allocated_pod(pod, spec, result.bind_info)
    return result


def test_check_unbind_is_strict() -> None:
    """docs/hived-config-and-cells.md#bad-nodes-and-doomed-cells worked example 3: with only n1 Ready, n2 stays doomed
    to a/1 because 1 < 1 is false."""
    sched = HivedScheduler(load_config(_three_nodes()), ready_nodes=["n1"])
    assert _free(sched, "NODE") == {1: [], 2: ["n3", "n1"]}
    status = {c["cellAddress"]: c for c in sched.vc_status("a")}
    assert status["a/0"]["cellHealthiness"] == "Healthy" and "physicalCell" not in status["a/0"]
    assert status["a/1"]["cellHealthiness"] == "Bad" and status["a/1"]["physicalCell"]["cellAddress"] == "n2"
    result = _schedule(sched, "g-0", GANG)
    assert result == Wait("have to use at least one bad node n2 when scheduling in VC a")
    sched.set_node_healthy("n3")
    assert _free(sched, "NODE")[2] == ["n3", "n1", "n2"]
    first = _schedule(sched, "g-0", GANG)
    second = _schedule(sched, "g-1", GANG)
    assert (first.node, second.node) == ("n3", "n1")


def test_pinned_cell_stays_bound_while_its_leaves_come_and_go() -> None:
    """docs/hived-config-and-cells.md#allocation-and-release worked example (pinned cells)."""
    config = {
        "physicalCluster": {
            "cellTypes": {"NODE": {"childCellType": "GPU", "childCellNumber": 2, "isNodeLevel": True}},
            "physicalCells": [{"cellType": "NODE", "cellAddress": "n1", "pinnedCellId": "P1"},
                              {"cellType": "NODE", "cellAddress": "n2"}],
        },
        "virtualClusters": {"a": {"virtualCells": [{"cellType": "NODE", "cellNumber": 1}],
                                  "pinnedCells": [{"pinnedCellId": "P1"}]}},
    }
    sched = HivedScheduler(load_config(config))
    pinned = sched.vc_pinned["a"]["P1"]
    assert pinned.address == "a/1" and _address(pinned.physical) == "n1"
    assert all(child.physical is None for child in pinned.children)
    spec = {"virtualCluster": "a", "priority": 0, "leafCellNumber": 1, "pinnedCellId": "P1"}
    result = _schedule(sched, "p", spec)
    assert (result.node, result.leaf_cell_isolation) == ("n1", (0,))
    assert _address(pinned.children[0].physical) == "n1/0"
    sched.delete_allocated_pod(PodRef("default", "p", "p"))
    assert pinned.children[0].physical is None and _address(pinned.physical) == "n1"
    _schedule(sched, "q", spec)
    sched.set_node_bad("n1")
    assert [_address(c.physical) for c in pinned.children] == ["n1/0", "n1/1"]
    sched.delete_allocated_pod(PodRef("default", "q", "q"))
    assert [_address(c.physical) for c in pinned.children] == ["n1/0", "n1/1"]  # bad leaves keep their binding
    sched.set_node_healthy("n1")
    assert [c.physical for c in pinned.children] == [None, None] and _address(pinned.physical) == "n1"


def test_opportunistic_leaf_gone_bad_inside_a_vc_cell() -> None:
    """docs/hived-config-and-cells.md#cells-and-their-states example: the virtual leaf stays free (-2) while the
    physical leaf is Used at -1."""
    config = {
        "physicalCluster": {
            "cellTypes": {"NODE": {"childCellType": "GPU", "childCellNumber": 2, "isNodeLevel": True}},
            "physicalCells": [{"cellType": "NODE", "cellAddress": "n1"}, {"cellType": "NODE", "cellAddress": "n2"}],
        },
        "virtualClusters": {"a": {"virtualCells": [{"cellType": "NODE", "cellNumber": 1}]},
                            "b": {"virtualCells": [{"cellType": "NODE", "cellNumber": 1}]}},
    }
    sched = HivedScheduler(load_config(config))
    assert _schedule(sched, "a1", {"virtualCluster": "a", "priority": 0, "leafCellNumber": 1}).node == "n1"
    assert _schedule(sched, "b1", {"virtualCluster": "b", "priority": 0, "leafCellNumber": 2}).node == "n2"
    o1 = _schedule(sched, "o1", {"virtualCluster": "b", "priority": -1, "leafCellNumber": 1})
    assert (o1.node, o1.leaf_cell_isolation) == ("n1", (1,))
    sched.set_node_bad("n1")
    leaf = sched.leaf_by_key[("NODE", "n1", 1)]
    assert leaf.virtual is not None and leaf.virtual.address == "a/0/1"
    assert (leaf.virtual.priority, leaf.priority, leaf.state) == (-2, -1, "Used")
    result = _schedule(sched, "a2", {"virtualCluster": "a", "priority": 0, "leafCellNumber": 1})
    assert result == Wait("have to use at least one bad node n1 when scheduling in VC a")
