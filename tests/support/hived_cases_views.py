"""Turn the HiveD model's outputs (decisions, inspect-API JSON of docs/hived-config-and-cells.md#inspect-api) into the
shapes the cases file records.

Pure functions: each takes what the model returned and gives the comparable form of `hived-cases.yaml`'s
`observed` entries, so the flow runner can compare with `==` and print both sides when they differ.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

FREE_PRIORITY = -2  # docs/hived-config-and-cells.md#priorities-and-preemption: internally a free cell has priority -2


def plain(value: Any) -> Any:
    """Plain dicts and lists (the loaded file's read-only mappings included), as a fresh copy."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def normalized_bind_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """A bind info dict with its members sorted by leaf cells per pod (conventions.results.bind: HiveD emits
    `affinityGroupBindInfo` members in random map order; the file sorts them by leaf cell number)."""
    members = [
        {"podPlacements": [dict(placement) for placement in member.get("podPlacements") or []]}
        for member in info.get("affinityGroupBindInfo") or []
    ]
    members.sort(key=_member_leaf_number)
    return {
        "node": info.get("node"),
        "leafCellIsolation": list(info.get("leafCellIsolation") or []),
        "cellChain": info.get("cellChain"),
        "affinityGroupBindInfo": [
            {"podPlacements": [_placement(p) for p in member["podPlacements"]]} for member in members
        ],
    }


def _member_leaf_number(member: Mapping[str, Any]) -> int:
    placements = member.get("podPlacements") or []
    return len(placements[0].get("physicalLeafCellIndices") or []) if placements else 0


def _placement(placement: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "physicalNode": placement.get("physicalNode"),
        "physicalLeafCellIndices": list(placement.get("physicalLeafCellIndices") or []),
        "preassignedCellTypes": list(placement.get("preassignedCellTypes") or []),
    }


def bind_info_leaf_count(info: Mapping[str, Any]) -> int:
    """All leaf cells a group's bind info places, over every member and pod slot."""
    return sum(
        len(placement.get("physicalLeafCellIndices") or [])
        for member in info.get("affinityGroupBindInfo") or []
        for placement in member.get("podPlacements") or []
    )


def victim_names(victims: Mapping[str, Any]) -> dict[str, list[str]]:
    """node -> sorted victim pod names, from a `Preempt.victims` map of PodRefs."""
    return {str(node): sorted(pod.name for pod in pods) for node, pods in victims.items() if pods}


def groups_by_name(listing: Any) -> dict[str, Mapping[str, Any]]:
    """The `/v1/inspect/affinitygroups/` answer (`{"items": [...]}`, items null when none) keyed by group name."""
    if not isinstance(listing, Mapping) or "items" not in listing:
        raise ValueError(f"affinity_groups() is not {{'items': [...]}}: {listing!r:.200}")
    groups: dict[str, Mapping[str, Any]] = {}
    for item in listing["items"] or []:
        groups[str(item["metadata"]["name"])] = item
    return groups


def group_summary(group: Mapping[str, Any]) -> dict[str, Any]:
    """An AffinityGroup object in the form of the file's `inspect: groups` entries."""
    status = group.get("status") or {}
    lazy = status.get("lazyPreemptionStatus")
    summary: dict[str, Any] = {
        "state": status.get("state"),
        "priority": status.get("priority"),
        "vc": status.get("vc"),
        "lazyPreempted": bool(lazy),
        "hasVirtualPlacement": has_virtual_placement(status),
        "physicalPlacement": {
            str(node): sorted(indices or []) for node, indices in (status.get("physicalPlacement") or {}).items()
        },
    }
    for key in ("allocatedPods", "preemptingPods"):
        if status.get(key):
            summary[key] = sorted(status[key])
    if lazy:
        summary["lazyPreemptor"] = lazy.get("preemptor")
    return summary


def observed_group_summary(observed: Mapping[str, Any]) -> dict[str, Any]:
    """The file's `inspect: groups` entry with the same normalisation as `group_summary` (sorted lists)."""
    summary = dict(observed)
    summary["physicalPlacement"] = {
        str(node): sorted(indices) for node, indices in (observed.get("physicalPlacement") or {}).items()
    }
    for key in ("allocatedPods", "preemptingPods"):
        if key in summary:
            summary[key] = sorted(summary[key])
    return summary


def has_virtual_placement(status: Mapping[str, Any]) -> bool:
    """docs/hived-config-and-cells.md#inspect-api: `virtualPlacement` is absent for opportunistic and lazy-preempted
    groups; a group whose cells are all unknown after a reconfiguration (docs/hived-model.md#restart-and-recovery) keeps
    an empty one."""
    return status.get("virtualPlacement") is not None


def lazy_summary(group: Mapping[str, Any] | None) -> dict[str, Any]:
    """The file's lazyPreempted / notLazyPreempted check form of one group."""
    status = (group or {}).get("status") or {}
    lazy = status.get("lazyPreemptionStatus")
    return {
        "lazyPreemptionStatus": bool(lazy),
        "hasVirtualPlacement": has_virtual_placement(status),
        "preemptor": lazy.get("preemptor") if lazy else None,
    }


def iter_cells(cells: Any) -> Iterator[Mapping[str, Any]]:
    """Every cell status of a cell-status list, depth first."""
    for cell in cells or []:
        yield cell
        yield from iter_cells(cell.get("cellChildren"))


def find_cell(cells: Any, address: str) -> Mapping[str, Any] | None:
    return next((cell for cell in iter_cells(cells) if cell.get("cellAddress") == address), None)


def vc_cell_summary(cell: Mapping[str, Any]) -> dict[str, Any]:
    """A VC cell status in the form of the file's `inspect: virtualcluster` entries."""
    summary = {key: cell.get(key)
               for key in ("cellAddress", "cellType", "cellState", "cellPriority", "cellHealthiness")}
    physical = cell.get("physicalCell")
    if physical:
        summary["physicalCell"] = physical.get("cellAddress")
    return summary


def physical_leaves(physical_cluster: Any) -> dict[tuple[str, int], list[Mapping[str, Any]]]:
    """(node, leaf index) -> the physical leaf cell statuses there (a node may sit in several chains,
    docs/hived-config-and-cells.md#physical-cells).

    A node-level cell's node name is the last `/` segment of its address; a leaf's index is the last segment of
    its address (docs/hived-config-and-cells.md#physical-cells)."""
    leaves: dict[tuple[str, int], list[Mapping[str, Any]]] = {}

    def walk(cells: Any, node: str | None) -> None:
        for cell in cells or []:
            address = str(cell.get("cellAddress"))
            here = address.rsplit("/", 1)[-1] if cell.get("isNodeLevel") else node
            children = cell.get("cellChildren")
            if children:
                walk(children, here)
            elif here is not None:
                leaves.setdefault((here, int(address.rsplit("/", 1)[-1])), []).append(cell)

    walk(physical_cluster, None)
    return leaves


def node_leaf_types(physical_cluster: Any) -> dict[str, str]:
    """node -> leaf cell type, from the top-level cells' `leafCellType` (docs/hived-config-and-cells.md#inspect-api)."""
    types: dict[str, str] = {}
    for top in physical_cluster or []:
        for (node, _index), _cells in physical_leaves([top]).items():
            types[node] = str(top.get("leafCellType"))
    return types


def cell_label(cell: Mapping[str, Any], using: str | None, reserving: str | None) -> str:
    """The file's `inspect: cells` form: `State/priority[/using=G][/reserving=G][/vcell=ADDR]`."""
    label = f"{cell.get('cellState')}/{cell.get('cellPriority')}"
    if using:
        label += f"/using={using}"
    if reserving:
        label += f"/reserving={reserving}"
    virtual = cell.get("virtualCell")
    if virtual:
        label += f"/vcell={virtual.get('cellAddress')}"
    return label


def cell_users(groups: Mapping[str, Mapping[str, Any]]) -> dict[tuple[str, int], dict[str, str]]:
    """(node, leaf) -> {"using": group, "reserving": group} from the groups' physical placements: a Preempting
    group reserves its cells, any other group uses them (docs/hived-config-and-cells.md#priorities-and-preemption)."""
    users: dict[tuple[str, int], dict[str, str]] = {}
    for name, group in groups.items():
        status = group.get("status") or {}
        role = "reserving" if status.get("state") == "Preempting" else "using"
        for node, indices in (status.get("physicalPlacement") or {}).items():
            for index in indices or []:
                users.setdefault((str(node), int(index)), {})[role] = name
    return users
