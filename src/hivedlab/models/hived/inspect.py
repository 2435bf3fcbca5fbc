"""The inspect API's views (docs/hived-config-and-cells.md#inspect-api), JSON-ready: cluster status, VC status,
affinity groups."""

from __future__ import annotations

from typing import Any, Protocol

from hivedlab.models.hived.cell import FREE, RESERVED, RESERVING, USED, Group, PhysicalCell, VirtualCell
from hivedlab.models.hived.config import HivedConfig
from hivedlab.models.hived.types import UserError


class SchedulerState(Protocol):
    """What the views read of `algorithm.HivedScheduler`, which calls them (a protocol, so no import cycle)."""

    config: HivedConfig
    chains: list[str]
    tops: dict[str, list[PhysicalCell]]
    vc_names: list[str]
    vc_preassigned: dict[str, dict[str, dict[int, list[VirtualCell]]]]
    vc_pinned: dict[str, dict[str, VirtualCell]]
    opp_entries: dict[str, list[PhysicalCell]]
    groups: dict[str, Group]


def _state(cell: PhysicalCell | VirtualCell) -> str:
    if isinstance(cell, VirtualCell):
        return _state(cell.physical) if cell.physical is not None else FREE
    if not cell.children:
        return cell.state
    states = {_state(child) for child in cell.children}
    if USED in states:
        return USED
    if len(states) == 1:
        return states.pop()
    return RESERVING if RESERVING in states else RESERVED if RESERVED in states else FREE


def _healthy(cell: PhysicalCell | VirtualCell) -> bool:
    if isinstance(cell, VirtualCell):
        return cell.physical is None or cell.physical.healthy
    return cell.healthy


def _base(sched: SchedulerState, cell: PhysicalCell | VirtualCell, top: bool) -> dict[str, Any]:
    info = sched.config.cell_types[cell.cell_type]
    out: dict[str, Any] = {}
    if top:
        out["leafCellType"] = info.leaf_type
    out.update({
        "cellType": cell.cell_type,
        "isNodeLevel": info.is_node_level,
        "cellAddress": cell.address,
        "cellState": _state(cell),
        "cellHealthiness": "Healthy" if _healthy(cell) else "Bad",
        "cellPriority": cell.priority,
    })
    return out


def physical_status(sched: SchedulerState, cell: PhysicalCell, top: bool = False) -> dict[str, Any]:
    out = _base(sched, cell, top)
    if cell.children:
        out["cellChildren"] = [physical_status(sched, child) for child in cell.children]
    vc = cell.virtual.vc if cell.virtual is not None else cell.vc_name
    if vc:
        out["vc"] = vc
    if cell.virtual is not None:
        out["virtualCell"] = _base(sched, cell.virtual, False)
    return out


def virtual_status(sched: SchedulerState, cell: VirtualCell, top: bool = False) -> dict[str, Any]:
    out = _base(sched, cell, top)
    if cell.children:
        out["cellChildren"] = [virtual_status(sched, child) for child in cell.children]
    if cell.physical is not None:
        out["physicalCell"] = _base(sched, cell.physical, False)
    return out


def listed_vcs(sched: SchedulerState) -> list[str]:
    """The VCs HiveD's status lists: the config's, then any other VC an opportunistic cell was ever listed under (a
    job of a VC the config no longer has, lazy-preempted at recovery). HiveD appends such cells to
    `apiClusterStatus.VirtualClusters[vc]`, creating the key, and deleteOTVirtualCell leaves the key with an empty
    list (pkg/algorithm/hived_algorithm.go allocateLeafCell/releaseLeafCell, utils.go)."""
    return sched.vc_names + sorted(vc for vc in sched.opp_entries if vc not in sched.vc_preassigned)


def vc_status(sched: SchedulerState, vc: str) -> list[dict[str, Any]]:
    if vc not in sched.vc_preassigned and vc not in sched.opp_entries:
        raise UserError(f"VC {vc} not found")
    out: list[dict[str, Any]] = []
    for by_level in sched.vc_preassigned.get(vc, {}).values():
        for cells in by_level.values():
            out.extend(virtual_status(sched, cell, True) for cell in cells)
    out.extend(virtual_status(sched, cell, True) for cell in sched.vc_pinned.get(vc, {}).values())
    for leaf in sched.opp_entries.get(vc, []):
        entry = _base(sched, leaf, False)
        entry.update({"cellAddress": f"{leaf.address}-opp", "cellState": USED, "cellPriority": -1})
        out.append(entry)
    return out


def cluster_status(sched: SchedulerState) -> dict[str, Any]:
    physical = [physical_status(sched, top, True) for chain in sched.chains for top in sched.tops[chain]]
    return {"physicalCluster": physical, "virtualClusters": {vc: vc_status(sched, vc) for vc in listed_vcs(sched)}}


def _group_view(group: Group) -> dict[str, Any]:
    physical: dict[str, list[int]] = {}
    for _, _, _, leaf in group.leaves():
        if leaf is not None:
            physical.setdefault(leaf.nodes[0], []).append(leaf.index)
    status: dict[str, Any] = {"vc": group.vc, "priority": group.priority, "state": group.state,
                              "physicalPlacement": physical}
    if group.virtual:
        virtual: dict[str, list[str]] = {}
        for n in sorted(group.virtual):
            for pod in group.virtual[n]:
                for cell in pod:
                    if cell is not None:
                        virtual.setdefault(cell.preassigned.address, []).append(cell.address)
        status["virtualPlacement"] = virtual
    status["allocatedPods"] = [p.pod.uid for pods in group.allocated_pods.values() for p in pods if p is not None]
    status["preemptingPods"] = list(group.preempting_pods)
    if group.lazy_status is not None:
        status["lazyPreemptionStatus"] = dict(group.lazy_status)
    return {"metadata": {"name": group.name}, "status": status}


def affinity_groups(sched: SchedulerState) -> dict[str, Any]:
    items = [_group_view(g) for g in sched.groups.values()]
    return {"items": items or None}


def affinity_group(sched: SchedulerState, name: str) -> dict[str, Any]:
    group = sched.groups.get(name)
    if group is None:
        raise UserError(f"Affinity group {name} does not exist since it is not allocated or preempting")
    return _group_view(group)
