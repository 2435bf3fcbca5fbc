"""HiveD v0.3.4's config: defaults, address inference and every load-time rule
(docs/hived-config-and-cells.md#the-config).

`load_config` takes the parsed YAML mapping and returns a frozen `HivedConfig`, or raises `ConfigError` with HiveD's
panic message and the JSON pointer of the offending key. It also owns the node-cell rule.

Size: over 400 lines because the rules depend on each other in the order HiveD applies them (`pkg/api/config.go`,
`pkg/algorithm/config.go`), and are kept in that order in one file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Go's strconv.ParseInt(s, 10, 32) range
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
NIL_POINTER = "runtime error: invalid memory address or nil pointer dereference"


class ConfigError(Exception):
    """HiveD refuses the config at start-up: `message` is its panic gist, `pointer` the JSON pointer ("" if none)."""

    def __init__(self, message: str, pointer: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.pointer = pointer

    def __str__(self) -> str:
        return f"{self.message} (at {self.pointer})" if self.pointer else self.message


@dataclass(frozen=True)
class CellTypeInfo:
    """A cell type with what HiveD derives from its chain below it (docs/hived-config-and-cells.md#cell-types)."""

    name: str
    level: int
    child_type: str | None  # None for a leaf type
    child_number: int
    is_node_level: bool  # the flag as written
    leaf_type: str
    leaf_cell_number: int
    at_or_above_node: bool
    multi_node: bool


def is_node_type(info: CellTypeInfo) -> bool:
    """Whether a cell of this type is one whole node: at or above node level and within one node (HiveD's
    `pkg/algorithm/config.go`; docs/hived-config-and-cells.md#cell-types). The one owner of this rule."""
    return info.at_or_above_node and not info.multi_node


def node_name(address: str) -> str:
    """The node a node cell names: its address's last part (HiveD addresses a node cell below a pool cell as
    `<index>/<node>`, pkg/api/config.go inferPhysicalCellSpec)."""
    return address.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class PhysicalCellSpec:
    """A physical cell after defaulting and address inference (docs/hived-config-and-cells.md#physical-cells)."""

    cell_type: str
    address: str
    pinned_id: str
    children: tuple[PhysicalCellSpec, ...]
    pointer: str


@dataclass(frozen=True)
class VirtualCellSpec:
    """One `virtualCells` entry: `cell_number` preassigned cells of `cell_type` in `chain`
    (docs/hived-config-and-cells.md#virtual-clusters)."""

    chain: str
    cell_type: str
    cell_number: int
    pointer: str


@dataclass(frozen=True)
class VirtualClusterSpec:
    name: str
    virtual_cells: tuple[VirtualCellSpec, ...]
    pinned_cells: tuple[str, ...]


@dataclass(frozen=True)
class HivedConfig:
    """A loaded HiveD config. `chains` = top-level cell types in first-appearance order
    (docs/hived-config-and-cells.md#the-state-after-start-up)."""

    kube_api_server_address: str
    kube_config_file_path: str
    web_server_address: str
    force_pod_bind_threshold: int
    waiting_pod_scheduling_block_millisec: int
    cell_types: Mapping[str, CellTypeInfo]
    physical_cells: tuple[PhysicalCellSpec, ...]
    chains: tuple[str, ...]
    virtual_clusters: tuple[VirtualClusterSpec, ...]
    # id -> cell (a duplicate id overwrites, docs/hived-config-and-cells.md#physical-cells)
    pinned_cells: Mapping[str, PhysicalCellSpec]


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _unmarshal_error(value: Any, go_type: str, pointer: str) -> ConfigError:
    tag = {bool: "!!bool", int: "!!int", float: "!!float", str: "!!str", list: "!!seq", dict: "!!map"}.get(
        type(value), "!!str"
    )
    return ConfigError(f"Failed to unmarshal YAML: cannot unmarshal {tag} `{value}` into {go_type}", pointer)


def _str(value: Any, pointer: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise _unmarshal_error(value, "string", pointer)


def _int(value: Any, pointer: str, go_type: str = "int32") -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _unmarshal_error(value, go_type, pointer)
    if isinstance(value, float):
        if not value.is_integer():
            raise _unmarshal_error(value, go_type, pointer)
        value = int(value)
    if go_type == "int32" and not _INT32_MIN <= value <= _INT32_MAX:
        raise _unmarshal_error(value, go_type, pointer)
    number: int = value  # an int by now: bools and non-numbers raised, integral floats converted
    return number


def _bool(value: Any, pointer: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _unmarshal_error(value, "bool", pointer)
    return value


def _map(value: Any, pointer: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _unmarshal_error(value, "map", pointer)
    return value


def _list(value: Any, pointer: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _unmarshal_error(value, "slice", pointer)
    return value


def parse_int32(text: str) -> int:
    """Go's strconv.ParseInt(text, 10, 32) with HiveD's panic text
    (docs/hived-config-and-cells.md#physical-cells leaf index)."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise ConfigError(f'invalid literal for int32: strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ConfigError(f'invalid literal for int32: strconv.ParseInt: parsing "{text}": value out of range')
    return value


def _raw_cell_types(pc: Mapping[str, Any]) -> dict[str, tuple[str, int, bool]]:
    raw: dict[str, tuple[str, int, bool]] = {}
    types = _map(pc.get("cellTypes"), "/physicalCluster/cellTypes")
    for name, spec in types.items():
        ptr = f"/physicalCluster/cellTypes/{_esc(str(name))}"
        spec = _map(spec, ptr)
        raw[str(name)] = (
            _str(spec.get("childCellType"), ptr + "/childCellType"),
            _int(spec.get("childCellNumber"), ptr + "/childCellNumber"),
            _bool(spec.get("isNodeLevel"), ptr + "/isNodeLevel"),
        )
    return raw


def _derive_types(raw: dict[str, tuple[str, int, bool]]) -> dict[str, CellTypeInfo]:
    """Level, leaf type, leaf count and node flags of every type, leaf types implicit
    (docs/hived-config-and-cells.md#cell-types)."""
    infos: dict[str, CellTypeInfo] = {}

    def derive(name: str, trail: tuple[str, ...]) -> CellTypeInfo:
        if name in infos:
            return infos[name]
        if name not in raw:
            info = CellTypeInfo(name, 1, None, 0, False, name, 1, False, False)
        else:
            if name in trail:
                raise ConfigError(
                    f"cell type cycle: {' -> '.join((*trail, name))}", f"/physicalCluster/cellTypes/{_esc(name)}"
                )
            child_name, number, node_flag = raw[name]
            child = derive(child_name, (*trail, name))
            info = CellTypeInfo(
                name=name,
                level=child.level + 1,
                child_type=child_name,
                child_number=number,
                is_node_level=node_flag,
                leaf_type=child.leaf_type,
                leaf_cell_number=child.leaf_cell_number * number,
                at_or_above_node=node_flag or child.at_or_above_node,
                multi_node=child.at_or_above_node,
            )
        infos[name] = info
        return info

    for name in raw:
        derive(name, ())
    return infos


def _infer_cell(
    spec: Any, cell_type: str, default_index: int, parent_address: str, types: Mapping[str, CellTypeInfo], ptr: str
) -> PhysicalCellSpec:
    """Defaulting and address inference of one physical cell and its subtree
    (docs/hived-config-and-cells.md#physical-cells)."""
    spec = _map(spec, ptr)
    own = _str(spec.get("cellAddress"), ptr + "/cellAddress") or str(default_index)
    address = f"{parent_address}/{own}" if parent_address else own
    pinned = _str(spec.get("pinnedCellId"), ptr + "/pinnedCellId")
    info = types.get(cell_type)
    if info is None or info.child_type is None:
        return PhysicalCellSpec(cell_type, address, pinned, (), ptr)
    given = _list(spec.get("cellChildren"), ptr + "/cellChildren")
    children_specs: list[Any] = given if given else [{} for _ in range(max(info.child_number, 0))]
    # docs/hived-config-and-cells.md#physical-cells: indices restart below a node-level cell
    base = 0 if info.is_node_level else default_index
    children = tuple(
        _infer_cell(
            child, info.child_type, base * info.child_number + i, address, types, f"{ptr}/cellChildren/{i}"
        )
        for i, child in enumerate(children_specs)
    )
    return PhysicalCellSpec(cell_type, address, pinned, children, ptr)


def _check_leaves(cell: PhysicalCellSpec, types: Mapping[str, CellTypeInfo]) -> None:
    info = types[cell.cell_type]
    if info.child_type is None:
        try:
            parse_int32(cell.address.rsplit("/", 1)[-1])
        except ConfigError as exc:
            raise ConfigError(exc.message, cell.pointer + "/cellAddress") from None
        return
    for child in cell.children:
        _check_leaves(child, types)


def _collect_pinned(cell: PhysicalCellSpec, out: dict[str, PhysicalCellSpec]) -> None:
    if cell.pinned_id:
        out[cell.pinned_id] = cell
    for child in cell.children:
        _collect_pinned(child, out)


def _virtual_clusters(
    vcs_raw: Mapping[str, Any], types: Mapping[str, CellTypeInfo], pinned: Mapping[str, PhysicalCellSpec]
) -> tuple[VirtualClusterSpec, ...]:
    vcs: list[VirtualClusterSpec] = []
    for vc_name, vc_spec in vcs_raw.items():
        ptr = f"/virtualClusters/{_esc(str(vc_name))}"
        vc_spec = _map(vc_spec, ptr)
        cells: list[VirtualCellSpec] = []
        for i, entry in enumerate(_list(vc_spec.get("virtualCells"), ptr + "/virtualCells")):
            eptr = f"{ptr}/virtualCells/{i}"
            entry = _map(entry, eptr)
            path = _str(entry.get("cellType"), eptr + "/cellType")
            number = _int(entry.get("cellNumber"), eptr + "/cellNumber")
            segments = path.split(".")
            # docs/hived-config-and-cells.md#load-time-rules-and-errors: HiveD dereferences a nil cell type
            if segments[-1] not in types:
                raise ConfigError(NIL_POINTER, eptr + "/cellType")
            cells.append(VirtualCellSpec(segments[0], segments[-1], number, eptr))
        pins: list[str] = []
        for i, entry in enumerate(_list(vc_spec.get("pinnedCells"), ptr + "/pinnedCells")):
            eptr = f"{ptr}/pinnedCells/{i}"
            pid = _str(_map(entry, eptr).get("pinnedCellId"), eptr + "/pinnedCellId")
            if pid not in pinned:
                raise ConfigError(f"pinned cell not found in physicalCells: VC: {vc_name}, ID: {pid}", eptr)
            pins.append(pid)
        vcs.append(VirtualClusterSpec(str(vc_name), tuple(cells), tuple(pins)))
    return tuple(vcs)


def _level_cells(cells: tuple[PhysicalCellSpec, ...], level: int, types: Mapping[str, CellTypeInfo]
                 ) -> list[PhysicalCellSpec]:
    out: list[PhysicalCellSpec] = []

    def walk(cell: PhysicalCellSpec) -> None:
        lv = types[cell.cell_type].level
        if lv == level:
            out.append(cell)
        elif lv > level:
            for child in cell.children:
                walk(child)

    for cell in cells:
        walk(cell)
    return out


def _validate_assignment(config: HivedConfig) -> None:
    """HiveD's validateInitialAssignment (docs/hived-config-and-cells.md#load-time-rules-and-errors): per chain, top
    level down, pinned cells included."""
    types = config.cell_types
    quota: dict[str, dict[int, int]] = {}
    pointers: dict[str, str] = {}
    for vc in config.virtual_clusters:
        for vcell in vc.virtual_cells:
            per_chain = quota.setdefault(vcell.chain, {})
            level = types[vcell.cell_type].level
            per_chain[level] = per_chain.get(level, 0) + vcell.cell_number
            pointers.setdefault(vcell.chain, vcell.pointer)
        for pid in vc.pinned_cells:
            cell = config.pinned_cells[pid]
            chain = _chain_of(config, cell)
            per_chain = quota.setdefault(chain, {})
            level = types[cell.cell_type].level
            per_chain[level] = per_chain.get(level, 0) + 1
            pointers.setdefault(chain, f"/virtualClusters/{_esc(vc.name)}/pinnedCells")
    for chain, chain_quota in quota.items():
        if chain not in config.chains:
            raise ConfigError(
                f"Illegal initial VC assignment: Chain {chain} does not exists in physical cluster", pointers[chain]
            )
        tops = tuple(c for c in config.physical_cells if c.cell_type == chain)
        top = types[chain].level
        available = len(tops)
        for level in range(top, 0, -1):
            need = chain_quota.get(level, 0)
            left = available - need
            if left < 0:
                raise ConfigError(
                    f"Illegal initial VC assignment: Insufficient physical cells at chain {chain} level {level}: "
                    f"{need} needed, {available} available",
                    pointers[chain],
                )
            if level > 1:
                level_cells = _level_cells(tops, level, types)
                available = left * (len(level_cells[0].children) if level_cells else 0)


def _chain_of(config: HivedConfig, cell: PhysicalCellSpec) -> str:
    for top in config.physical_cells:
        if cell.address == top.address or cell.address.startswith(top.address + "/"):
            if _contains(top, cell):
                return top.cell_type
    return ""


def _contains(root: PhysicalCellSpec, cell: PhysicalCellSpec) -> bool:
    if root is cell:
        return True
    return any(_contains(child, cell) for child in root.children)


def load_config(data: Mapping[str, Any]) -> HivedConfig:
    """Apply HiveD's defaults and address inference and every load-time rule of
    docs/hived-config-and-cells.md#load-time-rules-and-errors."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise _unmarshal_error(data, "internal.Config", "")
    pc = _map(data.get("physicalCluster"), "/physicalCluster")
    types = _derive_types(_raw_cell_types(pc))
    tops: list[PhysicalCellSpec] = []
    chains: list[str] = []
    for i, raw_cell in enumerate(_list(pc.get("physicalCells"), "/physicalCluster/physicalCells")):
        ptr = f"/physicalCluster/physicalCells/{i}"
        cell_type = _str(_map(raw_cell, ptr).get("cellType"), ptr + "/cellType")
        info = types.get(cell_type)
        if info is None or info.child_type is None:
            raise ConfigError(f"physicalCells contains unknown cellType: {cell_type}", ptr + "/cellType")
        if not info.at_or_above_node:
            raise ConfigError(f"top cell must be node-level or above: {cell_type}", ptr + "/cellType")
        cell = _infer_cell(raw_cell, cell_type, i, "", types, ptr)
        _check_leaves(cell, types)
        tops.append(cell)
        if cell_type not in chains:
            chains.append(cell_type)
    pinned: dict[str, PhysicalCellSpec] = {}
    for cell in tops:
        _collect_pinned(cell, pinned)
    vcs = _virtual_clusters(_map(data.get("virtualClusters"), "/virtualClusters"), types, pinned)
    config = HivedConfig(
        kube_api_server_address=_str(data.get("kubeApiServerAddress"), "/kubeApiServerAddress"),
        kube_config_file_path=_str(data.get("kubeConfigFilePath"), "/kubeConfigFilePath"),
        web_server_address=_str(data.get("webServerAddress"), "/webServerAddress") or ":9096",
        force_pod_bind_threshold=_int(data.get("forcePodBindThreshold", 3), "/forcePodBindThreshold"),
        waiting_pod_scheduling_block_millisec=_int(
            data.get("waitingPodSchedulingBlockMilliSec"), "/waitingPodSchedulingBlockMilliSec"
        ),
        cell_types=types,
        physical_cells=tuple(tops),
        chains=tuple(chains),
        virtual_clusters=vcs,
        pinned_cells=pinned,
    )
    _validate_assignment(config)
    _check_every_chain_used(config)
    return config


def _check_every_chain_used(config: HivedConfig) -> None:
    """docs/hived-config-and-cells.md#random-choices-in-hived: a chain no VC references and holding no pinned cell
    crashes HiveD at start-up."""
    used = {vcell.chain for vc in config.virtual_clusters for vcell in vc.virtual_cells}
    used |= {_chain_of(config, cell) for vc in config.virtual_clusters for cell in
             (config.pinned_cells[p] for p in vc.pinned_cells)}
    for i, cell in enumerate(config.physical_cells):
        if cell.cell_type not in used:
            raise ConfigError(
                f"assignment to entry in nil map (chain {cell.cell_type} has no virtual cluster cell)",
                f"/physicalCluster/physicalCells/{i}",
            )
