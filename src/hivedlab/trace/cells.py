"""Each VC's HiveD cells, derived from its share on each server type, and the HiveD config that holds them.

On each server type the type's GPUs are split between the VCs by largest remainder on their shares; a VC's GPUs of
a type become whole-server cells, then the largest cells below a server that the rest needs (halves, quarters, ...
of a server whose size is a power of two; single GPUs otherwise). The same cells make the quota of the quota policy
(their GPU count) and the private cluster of each VC (one small server per cell).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hivedlab.trace.workload import ServerType, largest_remainder


@dataclass(frozen=True)
class VcCells:
    """vc -> type index -> cell sizes in GPUs, largest first."""

    cells: Mapping[str, Mapping[int, tuple[int, ...]]]

    def gpus(self, vc: str, t: int | None = None) -> int:
        per_type = self.cells.get(vc, {})
        if t is not None:
            return sum(per_type.get(t, ()))
        return sum(sum(sizes) for sizes in per_type.values())


def level_sizes(node_gpus: int) -> list[int]:
    """Cell sizes of a server type's chain, leaf first: powers of two up to the server when its size is one."""
    if node_gpus & (node_gpus - 1) == 0:
        sizes = [1]
        while sizes[-1] < node_gpus:
            sizes.append(sizes[-1] * 2)
        return sizes
    return [1, node_gpus]


def split_into_cells(gpus: int, node_gpus: int) -> tuple[int, ...]:
    sizes = level_sizes(node_gpus)
    out = [node_gpus] * (gpus // node_gpus)
    rest = gpus % node_gpus
    for size in reversed(sizes[:-1]):
        while rest >= size:
            out.append(size)
            rest -= size
    return tuple(out)


def derive_cells(types: Sequence[ServerType], shares: Mapping[str, float]) -> VcCells:
    cells: dict[str, dict[int, tuple[int, ...]]] = {vc: {} for vc in shares}
    for t, st in enumerate(types):
        split = largest_remainder(st.gpus * st.count, shares)
        for vc, gpus in split.items():
            if gpus:
                cells[vc][t] = split_into_cells(gpus, st.gpus)
    return VcCells(cells)


def leaf_type(st: ServerType) -> str:
    return f"{st.name}-GPU"


def node_type(st: ServerType) -> str:
    return f"{st.name}-NODE"


def cell_type(st: ServerType, size: int) -> str:
    if size == st.gpus:
        return node_type(st)
    return leaf_type(st) if size == 1 else f"{st.name}-{size}GPU"


def hived_config(types: Sequence[ServerType], server_names: Sequence[str], server_types: Sequence[int],
                 cells: VcCells) -> dict[str, Any]:
    """The HiveD config (as parsed YAML) of the cluster: one chain per server type, its servers as top cells."""
    cell_types: dict[str, Any] = {}
    for st in types:
        levels = level_sizes(st.gpus)
        child = leaf_type(st)
        for lower, size in zip(levels, levels[1:], strict=False):
            name = cell_type(st, size)
            cell_types[name] = {"childCellType": child, "childCellNumber": size // lower,
                                "isNodeLevel": size == st.gpus}
            child = name
        if st.gpus == 1:
            cell_types[node_type(st)] = {"childCellType": child, "childCellNumber": 1, "isNodeLevel": True}
    physical = [{"cellType": node_type(types[t]), "cellAddress": name}
                for name, t in zip(server_names, server_types, strict=True)]
    vcs: dict[str, Any] = {}
    for vc, per_type in cells.cells.items():
        entries = []
        for t, sizes in sorted(per_type.items()):
            st = types[t]
            for size in sorted(set(sizes), reverse=True):
                name = cell_type(st, size)
                path = node_type(st) if size == st.gpus else f"{node_type(st)}.{name}"
                entries.append({"cellType": path, "cellNumber": sizes.count(size)})
        vcs[vc] = {"virtualCells": entries}
    return {"physicalCluster": {"cellTypes": cell_types, "physicalCells": physical}, "virtualClusters": vcs}
