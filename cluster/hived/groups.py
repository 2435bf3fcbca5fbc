"""Affinity groups (gangs) as HiveD keeps them (docs/hived-config-and-cells.md#the-pod-scheduling-spec, docs/hived-config-and-cells.md#affinity-group-states)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hivedlab.cluster.hived.cell import PhysicalCell, VirtualCell
from hivedlab.cluster.hived.types import MemberBindInfo, PodRef, PodSchedulingSpec

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
        self.allocated_pods: dict[int, list[PodRef | None]] = {
            n: [None] * count for n, count in self.pod_numbers.items()
        }
        self.physical: GroupPhysical = {}
        self.virtual: GroupVirtual = {}
        self.preempting_pods: dict[str, PodRef] = {}
        self.lazy_status: dict[str, str] | None = None
        self.chain = ""
        self.bind_cache: tuple[()] | tuple[Mapping[int, Sequence[Sequence[VirtualCell | None]]] | None,
                                           tuple[MemberBindInfo, ...]] = ()  # (virtual placement it was built from, members of the bind info)

    def leaves(self) -> list[tuple[int, int, int, PhysicalCell | None]]:
        """(leafCellNumber, slot, position, physical leaf), members ascending (docs/hived-config-and-cells.md#priorities-and-preemption recommended order)."""
        physical: Mapping[int, Sequence[Sequence[PhysicalCell | None]]] = self.physical
        return [(n, s, i, leaf) for n in sorted(physical) for s, pod in enumerate(physical[n])
                for i, leaf in enumerate(pod)]

    def all_pods_released(self) -> bool:
        return all(p is None for pods in self.allocated_pods.values() for p in pods)
