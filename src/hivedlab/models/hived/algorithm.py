"""HivedScheduler: HiveD v0.3.4's algorithm, its start-up state and its schedule call
(docs/hived-config-and-cells.md#the-schedule-call), behind one narrow interface.

`schedule` returns exactly one of Bind, Preempt or Wait (or raises UserError); `add_allocated_pod`,
`delete_allocated_pod`, `delete_unallocated_pod`, `set_node_bad` and `set_node_healthy` change state.
Cell-level procedures (allocation, release, preemption) live in `hivedlab.models.hived.preemption`.

Size: over 400 lines because it is one state machine, kept in the order of HiveD's own `hived_algorithm.go` so that
the two can be read side by side.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from hivedlab.models.hived import inspect as inspect_views
from hivedlab.models.hived import messages
from hivedlab.models.hived.buddy import ChainState
from hivedlab.models.hived.cell import (
    ALLOCATED,
    BEING_PREEMPTED,
    MIN_GUARANTEED_PRIORITY,
    OPPORTUNISTIC_PRIORITY,
    PREEMPTING,
    RESERVED,
    RESERVING,
    USED,
    BoundPhysical,
    BoundVirtual,
    Group,
    InternalError,
    PhysicalCell,
    VirtualCell,
    build_physical,
    build_virtual,
    levels_of,
)
from hivedlab.models.hived.config import HivedConfig
from hivedlab.models.hived.mapping import map_to_physical
from hivedlab.models.hived.preemption import CellOps
from hivedlab.models.hived.topology import TopologyScheduler, build_view
from hivedlab.models.hived.types import (
    PHASE_PREEMPTING,
    AllocatedPod,
    Bind,
    BindInfo,
    MemberBindInfo,
    Phase,
    PodPlacement,
    PodRef,
    PodSchedulingSpec,
    Preempt,
    UserError,
    Wait,
    parse_spec,
)

# a scheduling attempt's outcome: physical and virtual placement (both None when it fails), and the reason
_Found = tuple[BoundPhysical | None, BoundVirtual | None, str]


class HivedScheduler:
    """One HiveD process: cells built from the config, start-up replayed
    (docs/hived-config-and-cells.md#the-state-after-start-up), then driven call by call."""

    def __init__(self, config: HivedConfig, clock: Callable[[], str] | None = None,
                 ready_nodes: Collection[str] | None = None, not_ready_nodes: Collection[str] = ()) -> None:
        """`ready_nodes`: the nodes K8s reports Ready at start-up (default: all, in `reported_nodes` order);
        the others, and those in `not_ready_nodes`, stay bad (a restart, docs/hived-model.md "Restart and
        recovery"). `clock` gives the lazy-preemption time shown by the inspect API."""
        self.config = config
        self.clock: Callable[[], str] = clock or (lambda: "")
        types = config.cell_types
        self.tops, self.levels = build_physical(config)
        self.chains = list(config.chains)
        self.level_type: dict[str, dict[int, str]] = {}
        for chain in self.chains:
            name: str | None = chain
            self.level_type[chain] = {}
            while name is not None:
                self.level_type[chain][types[name].level] = name
                name = types[name].child_type
        self.type_level = {c: {t: lv for lv, t in m.items()} for c, m in self.level_type.items()}
        self.level_leaves = {c: {lv: types[t].leaf_cell_number for lv, t in m.items()}
                             for c, m in self.level_type.items()}
        self.type_chains: dict[str, list[str]] = {}
        for chain in self.chains:
            self.type_chains.setdefault(types[chain].leaf_type, []).append(chain)
        for chains in self.type_chains.values():
            chains.sort(reverse=True)  # docs/hived-config-and-cells.md#chains / hived-diff README: reverse byte order
        self.node_leaves: dict[str, dict[str, list[PhysicalCell]]] = {}
        for chain in self.chains:
            for leaf in self.levels[chain].get(1, ()):
                self.node_leaves.setdefault(leaf.nodes[0], {}).setdefault(chain, []).append(leaf)
        self.leaf_by_key: dict[tuple[str, str, int], PhysicalCell] = {}
        for chain in self.chains:
            for leaf in self.levels[chain].get(1, ()):
                self.leaf_by_key.setdefault((chain, leaf.nodes[0], leaf.index), leaf)
        self._build_vcs()
        self.groups: dict[str, Group] = {}
        self.allocated: dict[str, tuple[PodSchedulingSpec, BindInfo]] = {}
        self.pending: dict[str, PodSchedulingSpec] = {}
        self.opp_entries: dict[str, list[PhysicalCell]] = {vc: [] for vc in self.vc_names}
        self.bad_nodes: set[str] = set()
        self._last_spec: tuple[Mapping[str, Any] | None, PodRef, PodSchedulingSpec] | None = None
        self.cells = CellOps(chain_state=self.chain_state, groups=self.groups, opp_entries=self.opp_entries,
                             vc_preassigned=self.vc_preassigned, vc_pinned=self.vc_pinned,
                             type_level=self.type_level, leaf_by_key=self.leaf_by_key, chains=self.chains,
                             clock=self.clock)
        self._start_up(ready_nodes, frozenset(not_ready_nodes))

    # -- construction ---------------------------------------------------------------------------------------
    def _build_vcs(self) -> None:
        config = self.config
        types = config.cell_types
        pinned_physical: dict[str, PhysicalCell] = {}
        for chain in self.chains:
            for level_cells in self.levels[chain].values():
                for physical_cell in level_cells:
                    if physical_cell.pinned_id:
                        pinned_physical[physical_cell.pinned_id] = physical_cell
        self.vc_names = [vc.name for vc in config.virtual_clusters]
        self.vc_preassigned: dict[str, dict[str, dict[int, list[VirtualCell]]]] = {}
        self.vc_pinned: dict[str, dict[str, VirtualCell]] = {}
        self.vc_sched: dict[str, dict[str, TopologyScheduler[VirtualCell]]] = {}
        self.pinned_sched: dict[str, dict[str, TopologyScheduler[VirtualCell]]] = {}
        vc_free: dict[str, dict[str, dict[int, int]]] = {}
        chain_vcs: dict[str, list[str]] = {c: [] for c in self.chains}
        for vc in config.virtual_clusters:
            index = 0
            per_chain: dict[str, list[VirtualCell]] = {}
            free = vc_free.setdefault(vc.name, {})
            for entry in vc.virtual_cells:
                for _ in range(entry.cell_number):
                    cell = build_virtual(vc.name, entry.chain, types, entry.cell_type, f"{vc.name}/{index}", None, 0)
                    # cellLevelToType of the VC cell's chain at its level
                    # (docs/hived-config-and-cells.md#bind-info-and-the-pod-annotations)
                    cell.bind_type = self.level_type.get(entry.chain, {}).get(cell.level, "")
                    index += 1
                    per_chain.setdefault(entry.chain, []).append(cell)
                    level_free = free.setdefault(entry.chain, {})
                    level_free[cell.level] = level_free.get(cell.level, 0) + 1
            self.vc_pinned[vc.name] = {}
            self.pinned_sched[vc.name] = {}
            for pid in vc.pinned_cells:
                physical = pinned_physical[pid]
                cell = build_virtual(vc.name, physical.chain, types, physical.cell_type, f"{vc.name}/{index}",
                                     None, 0)
                cell.pinned_id = pid
                cell.bind_type = self.level_type[physical.chain].get(cell.level, "")
                index += 1
                self.vc_pinned[vc.name][pid] = cell
                level_free = free.setdefault(physical.chain, {})
                level_free[cell.level] = level_free.get(cell.level, 0) + 1
                self.pinned_sched[vc.name][pid] = TopologyScheduler(
                    build_view(levels_of([cell])), self.level_leaves[physical.chain], True)
            self.vc_preassigned[vc.name] = {}
            self.vc_sched[vc.name] = {}
            for chain, cells in per_chain.items():
                by_level: dict[int, list[VirtualCell]] = {}
                for cell in cells:
                    by_level.setdefault(cell.level, []).append(cell)
                self.vc_preassigned[vc.name][chain] = by_level
                if chain in self.level_leaves:
                    self.vc_sched[vc.name][chain] = TopologyScheduler(
                        build_view(levels_of(cells)), self.level_leaves[chain], True)
            for chain in free:
                if chain in chain_vcs:
                    chain_vcs[chain].append(vc.name)
        self.chain_state: dict[str, ChainState] = {}
        for chain in self.chains:
            vcs = chain_vcs[chain]
            self.chain_state[chain] = ChainState(
                chain, max(self.level_type[chain]), self.tops[chain], vcs,
                {vc: self.vc_preassigned[vc].get(chain, {}) for vc in vcs},
                {vc: vc_free[vc][chain] for vc in vcs},
            )
        self.opp_sched = {c: TopologyScheduler(build_view(self.levels[c]), self.level_leaves[c], False)
                          for c in self.chains}
        self.pinned_physical = pinned_physical

    def _start_up(self, ready_nodes: Collection[str] | None, not_ready: frozenset[str]) -> None:
        """docs/hived-config-and-cells.md#the-state-after-start-up: pinned cells taken, every node marked bad, then
        reported healthy in `reported_nodes` order."""
        for vc in self.config.virtual_clusters:
            for pid in vc.pinned_cells:
                virtual = self.vc_pinned[vc.name][pid]
                physical = self.pinned_physical[pid]
                physical.virtual, virtual.physical = virtual, physical
                self.chain_state[physical.chain].take(physical, vc.name, False)
        for node in self._nodes_in_order(self.chains):
            self.set_node_bad(node)
        self.reported_nodes = self._nodes_in_order(sorted(self.chains))
        ready = None if ready_nodes is None else set(ready_nodes)
        for node in self.reported_nodes:
            if (ready is None or node in ready) and node not in not_ready:
                self.set_node_healthy(node)

    def _nodes_in_order(self, chains: list[str]) -> list[str]:
        seen: dict[str, None] = {}
        for chain in chains:
            for top in self.tops[chain]:
                for node in top.nodes:
                    seen.setdefault(node, None)
        return list(seen)

    # -- node health (docs/hived-config-and-cells.md#bad-nodes-and-doomed-cells) ---------------------------------------
    def set_node_bad(self, node: str) -> None:
        if node in self.bad_nodes:
            return
        self.bad_nodes.add(node)
        for chain, leaves in self._leaves_of_node(node):
            for leaf in leaves:
                self.chain_state[chain].mark_bad(leaf)

    def set_node_healthy(self, node: str) -> None:
        if node not in self.bad_nodes:
            return
        self.bad_nodes.discard(node)
        for chain, leaves in self._leaves_of_node(node):
            for leaf in leaves:
                self.chain_state[chain].mark_healthy(leaf)

    def _leaves_of_node(self, node: str) -> list[tuple[str, list[PhysicalCell]]]:
        per_chain = self.node_leaves.get(node, {})
        return [(chain, per_chain[chain]) for chain in self.chains if chain in per_chain]

    # -- Schedule (docs/hived-config-and-cells.md#the-schedule-call) ---------------------------------------------------
    def _parse(self, pod: PodRef, spec: Mapping[str, Any] | None) -> PodSchedulingSpec:
        # the same spec object for the same pod (schedule, then add_allocated_pod) is parsed once
        cached = self._last_spec
        if cached is not None and cached[0] is spec and cached[1] == pod:
            return cached[2]
        s = parse_spec(pod, spec)
        self._last_spec = (spec, pod, s)
        return s

    def schedule(self, pod: PodRef, spec: Mapping[str, Any] | None, suggested_nodes: Collection[str],
                 phase: Phase) -> Bind | Preempt | Wait:
        """One extender call in the Filtering or Preempting phase (docs/hived-model.md, "schedule")."""
        s = self._parse(pod, spec)
        self.pending[pod.uid] = s
        suggested = suggested_nodes if isinstance(suggested_nodes, (set, frozenset)) else set(suggested_nodes)
        group = self.groups.get(s.group_name)
        if group is not None:
            if group.state == ALLOCATED:
                return self._from_allocated(group, s)
            if group.state == BEING_PREEMPTED:
                # docs/hived-config-and-cells.md#the-schedule-call step 2
                raise InternalError("assignment to entry in nil map")
            result = self._from_preempting(group, s, suggested, phase, pod)
            if result is not None:
                return result
        return self._from_new_group(s, suggested, phase, pod)

    def _from_allocated(self, group: Group, s: PodSchedulingSpec) -> Bind:
        slots = group.allocated_pods.get(s.leaf_cell_number, [])
        for slot, occupant in enumerate(slots):
            if occupant is None:
                return self._bind(group.physical, group.virtual, s.leaf_cell_number, slot, group)
        raise UserError(f"Requesting more pods than the configured number for {s.leaf_cell_number} leaf cells "
                        f"({len(slots)} pods) in affinity group {group.name}")

    def _from_preempting(self, group: Group, s: PodSchedulingSpec, suggested: Collection[str], phase: Phase,
                         pod: PodRef) -> Bind | Preempt | None:
        """None when the preemption was cancelled: the pod is then placed as a new group. The suggested list is
        checked whatever the group's ignoreK8sSuggestedNodes (docs/hived-model.md, "Cancelling a preemption")."""
        if phase == PHASE_PREEMPTING:
            for _, _, _, leaf in group.leaves():
                if leaf is not None and (not leaf.healthy or leaf.nodes[0] not in suggested):
                    self.cells.cancel_preemption(group)
                    return None
        group.preempting_pods[pod.uid] = pod
        victims, _ = self._collect_victims(group.physical)
        if victims:
            return Preempt(victims)
        return self._bind(group.physical, group.virtual, s.leaf_cell_number, 0, group)

    def _from_new_group(self, s: PodSchedulingSpec, suggested: Collection[str], phase: Phase,
                        pod: PodRef) -> Bind | Preempt | Wait:
        """Only the Preempting phase changes state: overlapping preemptors cancelled, a preemption created; the
        Filtering phase reports victims without recording anything (docs/hived-model.md, "schedule")."""
        physical, virtual, reason = self._schedule_new(s, suggested, pod)
        if physical is None:
            return Wait(reason)
        victims, overlapping = self._collect_victims(physical)
        if phase == PHASE_PREEMPTING:
            for preemptor in overlapping:
                self.cells.cancel_preemption(preemptor)
            if victims:
                self.cells.create_preemption(s, physical, virtual, pod)
        if victims:
            return Preempt(victims)
        return self._bind(physical, virtual, s.leaf_cell_number, 0)

    def _collect_victims(self, physical: Mapping[int, Sequence[Sequence[PhysicalCell | None]]]
                         ) -> tuple[dict[str, tuple[PodRef, ...]], list[Group]]:
        victims: dict[str, dict[str, PodRef]] = {}
        overlapping: dict[int, Group] = {}
        for n in sorted(physical):
            for pod_leaves in physical[n]:
                for leaf in pod_leaves:
                    if leaf is None:
                        continue
                    if leaf.state in (USED, RESERVING) and leaf.using_group is not None:
                        # the node each pod object in the group's slots was bound to, deleted or not
                        # (docs/hived-model.md, "What a deleted pod leaves in its group")
                        for pods in leaf.using_group.allocated_pods.values():
                            for victim in pods:
                                if victim is not None:
                                    victims.setdefault(victim.node, {})[victim.pod.uid] = victim.pod
                    if leaf.state in (RESERVING, RESERVED) and leaf.reserving_group is not None:
                        overlapping.setdefault(id(leaf.reserving_group), leaf.reserving_group)
        return {node: tuple(pods.values()) for node, pods in victims.items()}, list(overlapping.values())

    def _schedule_new(self, s: PodSchedulingSpec, suggested: Collection[str], pod: PodRef) -> _Found:
        vc = s.virtual_cluster
        if vc not in self.vc_preassigned:
            raise UserError(f"[{pod.key}]: VC {vc} does not exists!")
        if s.pinned_cell_id:
            if s.pinned_cell_id not in self.vc_pinned[vc]:
                raise UserError(f"[{pod.key}]: VC {vc} does not have pinned cell {s.pinned_cell_id}")
            if s.priority == OPPORTUNISTIC_PRIORITY:
                raise UserError(f"[{pod.key}]: opportunistic pod not supported to use pinned cell {s.pinned_cell_id}")
            chain = self.pinned_physical[s.pinned_cell_id].chain
            return self._handle(s, chain, suggested)
        if s.leaf_cell_type:
            if s.leaf_cell_type not in self.type_chains:
                raise UserError(f"[{pod.key}]: Pod requesting leaf cell type {s.leaf_cell_type} "
                                "which the whole cluster does not have")
            return self._for_type(s, s.leaf_cell_type, suggested, pod, True)
        # untyped spec: HiveD tries leaf types in random order; the model uses first appearance in the config
        # (docs/hived-model.md, "Which chains are tried")
        last_reason = ""
        for leaf_type in self.type_chains:
            physical, virtual, reason = self._for_type(s, leaf_type, suggested, pod, False)
            if physical is not None:
                return physical, virtual, ""
            last_reason = reason or last_reason
        return None, None, last_reason

    def _for_type(self, s: PodSchedulingSpec, leaf_type: str, suggested: Collection[str], pod: PodRef,
                  specified: bool) -> _Found:
        vc_has = False
        reason = ""
        for chain in self.type_chains[leaf_type]:
            if s.priority < MIN_GUARANTEED_PRIORITY or chain in self.vc_preassigned[s.virtual_cluster]:
                vc_has = True
                physical, virtual, reason = self._handle(s, chain, suggested)
                if physical is not None:
                    return physical, virtual, ""
        if specified and s.priority >= MIN_GUARANTEED_PRIORITY and not vc_has:
            raise UserError(f"[{pod.key}]: Pod requesting leaf cell type {leaf_type} "
                            f"which VC {s.virtual_cluster} does not have")
        return None, None, reason

    def _handle(self, s: PodSchedulingSpec, chain: str, suggested: Collection[str]) -> _Found:
        honoured = None if s.ignore_k8s_suggested_nodes else suggested
        if s.priority >= MIN_GUARANTEED_PRIORITY:
            return self._schedule_guaranteed(s, chain, honoured)
        placement, reason = self.opp_sched[chain].schedule(s.pod_numbers, OPPORTUNISTIC_PRIORITY, honoured)
        if placement is None:
            return None, None, messages.in_physical_cluster(reason)
        return placement, None, ""

    def _schedule_guaranteed(self, s: PodSchedulingSpec, chain: str, suggested: Collection[str] | None
                             ) -> _Found:
        vc = s.virtual_cluster
        if s.pinned_cell_id:
            scheduler = self.pinned_sched[vc].get(s.pinned_cell_id)
        else:
            scheduler = self.vc_sched[vc].get(chain)
        placement, reason = (None, "") if scheduler is None else scheduler.schedule(
            s.pod_numbers, s.priority, suggested)
        if placement is None:
            return None, None, messages.in_vc(reason, vc)
        numbers = sorted(placement)
        lazy_groups = self.cells.try_lazy_preempt(placement, numbers, s.group_name)
        leaves = [leaf for n in numbers for pod in placement[n] for leaf in pod]
        state = self.chain_state[chain]
        bindings = map_to_physical(leaves, state.free, state.all_vc_free, suggested)
        if bindings is not None:
            physical = {n: [[bindings[id(leaf)] for leaf in pod] for pod in placement[n]] for n in numbers}
            return physical, placement, ""
        for group, virtual in lazy_groups:
            self.cells.revert_lazy_preempt(group, virtual)
        return None, None, messages.mapping_needs_bad_node(suggested is not None, _format_placement(leaves))

    def _bind(self, physical: Mapping[int, Sequence[Sequence[PhysicalCell | None]]],
              virtual: Mapping[int, Sequence[Sequence[VirtualCell | None]]] | None, number: int, slot: int,
              group: Group | None = None) -> Bind:
        """The bind decision for pod `slot` of member `number`, with the whole group's bind info
        (docs/hived-config-and-cells.md#bind-info-and-the-pod-annotations)."""
        if group is not None and group.bind_cache and group.bind_cache[0] is virtual:
            members = group.bind_cache[1]
        else:
            members = tuple(
                MemberBindInfo(tuple(self._pod_placement(pod_leaves, virtual[n][i] if virtual else None)
                                     for i, pod_leaves in enumerate(physical[n])))
                for n in sorted(physical)
            )
            if group is not None:
                group.bind_cache = (virtual, members)
        node, chain = "", ""
        isolation: tuple[int, ...] = ()
        for n, member in zip(sorted(physical), members, strict=True):
            if n == number:
                placement = member.pod_placements[slot]
                node, isolation = placement.physical_node, placement.physical_leaf_cell_indices
                first = physical[n][slot][0]
                chain = first.chain if first is not None else ""
        info = BindInfo(node, isolation, chain, members)
        return Bind(node, isolation, info)

    def _pod_placement(self, leaves: Sequence[PhysicalCell | None], vleaves: Sequence[VirtualCell | None] | None
                       ) -> PodPlacement:
        present = [leaf for leaf in leaves if leaf is not None]
        node = present[0].nodes[0] if present else ""
        types = []
        for i in range(len(leaves)):
            v = vleaves[i] if vleaves else None
            types.append(v.preassigned.bind_type if v is not None else "")
        return PodPlacement(node, tuple(leaf.index for leaf in present), tuple(types))

    # -- AddAllocatedPod / deletions (docs/hived-config-and-cells.md#allocation-and-release) ---------------------------
    def add_allocated_pod(self, pod: PodRef, spec: Mapping[str, Any] | None, bind_info: BindInfo) -> None:
        """HiveD's AddAllocatedPod. The pod that creates its group takes slot 0 whatever its place in the bind
        info; a later pod takes the slot its bind info names, and one whose bind info names none is not stored
        (docs/hived-model.md, "What a deleted pod leaves in its group")."""
        s = self._parse(pod, spec)
        number = s.leaf_cell_number
        group = self.groups.get(s.group_name)
        self.allocated[pod.uid] = (s, bind_info)
        self.pending.pop(pod.uid, None)
        slot = 0
        if group is not None:
            if group.state == PREEMPTING:
                self.cells.allocate_preempting(group)
            slot = _pod_index(bind_info, number)
            if slot < 0:
                return
        else:
            group = self.cells.create_allocated(s, bind_info)
        slots = group.allocated_pods.setdefault(number, [])
        while len(slots) <= slot:
            slots.append(None)
        slots[slot] = AllocatedPod(pod, bind_info.node)

    def delete_allocated_pod(self, pod: PodRef) -> None:
        """HiveD's DeleteAllocatedPod: empties the slot the pod's bind info names, which need not be the slot
        holding the pod (docs/hived-model.md, "What a deleted pod leaves in its group")."""
        record = self.allocated.pop(pod.uid, None)
        if record is None:
            return
        s, info = record
        group = self.groups.get(s.group_name)
        if group is None:
            return
        slot = _pod_index(info, s.leaf_cell_number)
        slots = group.allocated_pods.get(s.leaf_cell_number, [])
        if slot < 0 or slot >= len(slots):
            return
        slots[slot] = None
        if group.all_pods_released():
            self.cells.delete_allocated_group(group)

    def delete_unallocated_pod(self, pod: PodRef) -> None:
        s = self.pending.pop(pod.uid, None)
        if s is None:
            return
        group = self.groups.get(s.group_name)
        if group is not None and group.state == PREEMPTING:
            group.preempting_pods.pop(pod.uid, None)
            if not group.preempting_pods:
                self.cells.cancel_preemption(group)

    # -- inspect (docs/hived-config-and-cells.md#inspect-api) ----------------------------------------------------------
    def cluster_status(self) -> dict[str, Any]:
        return inspect_views.cluster_status(self)

    def vc_status(self, vc: str) -> list[dict[str, Any]]:
        return inspect_views.vc_status(self, vc)

    def listed_vcs(self) -> list[str]:
        return inspect_views.listed_vcs(self)

    def affinity_groups(self) -> dict[str, Any]:
        return inspect_views.affinity_groups(self)

    def affinity_group(self, name: str) -> dict[str, Any]:
        return inspect_views.affinity_group(self, name)


def _pod_index(info: BindInfo, number: int) -> int:
    """HiveD's getAllocatedPodIndex: the slot on the bind info's node whose leaves hold its first leaf (-1: none)."""
    for member in info.affinity_group_bind_info:
        placements = member.pod_placements
        if not placements or len(placements[0].physical_leaf_cell_indices) != number:
            continue
        for i, p in enumerate(placements):
            if (p.physical_node == info.node and info.leaf_cell_isolation
                    and info.leaf_cell_isolation[0] in p.physical_leaf_cell_indices):
                return i
    return -1


def _format_placement(leaves: list[VirtualCell]) -> str:
    grouped: dict[str, list[str]] = {}
    for leaf in leaves:
        grouped.setdefault(leaf.preassigned.address, []).append(leaf.address)
    return json.dumps(grouped, separators=(",", ":"))
