"""Topology-aware placement of a group's pods on a cluster view (docs/hived-config-and-cells.md#the-vc-view).

Used on a VC's virtual cells (guaranteed pods, "cross-priority packing") and on a chain's physical cells
(opportunistic pods). The view's node list is built once and re-sorted in place with a stable sort on every call.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Generic

from hivedlab.models.hived import messages
from hivedlab.models.hived.cell import (
    FREE_PRIORITY,
    OPPORTUNISTIC_PRIORITY,
    C,
    Cell,
    InternalError,
    PhysicalCell,
    VirtualCell,
)

_HIGHEST = 1 << 30


def _nearest_node_or_top(cell: Cell[Any]) -> Cell[Any]:
    while not cell.at_or_above_node and cell.parent is not None:
        cell = cell.parent
    return cell


def build_view(levels: Mapping[int, Sequence[C]]) -> list[C]:
    """The view's "nodes": node-level cells, then below-node preassigned cells, higher levels first
    (docs/hived-config-and-cells.md#the-vc-view)."""
    top = max(levels) if levels else 0
    level = 1
    while level <= top and not levels[level][0].at_or_above_node:
        level += 1
    view: list[C] = []
    seen: set[int] = set()
    for lv in range(min(level, top), 0, -1):
        for cell in levels.get(lv, ()):
            if id(_nearest_node_or_top(cell)) in seen:
                continue
            seen.add(id(cell))
            view.append(cell)
    return view


class TopologyScheduler(Generic[C]):
    """Placement on one view: a VC's virtual cells (`virtual`) or a chain's physical cells."""

    def __init__(self, view: list[C], level_leaves: Mapping[int, int], virtual: bool) -> None:
        self.view = view
        self.level_leaves = level_leaves
        self.virtual = virtual  # VC view: cross-priority packing; physical view: opportunistic ordering

    def schedule(self, pod_numbers: Mapping[int, int], priority: int, suggested: Collection[str] | None
                 ) -> tuple[dict[int, list[list[C]]] | None, str]:
        """Place pods (leafCellNumber -> pod count); `suggested` None = ignore suggested nodes."""
        sizes = [n for n in sorted(pod_numbers) for _ in range(pod_numbers[n])]
        self._sort(suggested)
        chosen, reason = self._find_nodes(sizes, OPPORTUNISTIC_PRIORITY, suggested)
        used_priority = OPPORTUNISTIC_PRIORITY
        if chosen is None and priority > OPPORTUNISTIC_PRIORITY:
            # HiveD sorts again here; the key does not depend on the pass and the sort is stable, so the view
            # already is in the order that second sort would give
            used_priority = priority
            chosen, reason = self._find_nodes(sizes, priority, suggested)
        if chosen is None:
            return None, reason
        placement: dict[int, list[list[C]]] = {}
        remaining: dict[int, list[C]] = {}
        for size, node in zip(sizes, chosen, strict=True):
            if id(node) not in remaining:
                free: list[C] = []
                preemptible: list[C] = []
                _collect_leaves(node, used_priority, free, preemptible)
                remaining[id(node)] = free + preemptible
            placement.setdefault(size, []).append(self._pick_leaves(remaining, node, size))
        return placement, ""

    def _sort(self, suggested: Collection[str] | None) -> None:
        """Stable sort: healthy first, suggested first, then the view's packing order
        (docs/hived-config-and-cells.md#the-vc-view).

        The key is one integer (bad, non-suggested, then the packing counts, most significant first): integers
        compare faster than tuples and order the same way, as the counts stay far below 2**20."""
        if self.virtual:
            def key(c: C) -> int:
                if not isinstance(c, VirtualCell):
                    raise InternalError(f"a physical cell {c.address} in a virtual view")
                physical = c.physical
                if physical is None:
                    return -c.used_total
                flags = 0 if physical.healthy else 2
                if suggested is not None and not any(n in suggested for n in physical.nodes):
                    flags += 1
                return (flags << 21) - c.used_total
        else:
            def key(c: C) -> int:
                if not isinstance(c, PhysicalCell):
                    raise InternalError(f"a virtual cell {c.address} in a physical view")
                flags = 0 if c.healthy else 2
                if suggested is not None and not any(n in suggested for n in c.nodes):
                    flags += 1
                used = c.used
                opp = used.get(OPPORTUNISTIC_PRIORITY, 0)
                higher = c.used_total - opp - used.get(FREE_PRIORITY, 0)
                return (((flags << 21) - opp) << 21) + higher

        self.view.sort(key=key)

    def _find_nodes(self, sizes: list[int], priority: int, suggested: Collection[str] | None
                    ) -> tuple[list[C] | None, str]:
        """Greedy pods-to-nodes walk over the sorted view (HiveD's findNodesForPods)."""
        view = self.view
        if not view:
            raise InternalError("index out of range: empty cluster view")
        chosen: list[C] = []
        node_index = 0
        picked = 0
        free = _free_at(view[0], priority)
        pod = 0
        opportunistic = priority == OPPORTUNISTIC_PRIORITY
        while pod < len(sizes):
            node = view[node_index]
            if free - picked >= sizes[pod]:
                # a virtual view's node stands for the physical cell it is bound to (if any)
                physical = node.physical if isinstance(node, VirtualCell) else node if isinstance(
                    node, PhysicalCell) else None
                if physical is not None:
                    if not physical.healthy:
                        return None, messages.bad_node(physical.address)
                    if suggested is not None and not any(n in suggested for n in physical.nodes):
                        return None, messages.non_suggested_node(physical.address)
                chosen.append(node)
                picked += sizes[pod]
                pod += 1
            else:
                node_index += 1
                picked = 0
                if node_index >= len(view):
                    return None, messages.INSUFFICIENT_CAPACITY
                node = view[node_index]
                if opportunistic:  # _free_at's first case, inline: this walk is the hottest loop of a decision
                    free = node.total_leaves - node.used_total + node.used.get(FREE_PRIORITY, 0)
                else:
                    free = _free_at(node, priority)
        return chosen, ""

    def _pick_leaves(self, remaining: dict[int, list[C]], node: C, size: int) -> list[C]:
        candidates = remaining[id(node)]
        optimal = next((lv for lv in sorted(self.level_leaves) if self.level_leaves[lv] >= size), _HIGHEST)
        best_level, best = _search(candidates, size, optimal)
        if best is None:
            raise InternalError(f"failed to find {size} leaf cells in node {node.address}")
        picked = set(best)
        remaining[id(node)] = [c for i, c in enumerate(candidates) if i not in picked]
        return [candidates[i] for i in best]


def _free_at(cell: Cell[Any], priority: int) -> int:
    # everything but the free-priority entry
    # (docs/hived-config-and-cells.md#cells-and-their-states quirk may make it -1)
    if priority == OPPORTUNISTIC_PRIORITY:
        return cell.total_leaves - cell.used_total + cell.used.get(FREE_PRIORITY, 0)
    free = cell.total_leaves
    for p, v in cell.used.items():
        if p >= priority:
            free -= v
    return free


def _collect_leaves(cell: C, priority: int, free: list[C], preemptible: list[C]) -> None:
    if cell.children:
        for child in cell.children:
            _collect_leaves(child, priority, free, preemptible)
    elif cell.priority == FREE_PRIORITY:
        free.append(cell)
    elif cell.priority < priority:
        preemptible.append(cell)


def _lca(a: Cell[Any] | None, b: Cell[Any] | None) -> Cell[Any] | None:
    if a is None or b is None:
        return None
    while a.level < b.level:
        a = a.parent
        if a is None:
            return None
    while b.level < a.level:
        b = b.parent
        if b is None:
            return None
    while a is not b:
        a, b = a.parent, b.parent
        if a is None or b is None:
            return None
    return a


def _search(cells: Sequence[Cell[Any]], size: int, optimal: int) -> tuple[int, list[int] | None]:
    """Lexicographic search for the leaf combination with the lowest common ancestor (HiveD's findLeafCellsInNode)."""
    if size == 1:
        return (cells[0].level, [0]) if cells else (_HIGHEST, None)
    n = len(cells)
    best_level = _HIGHEST
    best: list[int] | None = None
    indices = [0] * size
    affinity: list[Cell[Any] | None] = [None] * size
    depth = 0
    pos = 0
    while True:
        while pos < n:
            cell = cells[pos]
            indices[depth] = pos
            if depth == 0:
                affinity[0] = cell
            else:
                lca = _lca(cell, affinity[depth - 1])
                affinity[depth] = lca
                if (lca is None and best_level < _HIGHEST) or (lca is not None and lca.level > best_level):
                    pos += 1
                    continue
            if depth == size - 1:
                lca = affinity[depth]
                level = lca.level if lca is not None else _HIGHEST - 1
                if level < best_level:
                    best_level = level
                    best = list(indices)
                    if level == optimal:
                        return best_level, best
            else:
                depth += 1
            pos += 1
        depth -= 1
        if depth < 0:
            return best_level, best
        pos = indices[depth] + 1
