"""A small stand-in for the HiveD model with the same interface (`cluster.hived`), for one-GPU nodes only.

It lets the simulator's Kubernetes/FrameworkController mechanics be tested on their own: VCs own whole nodes,
groups are all-or-nothing, a guaranteed group may preempt lower-priority groups on its VC's nodes, opportunistic
groups use any free node. HiveD's own decisions are tested with the real model (tests/sim/test_lab_experiments.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml


class ConfigError(Exception):
    pass


class UserError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class Bind:
    node: str
    leaf_cell_isolation: tuple[int, ...]
    bind_info: Any


@dataclass(frozen=True)
class Preempt:
    victims: dict[str, tuple[PodRef, ...]]


@dataclass(frozen=True)
class Wait:
    reason: str


def load_config(mapping: Any) -> Mapping[str, Any]:
    if not isinstance(mapping, Mapping) or "physicalCluster" not in mapping:
        raise ConfigError("physicalCluster is missing")
    return mapping


def dump_bind_info(info: Any) -> str:
    return yaml.safe_dump(info, sort_keys=False)


@dataclass
class _Group:
    name: str
    priority: int
    vc: str
    nodes: list[str]
    pods: dict[str, PodRef] = field(default_factory=dict)  # uid -> ref
    placed: dict[str, str] = field(default_factory=dict)  # uid -> node


class HivedScheduler:
    def __init__(self, config: Mapping[str, Any], clock: Any = None) -> None:
        chains: dict[str, list[str]] = {}
        for cell in config["physicalCluster"]["physicalCells"]:
            chains.setdefault(cell["cellType"], []).extend(c["cellAddress"] for c in cell["cellChildren"])
        self.nodes = [n for nodes in chains.values() for n in nodes]
        self.vc_nodes: dict[str, list[str]] = {}
        taken: set[str] = set()
        for vc, spec in config["virtualClusters"].items():
            owned: list[str] = []
            for entry in spec["virtualCells"]:
                free = [n for n in chains[entry["cellType"].split(".")[0]] if n not in taken]
                owned += free[: entry["cellNumber"]]
                taken.update(free[: entry["cellNumber"]])
            self.vc_nodes[vc] = owned
        self.groups: dict[str, _Group] = {}
        self.calls: list[tuple[str, str]] = []  # (pod name, phase) of every schedule call

    @property
    def reported_nodes(self) -> list[str]:
        return list(self.nodes)

    def _owner(self, node: str) -> _Group | None:
        return next((g for g in self.groups.values() if node in g.nodes), None)

    def schedule(self, pod: PodRef, spec: Mapping[str, Any], suggested: Sequence[str], phase: str) -> Any:
        self.calls.append((pod.name, phase))
        vc = spec["virtualCluster"]
        if vc not in self.vc_nodes:
            raise UserError(f"VC {vc} does not exists!")
        group_spec = spec.get("affinityGroup")
        name = group_spec["name"] if group_spec else f"{pod.namespace}/{pod.name}"
        count = sum(m["podNumber"] for m in group_spec["members"]) if group_spec else 1
        existing = self.groups.get(name)
        if existing is not None:
            free = [n for n in existing.nodes if n not in existing.placed.values()]
            return Bind(free[0], (0,), {"group": name, "node": free[0], "nodes": existing.nodes})
        priority = int(spec.get("priority") or 0)
        candidates = self.nodes if priority == -1 else self.vc_nodes[vc]
        free = [n for n in candidates if self._owner(n) is None]
        if len(free) >= count:
            chosen = free[:count]
            return Bind(chosen[0], (0,), {"group": name, "node": chosen[0], "nodes": chosen, "priority": priority})
        where = "physical cluster" if priority == -1 else f"VC {vc}"
        preemptible = [n for n in candidates if (g := self._owner(n)) is not None and g.priority < priority]
        if priority == -1 or len(free) + len(preemptible) < count:
            return Wait(f"insufficient capacity when scheduling in {where}")
        victims: dict[str, list[PodRef]] = {}
        for node in preemptible[: count - len(free)]:
            group = self._owner(node)
            assert group is not None
            for uid, ref in group.pods.items():
                victims.setdefault(group.placed[uid], []).append(ref)
        return Preempt({n: tuple(refs) for n, refs in victims.items()})

    def add_allocated_pod(self, pod: PodRef, spec: Mapping[str, Any], bind_info: Any) -> None:
        name = bind_info["group"]
        group = self.groups.get(name)
        if group is None:
            group = _Group(name, int(spec.get("priority") or 0), spec["virtualCluster"], list(bind_info["nodes"]))
            self.groups[name] = group
        group.pods[pod.uid] = pod
        group.placed[pod.uid] = bind_info["node"]

    def delete_allocated_pod(self, pod: PodRef) -> None:
        for name, group in list(self.groups.items()):
            if pod.uid in group.pods:
                del group.pods[pod.uid]
                if not group.pods:
                    del self.groups[name]
                return
        raise AssertionError(f"delete of a pod HiveD does not hold: {pod}")

    def delete_unallocated_pod(self, pod: PodRef) -> None:
        return None

    def vc_status(self, vc: str) -> list[dict[str, Any]]:
        if vc not in self.vc_nodes:
            raise UserError(f"VC {vc} not found")
        return [{"leafCellType": "GPU", "cellPriority": -2, "cellChildren": []} for _ in self.vc_nodes[vc]]
