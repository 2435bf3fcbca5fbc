"""Cell allocation and release, preemption, lazy preemption and group allocation
(docs/hived-config-and-cells.md#priorities-and-preemption, and the same page on allocation and lazy preemption).

A collaborator of HivedScheduler: `CellOps` holds the very state objects the scheduler owns (chain states, groups,
opportunistic entries, preassigned and pinned virtual cells, leaf index) and works on them in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hivedlab.models.hived.buddy import NIL, in_free_sense
from hivedlab.models.hived.cell import (
    ALLOCATED,
    BEING_PREEMPTED,
    FREE,
    FREE_PRIORITY,
    MAX_GUARANTEED_PRIORITY,
    MIN_GUARANTEED_PRIORITY,
    OPPORTUNISTIC_PRIORITY,
    PREEMPTING,
    RESERVED,
    RESERVING,
    USED,
    BoundPhysical,
    BoundVirtual,
    Group,
    GroupVirtual,
    InternalError,
    PhysicalCell,
    PhysicalPlacement,
    VirtualCell,
    VirtualPlacement,
    set_priority,
    update_used,
)
from hivedlab.models.hived.types import BindInfo, PodRef, PodSchedulingSpec

if TYPE_CHECKING:
    from hivedlab.models.hived.buddy import ChainState


class CellOps:
    """Cell-level procedures over state shared with (owned by) one HivedScheduler."""

    def __init__(self, *, chain_state: dict[str, ChainState], groups: dict[str, Group],
                 opp_entries: dict[str, list[PhysicalCell]],
                 vc_preassigned: dict[str, dict[str, dict[int, list[VirtualCell]]]],
                 vc_pinned: dict[str, dict[str, VirtualCell]], type_level: dict[str, dict[str, int]],
                 leaf_by_key: dict[tuple[str, str, int], PhysicalCell], chains: list[str],
                 clock: Callable[[], str]) -> None:
        self.chain_state = chain_state
        self.groups = groups
        self.opp_entries = opp_entries
        self.vc_preassigned = vc_preassigned
        self.vc_pinned = vc_pinned
        self.type_level = type_level
        self.leaf_by_key = leaf_by_key
        self.chains = chains
        self.clock = clock

    # -- one leaf ---------------------------------------------------------------------------------------------
    def _state_for(self, chain: str, vc: str) -> ChainState:
        state = self.chain_state[chain]
        if vc not in state.vc_free:
            # docs/hived-config-and-cells.md#random-choices-in-hived: VC without cells in this chain
            raise InternalError("assignment to entry in nil map")
        return state

    def _allocate_leaf(self, p: PhysicalCell, v: VirtualCell | None, priority: int, vc: str) -> bool:
        """HiveD's allocateLeafCell; False when taking the preassigned cell broke VC safety
        (docs/hived-config-and-cells.md#allocation-and-release)."""
        if v is None:
            set_priority(p, OPPORTUNISTIC_PRIORITY)
            update_used(p, OPPORTUNISTIC_PRIORITY, 1)
            p.vc_name = vc
            self.opp_entries.setdefault(vc, []).append(p)
            return True
        set_priority(v, priority)
        update_used(v, priority, 1)
        set_priority(p, priority)
        update_used(p, priority, 1)
        pre = v.preassigned
        newly_bound = pre.physical is None
        if p.virtual is None:
            _bind_cell(p, v)
        if newly_bound:
            if pre.physical is None:
                raise InternalError("runtime error: invalid memory address or nil pointer dereference")
            state = self._state_for(pre.physical.chain, vc)
            state.take(pre.physical, vc, False)
            return state.safety_ok()
        return True

    def _release_leaf(self, p: PhysicalCell, vc: str) -> None:
        """HiveD's releaseLeafCell (docs/hived-config-and-cells.md#allocation-and-release), including the
        opportunistic-bad-leaf quirk."""
        v = p.virtual
        if v is not None:
            update_used(v, v.priority, -1)
            set_priority(v, FREE_PRIORITY)
            pre = v.preassigned
            pre_physical = pre.physical
            if p.healthy:
                _unbind_cell(p)
            if pre_physical is not None and not pre_physical.pinned_id and pre.priority < MIN_GUARANTEED_PRIORITY:
                state = self._state_for(pre_physical.chain, vc)
                if not state.is_doomed(vc, pre_physical):
                    state.give_back(pre_physical, vc, False)
        else:
            entries = self.opp_entries.get(vc, [])
            if p in entries:
                entries.remove(p)
            p.vc_name = ""
        update_used(p, p.priority, -1)
        set_priority(p, FREE_PRIORITY)

    # -- lazy preemption (docs/hived-config-and-cells.md#lazy-preemption) ----------------------------------------------
    def try_lazy_preempt(self, placement: BoundVirtual, numbers: list[int], preemptor: str
                         ) -> list[tuple[Group, GroupVirtual]]:
        preempted: dict[str, tuple[Group, GroupVirtual]] = {}
        for n in numbers:
            for pod in placement[n]:
                for leaf in pod:
                    p = leaf.physical
                    if p is not None and p.state == USED and p.using_group is not None and p.using_group.lazy:
                        group = p.using_group
                        preempted[group.name] = (group, group.virtual)
                        self._lazy_preempt(group, preemptor)
        return list(preempted.values())

    def _lazy_preempt(self, victim: Group, preemptor: str) -> None:
        virtual = victim.virtual
        if virtual:
            for n in sorted(virtual):
                for pod in virtual[n]:
                    for leaf in pod:
                        if leaf is not None and leaf.physical is not None:
                            p = leaf.physical
                            self._release_leaf(p, victim.vc)
                            self._allocate_leaf(p, None, OPPORTUNISTIC_PRIORITY, victim.vc)
        victim.virtual = None
        victim.lazy_status = {"preemptor": preemptor, "preemptionTime": self.clock()}

    def revert_lazy_preempt(self, group: Group, virtual: GroupVirtual) -> None:
        for n, slot, i, p in group.leaves():
            if p is None or not virtual:
                continue
            v = virtual[n][slot][i]
            self._release_leaf(p, group.vc)
            self._allocate_leaf(p, v, group.priority, group.vc)
        group.virtual = virtual
        group.lazy_status = None

    def _lazy_preempt_cell(self, cell: VirtualCell, preemptor: str) -> None:
        if not cell.children:
            p = cell.physical
            if p is not None and p.state == USED and p.using_group is not None:
                self._lazy_preempt(p.using_group, preemptor)
            return
        for child in cell.children:
            self._lazy_preempt_cell(child, preemptor)

    # -- preemption (docs/hived-config-and-cells.md#priorities-and-preemption) -----------------------------------------
    def create_preemption(self, s: PodSchedulingSpec, physical: BoundPhysical, virtual: BoundVirtual | None,
                          pod: PodRef) -> None:
        group = Group(s, PREEMPTING)
        for n in sorted(physical):
            for slot, pod_leaves in enumerate(physical[n]):
                for i, p in enumerate(pod_leaves):
                    v = virtual[n][slot][i] if virtual else None
                    if p.state == USED:
                        victim = p.using_group
                        if victim is None:
                            raise InternalError(NIL)  # a used leaf always has its group
                        self._release_leaf(p, victim.vc)
                        victim.state = BEING_PREEMPTED
                    self._allocate_leaf(p, v, s.priority, group.vc)
                    p.reserving_group = group
                    if p.state == USED:
                        p.state = RESERVING
                    elif p.state == FREE:
                        p.state = RESERVED
        group.physical = physical
        group.virtual = virtual
        group.chain = next((p.chain for pods in physical.values() for leaves in pods for p in leaves), "")
        group.preempting_pods[pod.uid] = pod
        self.groups[group.name] = group

    def cancel_preemption(self, group: Group) -> None:
        """HiveD's deletePreemptingAffinityGroup: Reserving -> Used by the victim, Reserved -> Free."""
        for _, _, _, p in group.leaves():
            if p is None:
                continue
            self._release_leaf(p, group.vc)
            if p.reserving_group is group:
                p.reserving_group = None
            if p.state == RESERVING and p.using_group is not None:
                p.state = USED
                victim = p.using_group
                v = _retrieve_virtual(victim, p) if victim.virtual is not None else None
                self._allocate_leaf(p, v, victim.priority, victim.vc)
            elif p.state in (RESERVED, RESERVING):
                p.state = FREE
        if self.groups.get(group.name) is group:
            del self.groups[group.name]

    def allocate_preempting(self, group: Group) -> None:
        for _, _, _, p in group.leaves():
            if p is None:
                continue
            p.reserving_group = None
            p.using_group = group
            p.state = USED
        group.state = ALLOCATED
        group.preempting_pods = {}

    def delete_allocated_group(self, group: Group) -> None:
        for _, _, _, p in group.leaves():
            if p is None:
                continue
            if p.using_group is group:
                p.using_group = None
            if p.state == USED:
                self._release_leaf(p, group.vc)
                p.state = FREE
            elif p.state == RESERVING:
                p.state = RESERVED
        if self.groups.get(group.name) is group:
            del self.groups[group.name]

    # -- first bound pod of a group (docs/hived-config-and-cells.md#allocation-and-release) ----------------------------
    def create_allocated(self, s: PodSchedulingSpec, info: BindInfo) -> Group:
        group = Group(s, ALLOCATED)
        # built here with holes for cells missing from the config; `group.virtual` is `virtual` or, once dropped, None
        physical: PhysicalPlacement = {}
        virtual: VirtualPlacement = {}
        group.physical, group.virtual = physical, virtual
        group.chain = info.cell_chain
        lazy = False
        opportunistic = s.priority < MIN_GUARANTEED_PRIORITY
        for member in info.affinity_group_bind_info:
            if not member.pod_placements:
                continue
            n = len(member.pod_placements[0].physical_leaf_cell_indices)
            physical[n] = [[None] * len(p.physical_leaf_cell_indices) for p in member.pod_placements]
            if group.virtual is not None:
                virtual[n] = [[None] * len(p.physical_leaf_cell_indices) for p in member.pod_placements]
            group.allocated_pods.setdefault(n, [None] * len(member.pod_placements))
            for slot, placement in enumerate(member.pod_placements):
                for i, index in enumerate(placement.physical_leaf_cell_indices):
                    p = self._find_leaf(info.cell_chain, placement.physical_node, index)
                    if p is None:
                        continue  # docs/hived-model.md#restart-and-recovery: cells missing from the config are ignored
                    physical[n][slot][i] = p
                    v = None
                    if opportunistic:
                        group.virtual = None
                    elif not lazy:
                        v = self._derive_virtual(p, placement.preassigned_cell_types, i, s)
                        if v is None:
                            lazy = True
                        else:
                            if group.virtual is not None:
                                virtual[n][slot][i] = v
                            if in_free_sense(p) and v.preassigned.priority > FREE_PRIORITY:
                                self._lazy_preempt_cell(v.preassigned, group.name)
                    p.using_group = group
                    p.state = USED
                    if not self._allocate_leaf(p, v, s.priority, group.vc):
                        lazy = True
        if lazy and not opportunistic:
            self._lazy_preempt(group, group.name)
        self.groups[group.name] = group
        return group

    def _find_leaf(self, chain: str, node: str, index: int) -> PhysicalCell | None:
        leaf = self.leaf_by_key.get((chain, node, index))
        if leaf is not None:
            return leaf
        for other in self.chains:
            leaf = self.leaf_by_key.get((other, node, index))
            if leaf is not None:
                return leaf
        return None

    def _derive_virtual(self, p: PhysicalCell, types: tuple[str, ...], i: int, s: PodSchedulingSpec
                        ) -> VirtualCell | None:
        cell_type = types[i] if i < len(types) else ""
        level = self.type_level.get(p.chain, {}).get(cell_type)
        vc = s.virtual_cluster
        if not cell_type or level is None or vc not in self.vc_preassigned:
            return None
        if s.pinned_cell_id:
            pinned = self.vc_pinned[vc].get(s.pinned_cell_id)
            candidates = {pinned.level: [pinned]} if pinned is not None else {}
        else:
            candidates = self.vc_preassigned[vc].get(p.chain, {})
        return _map_physical_to_virtual(p, candidates, level, s.priority)


def _map_physical_to_virtual(p: PhysicalCell, candidates: dict[int, list[VirtualCell]], level: int, priority: int
                             ) -> VirtualCell | None:
    if p.virtual is not None:
        return p.virtual
    if p.level == level:
        return _lowest_priority(candidates.get(level, []), priority)
    if p.parent is None:
        return None
    parent = _map_physical_to_virtual(p.parent, candidates, level, priority)
    if parent is None:
        return None
    return _lowest_priority(parent.children, priority)


def _lowest_priority(cells: list[VirtualCell], priority: int) -> VirtualCell | None:
    """HiveD's getLowestPriorityVirtualCell with the exact candidate set of
    docs/hived-config-and-cells.md#allocation-and-release."""
    lowest = MAX_GUARANTEED_PRIORITY
    best = None
    for c in cells:
        if c.priority == FREE_PRIORITY:
            if c.physical is None:
                return c
            continue
        if MIN_GUARANTEED_PRIORITY <= c.priority < lowest and c.priority < priority:
            lowest = c.priority
            best = c
    return best


def _bind_cell(p: PhysicalCell, v: VirtualCell) -> None:
    cur: PhysicalCell | None = p
    while v.physical is None:
        if cur is None:
            raise InternalError(NIL)  # the physical tree is as deep as the virtual one bound to it
        cur.virtual, v.physical = v, cur
        if v.parent is None:
            break
        v = v.parent
        cur = cur.parent


def _unbind_cell(p: PhysicalCell) -> None:
    """Undo a leaf's binding upwards, stopping at the pinned cell's binding
    (docs/hived-config-and-cells.md#allocation-and-release)."""
    v = p.virtual
    while v is not None and v.physical is not None and not v.physical.pinned_id:
        physical = v.physical
        physical.virtual = None
        v.physical = None
        parent = v.parent
        if parent is None:
            return
        for child in parent.children:
            if child.physical is not None:
                return
        v = parent


def _retrieve_virtual(group: Group, p: PhysicalCell) -> VirtualCell | None:
    for n, slot, i, leaf in group.leaves():
        if leaf is p:
            return group.virtual[n][slot][i] if group.virtual else None
    return None
