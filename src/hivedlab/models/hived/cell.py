"""Physical and virtual cells, built from a loaded config, and the affinity groups that occupy them.

Cells and groups refer to each other (a leaf knows the group using it, a group its leaves), so they share a module.
See docs/hived-config-and-cells.md#cells-and-their-states and #affinity-group-states.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from hivedlab.models.hived.config import CellTypeInfo, HivedConfig, PhysicalCellSpec, is_node_type, node_name
from hivedlab.models.hived.types import AllocatedPod, MemberBindInfo, PodRef, PodSchedulingSpec

FREE_PRIORITY = -2
OPPORTUNISTIC_PRIORITY = -1
MIN_GUARANTEED_PRIORITY = 0
MAX_GUARANTEED_PRIORITY = 1000

FREE, USED, RESERVING, RESERVED = "Free", "Used", "Reserving", "Reserved"


class InternalError(Exception):
    """A state in which HiveD v0.3.4 itself crashes (docs/hived-config-and-cells.md#random-choices-in-hived); reported
    instead of inventing a rule."""


C = TypeVar("C", bound="Cell[Any]")


class Cell(Generic[C]):
    """What physical and virtual cells share: tree position, priority and used-leaf counts.

    `C` is the kind of cell the tree links lead to: a physical cell's parent and children are physical, a virtual
    cell's virtual."""

    __slots__ = ("chain", "level", "address", "cell_type", "parent", "children", "at_or_above_node",
                 "total_leaves", "priority", "used", "used_total", "order", "lineage")

    def __init__(self, chain: str, info: CellTypeInfo, address: str, parent: C | None) -> None:
        self.chain = chain
        self.level = info.level
        self.address = address
        self.cell_type = info.name
        self.parent: C | None = parent
        self.children: list[C] = []
        self.at_or_above_node = info.at_or_above_node
        self.total_leaves = info.leaf_cell_number
        self.priority = FREE_PRIORITY
        self.used: dict[int, int] = {}
        self.used_total = 0  # sum of `used` over all priorities, kept incrementally
        self.order = 0  # creation order inside its view
        self.lineage: tuple[Cell[Any], ...] = (self,) if parent is None else (self, *parent.lineage)  # self, then up

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.address})"


class PhysicalCell(Cell["PhysicalCell"]):
    __slots__ = ("nodes", "leaf_indices", "index", "pinned_id", "healthy", "virtual", "split", "in_free",
                 "free_pos", "bad_pos", "state", "using_group", "reserving_group", "desc_counts", "vc_name", "is_node")

    def __init__(self, chain: str, info: CellTypeInfo, address: str, parent: PhysicalCell | None) -> None:
        super().__init__(chain, info, address, parent)
        self.nodes: list[str] = []
        self.leaf_indices: list[int] = []
        self.index = -1
        self.pinned_id = ""
        self.healthy = True
        self.virtual: VirtualCell | None = None
        self.split = False
        self.in_free = False
        self.free_pos = -1
        self.bad_pos = -1  # position in its level's bad-free list, -1 when not in it
        self.state = FREE
        self.using_group: Group | None = None
        self.reserving_group: Group | None = None
        self.desc_counts: dict[int, int] = {}
        self.vc_name = ""
        self.is_node = False


class VirtualCell(Cell["VirtualCell"]):
    __slots__ = ("vc", "preassigned", "physical", "pinned_id", "bind_type")

    def __init__(self, vc: str, chain: str, info: CellTypeInfo, address: str, parent: VirtualCell | None) -> None:
        super().__init__(chain, info, address, parent)
        self.vc = vc
        self.preassigned: VirtualCell = self if parent is None else parent.preassigned
        self.physical: PhysicalCell | None = None
        self.pinned_id = ""
        # on a preassigned cell: the type written in bind info
        # (docs/hived-config-and-cells.md#bind-info-and-the-pod-annotations preassignedCellTypes)
        self.bind_type = ""


def set_priority(cell: Cell[Any], priority: int) -> None:
    """A cell's priority is the max of its children's; propagate upwards (HiveD's setCellPriority)."""
    original = cell.priority
    cell.priority = priority
    parent = cell.parent
    while parent is not None:
        if priority > parent.priority:
            original, parent.priority = parent.priority, priority
        elif original == parent.priority and priority < original:
            best = priority
            for child in parent.children:
                child_priority = child.priority
                if child_priority == original:
                    return  # another child still holds the parent's priority: nothing changes upwards
                if child_priority > best:
                    best = child_priority
            parent.priority = best
            priority = best
        else:
            return
        parent = parent.parent


def update_used(cell: Cell[Any] | None, priority: int, delta: int) -> None:
    if cell is None:
        return
    for c in cell.lineage:
        used = c.used
        used[priority] = used.get(priority, 0) + delta
        c.used_total += delta


def build_physical(config: HivedConfig
                   ) -> tuple[dict[str, list[PhysicalCell]], dict[str, dict[int, list[PhysicalCell]]]]:
    """Top-level cells per chain, and per chain level -> cells in creation (config, depth-first) order."""
    types = config.cell_types
    tops: dict[str, list[PhysicalCell]] = {chain: [] for chain in config.chains}
    levels: dict[str, dict[int, list[PhysicalCell]]] = {chain: {} for chain in config.chains}

    def build(spec: PhysicalCellSpec, chain: str, parent: PhysicalCell | None, node: str) -> PhysicalCell:
        info = types[spec.cell_type]
        cell = PhysicalCell(chain, info, spec.address, parent)
        cell.pinned_id = spec.pinned_id
        per_level = levels[chain].setdefault(info.level, [])
        cell.order = len(per_level)
        per_level.append(cell)
        if is_node_type(info):
            node = node_name(spec.address)
            cell.is_node = True
        if info.child_type is None:
            cell.index = int(spec.address.rsplit("/", 1)[-1])
            cell.nodes = [node]
            cell.leaf_indices = [cell.index]
            cell.desc_counts = {1: 1}
            return cell
        for child_spec in spec.children:
            child = build(child_spec, chain, cell, node)
            cell.children.append(child)
        for child in cell.children:
            for n in child.nodes:
                if n not in cell.nodes:
                    cell.nodes.append(n)
            if not info.multi_node:
                cell.leaf_indices.extend(child.leaf_indices)
            for lv, count in child.desc_counts.items():
                cell.desc_counts[lv] = cell.desc_counts.get(lv, 0) + count
        cell.desc_counts[info.level] = 1
        return cell

    for spec in config.physical_cells:
        tops[spec.cell_type].append(build(spec, spec.cell_type, None, ""))
    return tops, levels


def build_virtual(vc: str, chain: str, info_of: Mapping[str, CellTypeInfo], cell_type: str, address: str,
                  parent: VirtualCell | None, index: int) -> VirtualCell:
    """A virtual subtree; child addresses follow the `parent index × childNumber + j` rule
    (docs/hived-config-and-cells.md#virtual-clusters)."""
    info = info_of[cell_type]
    cell = VirtualCell(vc, chain, info, address, parent)
    if info.child_type is not None:
        for j in range(info.child_number):
            child_index = index * info.child_number + j
            cell.children.append(
                build_virtual(vc, chain, info_of, info.child_type, f"{address}/{child_index}", cell, child_index)
            )
    return cell


def levels_of(cells: Sequence[C]) -> dict[int, list[C]]:
    """Cells grouped by level, each level in creation order (preassigned cells in order, depth-first)."""
    out: dict[int, list[C]] = {}

    def walk(cell: C) -> None:
        out.setdefault(cell.level, []).append(cell)
        for child in cell.children:
            walk(child)

    for cell in cells:
        walk(cell)
    return out


# ------------------------------------------------------------ affinity groups (gangs) as HiveD keeps them

ALLOCATED, PREEMPTING, BEING_PREEMPTED = "Allocated", "Preempting", "BeingPreempted"

# leafCellNumber -> pod slots -> leaves; a group rebuilt from bind info has holes (None) for missing cells
PhysicalPlacement = dict[int, list[list[PhysicalCell | None]]]
VirtualPlacement = dict[int, list[list[VirtualCell | None]]]
# a scheduling decision: every leaf placed
BoundPhysical = dict[int, list[list[PhysicalCell]]]
BoundVirtual = dict[int, list[list[VirtualCell]]]
# what a group holds: either kind (None: no virtual placement, opportunistic or lazily preempted)
GroupPhysical = PhysicalPlacement | BoundPhysical
GroupVirtual = VirtualPlacement | BoundVirtual | None


class Group:
    __slots__ = ("name", "vc", "priority", "lazy", "pinned_id", "state", "pod_numbers", "allocated_pods",
                 "physical", "virtual", "preempting_pods", "lazy_status", "chain", "bind_cache")

    def __init__(self, spec: PodSchedulingSpec, state: str) -> None:
        self.name = spec.group_name
        self.vc = spec.virtual_cluster
        self.priority = spec.priority
        self.lazy = spec.lazy_preemption_enable
        self.pinned_id = spec.pinned_cell_id
        self.state = state
        self.pod_numbers = spec.pod_numbers
        self.allocated_pods: dict[int, list[AllocatedPod | None]] = {
            n: [None] * count for n, count in self.pod_numbers.items()
        }
        self.physical: GroupPhysical = {}
        self.virtual: GroupVirtual = {}
        self.preempting_pods: dict[str, PodRef] = {}
        self.lazy_status: dict[str, str] | None = None
        self.chain = ""
        # (virtual placement it was built from, members of the bind info)
        self.bind_cache: tuple[()] | tuple[Mapping[int, Sequence[Sequence[VirtualCell | None]]] | None,
                                           tuple[MemberBindInfo, ...]] = ()

    def leaves(self) -> list[tuple[int, int, int, PhysicalCell | None]]:
        """(leafCellNumber, slot, position, physical leaf), members ascending
        (docs/hived-config-and-cells.md#priorities-and-preemption recommended order)."""
        physical: Mapping[int, Sequence[Sequence[PhysicalCell | None]]] = self.physical
        return [(n, s, i, leaf) for n in sorted(physical) for s, pod in enumerate(physical[n])
                for i, leaf in enumerate(pod)]

    def all_pods_released(self) -> bool:
        return all(p is None for pods in self.allocated_pods.values() for p in pods)
