"""One chain's buddy free lists, counters and doomed-bad-cell bookkeeping
(docs/hived-config-and-cells.md#cells-and-their-states, and the same page on bad nodes and doomed cells).

Every procedure here is HiveD's, step for step: the order of list operations decides which physical cell a pod
gets, so swap-removes, appends and the order of the doomed checks are reproduced literally.
"""

from __future__ import annotations

from hivedlab.models.hived.cell import InternalError, PhysicalCell, VirtualCell


class ChainState:
    """Free lists per level plus `obtainable`, `vcFree`, `allVCFree`, `badFree` and `doomed`
    (docs/hived-config-and-cells.md#cells-and-their-states)."""

    def __init__(self, chain: str, top_level: int, tops: list[PhysicalCell], vcs: list[str],
                 preassigned: dict[str, dict[int, list[VirtualCell]]], vc_free: dict[str, dict[int, int]]) -> None:
        self.chain = chain
        self.top = top_level
        self.free: dict[int, list[PhysicalCell]] = {lv: [] for lv in range(1, top_level + 1)}
        for cell in tops:
            self._append(cell)
        self.obtainable: dict[int, int] = {}
        count = len(tops)
        ref: PhysicalCell | None = tops[0] if tops else None
        for lv in range(top_level, 0, -1):
            self.obtainable[lv] = count
            count = count * (len(ref.children) if ref is not None else 0)
            ref = ref.children[0] if ref is not None and ref.children else None
        # VCs with any preassigned cell in this chain, config order
        # (docs/hived-config-and-cells.md#bad-nodes-and-doomed-cells)
        self.vcs = vcs
        self.preassigned = preassigned  # vc -> level -> non-pinned preassigned cells, creation order
        self.vc_free = vc_free
        self.all_vc_free = {lv: sum(vc_free[vc].get(lv, 0) for vc in vcs) for lv in range(1, top_level + 1)}
        self.bad_free: dict[int, list[PhysicalCell]] = {lv: [] for lv in range(1, top_level + 1)}
        self.doomed: dict[str, dict[int, list[PhysicalCell]]] = {vc: {} for vc in vcs}

    # -- free list primitives (docs/hived-config-and-cells.md#cells-and-their-states) ----------------------------------
    def _append(self, cell: PhysicalCell) -> None:
        lst = self.free[cell.level]
        cell.in_free = True
        cell.free_pos = len(lst)
        lst.append(cell)

    def _swap_remove(self, cell: PhysicalCell) -> None:
        lst = self.free[cell.level]
        pos = cell.free_pos
        last = lst.pop()
        if last is not cell:
            lst[pos] = last
            last.free_pos = pos
        cell.in_free = False
        cell.free_pos = -1

    def remove_from_free(self, cell: PhysicalCell) -> int:
        """Take a cell out of the free list, splitting free ancestors; returns the split-up-to level."""
        cur = cell
        while cur.parent is not None and not cur.parent.split:
            parent = cur.parent
            for child in parent.children:
                self._append(child)
            parent.split = True
            self._swap_remove(cur)
            cur = parent
        if not cur.in_free:
            # docs/hived-config-and-cells.md#random-choices-in-hived: HiveD dereferences a cell that is not free
            raise InternalError(NIL)
        self._swap_remove(cur)
        return cur.level

    def add_to_free(self, cell: PhysicalCell) -> int:
        """Give a cell back with buddy merging; returns the merged-up-to level."""
        cur = cell
        while cur.parent is not None and all(s.in_free for s in cur.parent.children if s is not cur):
            for sibling in cur.parent.children:
                if sibling is not cur:
                    self._swap_remove(sibling)
            cur.parent.split = False
            cur = cur.parent
        self._append(cur)
        return cur.level

    # -- bad-free list ------------------------------------------------------------------------------------------
    def _bad_append(self, cell: PhysicalCell) -> None:
        lst = self.bad_free[cell.level]
        # positions make removal O(1); a cell appended twice (possible in HiveD's odd states) falls back to a scan
        cell.bad_pos = len(lst) if cell.bad_pos == -1 else -2
        lst.append(cell)

    def _bad_remove(self, cell: PhysicalCell) -> None:
        pos = cell.bad_pos
        if pos == -1:
            return
        lst = self.bad_free[cell.level]
        if pos == -2:
            pos = next((i for i, c in enumerate(lst) if c is cell), -1)
            if pos < 0:
                cell.bad_pos = -1
                return
        last = lst.pop()
        if last is not cell:
            lst[pos] = last
            if last.bad_pos != -2:
                last.bad_pos = pos
        if cell.bad_pos != -2 or not any(c is cell for c in lst):
            cell.bad_pos = -1

    # -- take / give back (docs/hived-config-and-cells.md#bad-nodes-and-doomed-cells) ----------------------------------
    def take(self, cell: PhysicalCell, vc: str, doomed: bool) -> None:
        lv = cell.level
        self.vc_free[vc][lv] = self.vc_free[vc].get(lv, 0) - 1
        self.all_vc_free[lv] -= 1
        self.obtainable[lv] -= 1
        up_to = self.remove_from_free(cell)
        ancestor = cell.parent
        for k in range(lv + 1, up_to + 1):
            self.obtainable[k] -= 1
            if ancestor is None:
                raise InternalError(NIL)  # the free list held a cell above the top
            if not ancestor.healthy:
                self._bad_remove(ancestor)
            else:
                self.check_bind(k)
            ancestor = ancestor.parent
        if not cell.healthy:
            self.bind_bad(cell)
            if not doomed:
                self.check_unbind(lv)
        else:
            self.check_bind(lv)
        for k in range(lv - 1, 0, -1):
            self.obtainable[k] -= cell.desc_counts.get(k, 0)
            if not doomed:
                self.check_bind(k)

    def give_back(self, cell: PhysicalCell, vc: str, doomed: bool) -> None:
        lv = cell.level
        self.vc_free[vc][lv] = self.vc_free[vc].get(lv, 0) + 1
        self.all_vc_free[lv] += 1
        self.obtainable[lv] += 1
        up_to = self.add_to_free(cell)
        ancestor = cell.parent
        for k in range(lv + 1, up_to + 1):
            self.obtainable[k] += 1
            if ancestor is None:
                raise InternalError(NIL)  # the free list held a cell above the top
            if not ancestor.healthy:
                self._bad_append(ancestor)
            else:
                self.check_unbind(k)
            ancestor = ancestor.parent
        if not cell.healthy:
            self.unbind_bad(cell)
            if not doomed:
                self.check_bind(lv)
        else:
            self.check_unbind(lv)
        for k in range(lv - 1, 0, -1):
            self.obtainable[k] += cell.desc_counts.get(k, 0)
            if not doomed:
                self.check_unbind(k)

    def safety_ok(self) -> bool:
        return all(self.obtainable[lv] >= self.all_vc_free[lv] for lv in self.obtainable)

    # -- doomed bad cells (docs/hived-config-and-cells.md#bad-nodes-and-doomed-cells) ----------------------------------
    def check_bind(self, level: int) -> None:
        for vc in self.vcs:
            free = self.vc_free[vc]
            while free.get(level, 0) > self.obtainable[level] - len(self.bad_free[level]):
                if not self.bad_free[level]:
                    raise InternalError(f"index out of range: no bad free cell at chain {self.chain} level {level}")
                p = self.bad_free[level][0]
                v = next((c for c in self.preassigned[vc].get(level, ()) if c.physical is None), None)
                if v is None:
                    raise InternalError(NIL)
                p.virtual, v.physical = v, p
                self.doomed[vc].setdefault(level, []).append(p)
                self.take(p, vc, True)

    def check_unbind(self, level: int) -> None:
        for vc in self.vcs:
            doomed = self.doomed[vc].get(level)
            free = self.vc_free[vc]
            while doomed and free.get(level, 0) < self.obtainable[level] - len(self.bad_free[level]):
                p = doomed[0]
                v = p.virtual
                if v is not None:
                    v.physical = None
                p.virtual = None
                last = doomed.pop()
                if doomed:
                    doomed[0] = last
                self.give_back(p, vc, True)

    def remove_doomed(self, vc: str, cell: PhysicalCell) -> bool:
        lst = self.doomed.get(vc, {}).get(cell.level)
        if not lst:
            return False
        for i, c in enumerate(lst):
            if c is cell:
                last = lst.pop()
                if i < len(lst):
                    lst[i] = last
                return True
        return False

    def is_doomed(self, vc: str, cell: PhysicalCell) -> bool:
        return any(c is cell for c in self.doomed.get(vc, {}).get(cell.level, ()))

    def bind_bad(self, cell: PhysicalCell) -> None:
        self._bad_remove(cell)
        if cell.virtual is None:
            bind_to_first_free_child(cell)
        for child in cell.children:
            if not child.healthy:
                self.bind_bad(child)

    def unbind_bad(self, cell: PhysicalCell) -> None:
        self._bad_append(cell)
        if cell.virtual is not None:
            cell.virtual.physical = None
            cell.virtual = None
        for child in cell.children:
            if not child.healthy:
                self.unbind_bad(child)

    # -- health (docs/hived-config-and-cells.md#bad-nodes-and-doomed-cells mark leaf bad / healthy) --------------------
    def mark_bad(self, cell: PhysicalCell) -> None:
        if not cell.healthy:
            return
        cell.healthy = False
        if cell.parent is not None:
            self.mark_bad(cell.parent)
        lv = cell.level
        if in_free_sense(cell):
            self._bad_append(cell)
            if self.all_vc_free[lv] > self.obtainable[lv] - len(self.bad_free[lv]):
                self.check_bind(lv)
        elif cell.virtual is None and not cell.split:
            bind_to_first_free_child(cell)

    def mark_healthy(self, cell: PhysicalCell) -> None:
        if cell.healthy:
            return
        cell.healthy = True
        lv = cell.level
        if in_free_sense(cell):
            self._bad_remove(cell)
            self.check_unbind(lv)
        elif cell.virtual is not None and not cell.pinned_id and cell.priority < 0:
            v = cell.virtual
            v.physical = None
            cell.virtual = None
            if v.parent is None:
                self.remove_doomed(v.vc, cell)
                self.give_back(cell, v.vc, True)
        parent = cell.parent
        if parent is not None and all(s.healthy for s in parent.children):
            self.mark_healthy(parent)


NIL = "runtime error: invalid memory address or nil pointer dereference"


def in_free_sense(cell: PhysicalCell) -> bool:
    """Neither bound nor split, nor any ancestor up to the one in the free list
    (docs/hived-config-and-cells.md#cells-and-their-states)."""
    cur = cell
    while True:
        if cur.virtual is not None or cur.split:
            return False
        parent = cur.parent
        if parent is None or parent.split:
            return True
        cur = parent


def bind_to_first_free_child(cell: PhysicalCell) -> None:
    """Bind a bad cell inside a bound cell to its parent's first unbound virtual child
    (docs/hived-config-and-cells.md#bad-nodes-and-doomed-cells)."""
    parent_virtual = cell.parent.virtual if cell.parent is not None else None
    if parent_virtual is None:
        raise InternalError(NIL)
    for v in parent_virtual.children:
        if v.physical is None:
            v.physical, cell.virtual = cell, v
            return
    raise InternalError(NIL)
