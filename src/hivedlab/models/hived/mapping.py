"""Mapping a VC placement to physical cells: binding paths, buddy allocation, safe relaxed buddy allocation
(docs/hived-config-and-cells.md#mapping-to-physical-cells).

All work happens on scratch copies of one chain's free lists and `allVCFree`; nothing real changes here.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from hivedlab.models.hived.buddy import NIL
from hivedlab.models.hived.cell import OPPORTUNISTIC_PRIORITY, InternalError, PhysicalCell, VirtualCell


class Vertex:
    __slots__ = ("cell", "children")

    def __init__(self, cell: VirtualCell) -> None:
        self.cell = cell
        self.children: list[Vertex] = []


def binding_paths(leaves: list[VirtualCell], bindings: dict[int, PhysicalCell]
                  ) -> tuple[list[Vertex], list[list[Vertex]]]:
    """Unbound paths: those reaching an unbound preassigned cell, and those under a bound parent (grouped)."""
    vertices: dict[int, Vertex] = {}
    preassigned: list[Vertex] = []
    non_preassigned: list[list[Vertex]] = []
    for leaf in leaves:
        if leaf.physical is not None:
            bindings[id(leaf)] = leaf.physical
            continue
        path: list[VirtualCell] = []
        cell: VirtualCell | None = leaf
        while cell is not None and cell.physical is None and id(cell) not in vertices:
            path.append(cell)
            cell = cell.parent
        root = path[-1]
        vertex = Vertex(root)
        vertices[id(root)] = vertex
        parent = root.parent
        if parent is None:
            preassigned.append(vertex)
        elif id(parent) in vertices:
            vertices[id(parent)].children.append(vertex)
        else:
            for group in non_preassigned:
                if group[0].cell.parent is parent:
                    group.append(vertex)
                    break
            else:
                non_preassigned.append([vertex])
        for cell in reversed(path[:-1]):
            vertex = Vertex(cell)
            vertices[id(cell.parent)].children.append(vertex)
            vertices[id(cell)] = vertex
    return preassigned, non_preassigned


class Mapper:
    def __init__(self, free: dict[int, list[PhysicalCell]], need: dict[int, int], suggested: Collection[str] | None,
                 bindings: dict[int, PhysicalCell]) -> None:
        self.free = {lv: list(cells) for lv, cells in free.items()}  # scratch copies
        self.need = dict(need)
        self.suggested = suggested  # None: ignore suggested nodes
        self.bindings = bindings
        self.top = max(free) if free else 0

    def usable(self, cells: list[PhysicalCell], needed: int) -> list[PhysicalCell] | None:
        out = []
        suggested = self.suggested
        for c in cells:
            if c.virtual is not None:
                continue
            if not c.healthy and len(c.nodes) == 1:
                continue
            if suggested is not None and not any(n in suggested for n in c.nodes):
                continue
            out.append(c)
        if len(out) < needed:
            return None
        keys = [c.used.get(OPPORTUNISTIC_PRIORITY, 0) for c in out]
        if any(keys):  # a stable sort on all-equal keys changes nothing
            order = sorted(range(len(out)), key=keys.__getitem__)
            out = [out[i] for i in order]
        return out

    def map_cells(self, vertices: list[Vertex], candidates: list[PhysicalCell]) -> bool:
        """Map vertices onto distinct usable candidates, recursively, with backtracking."""
        usable = self.usable(candidates, len(vertices))
        if usable is None:
            return False
        taken: set[int] = set()
        return self._assign(vertices, 0, usable, taken)

    def _assign(self, vertices: list[Vertex], i: int, usable: list[PhysicalCell], taken: set[int]) -> bool:
        if i == len(vertices):
            return True
        vertex = vertices[i]
        for cand in usable:
            if id(cand) in taken:
                continue
            if vertex.children:
                if not self.map_cells(vertex.children, cand.children):
                    continue
            else:
                self.bindings[id(vertex.cell)] = cand
            taken.add(id(cand))
            if self._assign(vertices, i + 1, usable, taken):
                return True
            taken.discard(id(cand))
        return False

    def _pick_at(self, vertex: Vertex, level: int) -> bool:
        lst = self.free[level]
        usable = self.usable(lst, 1)
        if usable is None:
            return False
        for cand in usable:
            if self.map_cells([vertex], [cand]):
                _swap_remove(lst, cand)
                return True
        return False

    def _split_down(self, vertex: Vertex, level: int, target: int) -> bool:
        if level == target:
            return self._pick_at(vertex, level)
        usable = self.usable(self.free[level], 1)
        if usable is None:
            return False
        for cand in usable:
            self.free[level - 1].extend(cand.children)
            if self._split_down(vertex, level - 1, target):
                _swap_remove(self.free[level], cand)
                return True
            self.free[level - 1] = []
        return False

    def buddy_alloc(self, vertex: Vertex) -> bool:
        level = vertex.cell.level
        start = next((lv for lv in range(level, self.top + 1) if self.free.get(lv)), None)
        if start is None:
            raise InternalError("VC Safety Broken: free cell not found even split to the highest level")
        if self._split_down(vertex, start, level):
            self.need[level] = self.need.get(level, 0) - 1
            return True
        return False

    def safe_relaxed(self, vertex: Vertex) -> bool:
        level = vertex.cell.level
        top = self.top
        if level >= top:
            return False
        child_count = self._reference_child_counts()
        splittable: dict[int, int] = {}
        carried = 0
        for lv in range(top, level, -1):
            value = len(self.free[lv]) - self.need.get(lv, 0) + carried
            if value < 0:
                raise InternalError(f"VC Safety Broken: level {lv} is unsplittable")
            splittable[lv] = value
            carried = value * child_count.get(lv, 0)
        for lv in range(level + 1, top + 1):
            lst = self.free[lv]
            n = min(len(lst), splittable[lv])
            if n <= 0:
                continue
            taken = []
            for _ in range(n):
                first = lst[0]
                _swap_remove(lst, first)
                taken.append(first)
            splittable[lv] -= n
            block: list[PhysicalCell] = []
            for cell in taken:
                cells = [cell]
                while cells and cells[0].level > level:
                    cells = [child for c in cells for child in c.children]
                block.extend(cells)
            self.free[level][:0] = block
            if self._pick_at(vertex, level):
                return True
        return False

    def _reference_child_counts(self) -> dict[int, int]:
        """Child counts of a reference cell per level: first cell of the highest non-empty list, then first children."""
        counts: dict[int, int] = {}
        ref = None
        for lv in range(self.top, 0, -1):
            if self.free[lv]:
                ref = self.free[lv][0]
                break
        while ref is not None:
            counts[ref.level] = len(ref.children)
            ref = ref.children[0] if ref.children else None
        return counts


def _swap_remove(lst: list[Any], cell: object) -> None:
    for i, c in enumerate(lst):
        if c is cell:
            last = lst.pop()
            if i < len(lst):
                lst[i] = last
            return


def map_to_physical(leaves: list[VirtualCell], free: dict[int, list[PhysicalCell]], need: dict[int, int],
                    suggested: Collection[str] | None) -> dict[int, PhysicalCell] | None:
    """Physical leaf for each virtual leaf (keyed by id), or None when the placement cannot be mapped."""
    bindings: dict[int, PhysicalCell] = {}
    preassigned, non_preassigned = binding_paths(leaves, bindings)
    mapper = Mapper(free, need, suggested, bindings)
    for vertex in preassigned:
        if not mapper.buddy_alloc(vertex) and not mapper.safe_relaxed(vertex):
            return None
    for group in non_preassigned:
        parent = group[0].cell.parent
        parent_physical = parent.physical if parent is not None else None
        if parent_physical is None:
            raise InternalError(NIL)  # a non-preassigned cell's parent is bound first
        if not mapper.map_cells(group, parent_physical.children):
            return None
    return bindings
