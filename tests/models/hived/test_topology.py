"""Topology-aware placement (docs/hived-config-and-cells.md#the-vc-view): the cluster view's node order and the
leaf-cell search."""

from __future__ import annotations

from typing import Any

from hivedlab.models.hived import Bind, HivedScheduler, PodRef, load_config
from hivedlab.models.hived.cell import Cell
from hivedlab.models.hived.config import CellTypeInfo
from hivedlab.models.hived.topology import _search


def _config() -> dict[str, Any]:
    # P = 2-leaf PCIe switch, N = node of 2 P; four nodes so every VC cell fits
    return {
        "physicalCluster": {
            "cellTypes": {
                "P": {"childCellType": "G", "childCellNumber": 2},
                "N": {"childCellType": "P", "childCellNumber": 2, "isNodeLevel": True},
            },
            "physicalCells": [{"cellType": "N", "cellAddress": f"n{i}"} for i in range(1, 5)],
        },
        "virtualClusters": {"x": {"virtualCells": [
            {"cellType": "N.G", "cellNumber": 1}, {"cellType": "N.P", "cellNumber": 1},
            {"cellType": "N", "cellNumber": 1}, {"cellType": "N.G", "cellNumber": 1},
            {"cellType": "N.P", "cellNumber": 1},
        ]}},
    }


def test_vc_view_lists_nodes_then_lower_preassigned_cells_higher_levels_first() -> None:
    sched = HivedScheduler(load_config(_config()))
    view = sched.vc_sched["x"]["N"].view
    assert [c.address for c in view] == ["x/2", "x/1", "x/4", "x/0", "x/3"]


def test_ten_single_leaf_pods_fill_the_view_in_order() -> None:
    sched = HivedScheduler(load_config(_config()))
    preassigned = []
    for i in range(10):
        pod = PodRef("default", f"p{i}", f"p{i}")
        spec = {"virtualCluster": "x", "priority": 0, "leafCellNumber": 1}
        result = sched.schedule(pod, spec, set(sched.reported_nodes), "Preempting")
        assert isinstance(result, Bind)
        sched.add_allocated_pod(pod, spec, result.bind_info)
        virtual = sched.groups[f"default/p{i}"].virtual
        assert virtual is not None
        cell = virtual[1][0][0]
        assert cell is not None
        preassigned.append(cell.preassigned.address)
    assert preassigned == ["x/2"] * 4 + ["x/1"] * 2 + ["x/4"] * 2 + ["x/0", "x/3"]


def _cell(level: int, parent: Cell[Any] | None = None) -> Cell[Any]:
    """A bare cell at `level` under `parent`: all the search looks at."""
    info = CellTypeInfo(f"L{level}", level, None, 0, False, "L1", 1, False, False)
    return Cell("chain", info, f"L{level}", parent)


def test_search_prefers_the_lowest_common_ancestor() -> None:
    node = _cell(3)
    switches = [_cell(2, node), _cell(2, node)]
    leaves = [_cell(1, switches[0]), _cell(1, switches[1]), _cell(1, switches[1])]
    # two leaves: the first pair (0, 1) only meets at the node; (1, 2) share a switch -> optimal, found later
    level, best = _search(leaves, 2, optimal=2)
    assert (level, best) == (2, [1, 2])


def test_search_keeps_the_first_best_when_no_optimum_exists() -> None:
    node = _cell(3)
    switches = [_cell(2, node), _cell(2, node)]
    leaves = [_cell(1, switches[0]), _cell(1, switches[1])]
    assert _search(leaves, 2, optimal=2) == (3, [0, 1])
