"""Facts read off Kubernetes objects and HiveD configs: HiveD's bind annotations and wait reasons
(spec/hived.md §4.1–§4.2) and which nodes each VC owns. Pure functions, no state."""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml

LEAF_CELL_ISOLATION = "hivedscheduler.microsoft.com/pod-leaf-cell-isolation"
LEAF_CELL_ISOLATION_OLD = "hivedscheduler.microsoft.com/pod-gpu-isolation"
BIND_INFO = "hivedscheduler.microsoft.com/pod-bind-info"
WAIT_PREFIX = "Pod is waiting for preemptible or free resource to appear:"
_NEXT_REASON = re.compile(r",\s+\d+ ")


def hived_reason(message: str) -> str:
    """HiveD's wait reason out of a FailedScheduling message (hived.md §4.2), else the message itself.

    The default scheduler aggregates reasons as `0/2 nodes are available: 2 <reason>, 1 <other reason>.`
    """
    if WAIT_PREFIX not in message:
        return message.strip()
    rest = message.split(WAIT_PREFIX, 1)[1].strip()
    rest = _NEXT_REASON.split(rest, maxsplit=1)[0].strip()
    return rest[:-1] if rest.endswith(".") else rest


def _nodes_of(cell: dict[str, Any], cell_types: dict[str, Any], cell_type: str | None) -> list[str]:
    kind = cell.get("cellType", cell_type)
    spec = cell_types.get(kind) if isinstance(kind, str) else None
    if spec is None or spec.get("isNodeLevel"):
        address = cell.get("cellAddress")
        return [str(address)] if address is not None else []
    nodes: list[str] = []
    for child in cell.get("cellChildren") or []:
        if isinstance(child, dict):
            nodes += _nodes_of(child, cell_types, spec.get("childCellType"))
    return nodes


def _parse_vc_nodes(text: str) -> dict[str, tuple[str, ...]]:
    """Each VC's nodes in a HiveD config: the nodes of the physical chains (or pinned cells) it has cells in.

    Exact for the lab's configs; for a chain shared by VCs every VC gets the whole chain's nodes.
    Returns {} when the text is not a readable config.
    """
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return {}
    if not isinstance(data, dict):
        return {}
    physical = data.get("physicalCluster") or {}
    cell_types = physical.get("cellTypes") or {}
    chains: dict[str, list[str]] = {}
    pinned: dict[str, list[str]] = {}
    for cell in physical.get("physicalCells") or []:
        if not isinstance(cell, dict):
            continue
        nodes = _nodes_of(cell, cell_types, None)
        chains.setdefault(str(cell.get("cellType")), []).extend(nodes)
        if cell.get("pinnedCellId"):
            pinned[str(cell["pinnedCellId"])] = nodes
    result: dict[str, tuple[str, ...]] = {}
    for vc, body in (data.get("virtualClusters") or {}).items():
        nodes: list[str] = []
        for cell in (body or {}).get("virtualCells") or []:
            chain = str(cell.get("cellType", "")).split(".", 1)[0]
            nodes += chains.get(chain, [])
        for cell in (body or {}).get("pinnedCells") or []:
            nodes += pinned.get(str(cell.get("pinnedCellId")), [])
        result[str(vc)] = tuple(dict.fromkeys(nodes))
    return result


@functools.lru_cache(maxsize=64)  # a batch of logs repeats the same two configs (grading reads hundreds)
def _vc_nodes_cached(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(_parse_vc_nodes(text).items())


def vc_nodes_from_config(text: str) -> dict[str, tuple[str, ...]]:
    """Each VC's nodes in a HiveD config (`_parse_vc_nodes`), parsed once per distinct text; a fresh dict each call."""
    return dict(_vc_nodes_cached(text))


def bind_gpus(annotations: dict[str, Any]) -> tuple[int, ...]:
    text = annotations.get(LEAF_CELL_ISOLATION) or annotations.get(LEAF_CELL_ISOLATION_OLD)
    if isinstance(text, str) and text.strip():
        try:
            return tuple(int(part) for part in text.split(",") if part.strip())
        except ValueError:
            return ()
    info = annotations.get(BIND_INFO)
    if isinstance(info, str):
        try:
            data = yaml.safe_load(info)
        except yaml.YAMLError:
            return ()
        if isinstance(data, dict) and isinstance(data.get("leafCellIsolation"), list):
            return tuple(int(i) for i in data["leafCellIsolation"] if isinstance(i, int))
    return ()


def bind_node(annotations: dict[str, Any]) -> str | None:
    info = annotations.get(BIND_INFO)
    if isinstance(info, str):
        try:
            data = yaml.safe_load(info)
        except yaml.YAMLError:
            return None
        if isinstance(data, dict) and data.get("node"):
            return str(data["node"])
    return None
