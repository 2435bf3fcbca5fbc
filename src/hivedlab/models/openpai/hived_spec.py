"""From a job protocol to HiveD pod-scheduling-specs, as rest-server v1.2.0's HiveD middleware does it
(docs/openpai-model.md#from-protocol-to-hived-pod-scheduling-spec): SKU units, the VC's status, priority,
leafCellNumber, affinity groups and the quota check.

`plan_hived` keeps going after a problem so that a validator can report all of them; `problems[0]` is the one the
rest-server answers with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# docs/openpai-model.md#priority-classes (crit is refused by the schema)
PRIORITIES = {"crit": 120, "prod": 100, "test": 10, "oppo": -1}
MAX_SAFE_INTEGER = 2**53 - 1
_MEMORY = re.compile(r"^(\d+)(Ki|Mi|Gi|Ti)$")
_MEMORY_FACTOR = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_LEADING_INT = re.compile(r"^\s*([-+]?\d+)")


@dataclass(frozen=True)
class Sku:
    """A resource unit (one leaf cell) as the rest-server parses `physicalCluster.skuTypes`
    (docs/openpai-model.md#skus-and-the-vc-status)."""

    gpu: float
    cpu: float
    memory: float  # MB


@dataclass(frozen=True)
class VcStatus:
    """What the rest-server learns from HiveD's inspect API for a VC (docs/openpai-model.md#skus-and-the-vc-status)."""

    known: bool
    quota: int  # leaf cells (MAX_SAFE_INTEGER when the VC is unknown)
    cell_units: Mapping[str, Sku]


@dataclass(frozen=True)
class Problem:
    """One reason the rest-server refuses the job, with its HTTP status, error code and exact message."""

    status: int
    code: str  # "" for an uncaught exception (HTTP 500 with no code)
    message: str
    pointer: str
    stage: str = "hived"


@dataclass(frozen=True)
class HivedPlan:
    specs: dict[str, dict[str, Any]]  # task role -> pod-scheduling-spec
    problems: tuple[Problem, ...]
    virtual_cluster: str
    priority: int | None
    gang: bool
    opportunistic: bool
    requested_cells: int | None  # None when some count is unknown (e.g. `instances` missing)
    vc: VcStatus


def js_parse_int(value: Any) -> float:
    """JavaScript parseInt(String(value)); NaN when no leading integer."""
    if isinstance(value, bool) or value is None:
        return math.nan
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    match = _LEADING_INT.match(str(value))
    return float(int(match.group(1))) if match else math.nan


def parse_memory_mb(value: Any) -> float:
    """`memory` of a SKU in MB: integer with Ki/Mi/Gi/Ti, anything else is bytes
    (docs/openpai-model.md#skus-and-the-vc-status: `10G` -> 0, `1024` -> 0)."""
    text = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    match = _MEMORY.match(text)
    if match:
        return float(int(match.group(1)) * _MEMORY_FACTOR[match.group(2)] // 2**20)
    number = js_parse_int(text)
    return math.nan if math.isnan(number) else float(math.floor(number / 2**20))


def resource_units(hived_config: Mapping[str, Any]) -> dict[str, Sku]:
    """The rest-server's `resourceUnits`: every skuType, cpu/gpu through parseInt (missing -> 0)."""
    skus = ((hived_config.get("physicalCluster") or {}) if isinstance(hived_config, Mapping) else {}).get("skuTypes")
    units = {}
    for name, raw in (skus or {}).items() if isinstance(skus, Mapping) else ():
        raw = raw if isinstance(raw, Mapping) else {}
        units[str(name)] = Sku(
            gpu=_nan_to_zero(js_parse_int(raw.get("gpu"))),
            cpu=_nan_to_zero(js_parse_int(raw.get("cpu"))),
            memory=_nan_to_zero(parse_memory_mb(raw.get("memory"))),
        )
    return units


def _nan_to_zero(value: float) -> float:
    return 0.0 if math.isnan(value) else value


def _type_tree(hived_config: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    types = (hived_config.get("physicalCluster") or {}).get("cellTypes") if isinstance(hived_config, Mapping) else None
    return {str(k): v for k, v in types.items() if isinstance(v, Mapping)} if isinstance(types, Mapping) else {}


def leaf_of(cell_type: str, types: Mapping[str, Mapping[str, Any]]) -> tuple[str, int]:
    """(leaf cell type, number of leaf cells) of a cell type; a name that is not a key is a leaf
    (docs/hived-config-and-cells.md#cell-types)."""
    count, seen = 1, set()
    while cell_type in types and cell_type not in seen:
        seen.add(cell_type)
        spec = types[cell_type]
        number = spec.get("childCellNumber")
        count *= number if isinstance(number, int) and not isinstance(number, bool) else 0
        cell_type = str(spec.get("childCellType"))
    return cell_type, count


def _pinned_types(hived_config: Mapping[str, Any], types: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """pinnedCellId -> cell type, walking physicalCells (a child's type is its parent's childCellType)."""
    found: dict[str, str] = {}
    stack = []
    cells = (hived_config.get("physicalCluster") or {}).get("physicalCells") or []
    for cell in cells if isinstance(cells, list) else []:
        if isinstance(cell, Mapping):
            stack.append((cell, str(cell.get("cellType"))))
    while stack:
        cell, cell_type = stack.pop()
        if cell.get("pinnedCellId") is not None:
            found.setdefault(str(cell["pinnedCellId"]), cell_type)
        child_type = str((types.get(cell_type) or {}).get("childCellType"))
        children = cell.get("cellChildren")
        for child in children if isinstance(children, list) else []:
            if isinstance(child, Mapping):
                stack.append((child, child_type))
    return found


def vc_leaf_cells(hived_config: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """VC -> leaf cell type -> number of leaf cells of its preassigned cells (virtual and pinned), from the config."""
    types = _type_tree(hived_config)
    pinned = _pinned_types(hived_config, types)
    vcs = hived_config.get("virtualClusters") if isinstance(hived_config, Mapping) else None
    out: dict[str, dict[str, int]] = {}
    for vc, spec in (vcs.items() if isinstance(vcs, Mapping) else ()):
        cells: dict[str, int] = {}
        spec = spec if isinstance(spec, Mapping) else {}
        for entry in spec.get("virtualCells") or [] if isinstance(spec.get("virtualCells"), list) else []:
            if not isinstance(entry, Mapping):
                continue
            leaf, count = leaf_of(str(entry.get("cellType", "")).split(".")[-1], types)
            number = entry.get("cellNumber")
            number = number if isinstance(number, int) and not isinstance(number, bool) else 0
            cells[leaf] = cells.get(leaf, 0) + count * number
        for entry in spec.get("pinnedCells") or [] if isinstance(spec.get("pinnedCells"), list) else []:
            cell_type = pinned.get(str(entry.get("pinnedCellId"))) if isinstance(entry, Mapping) else None
            if cell_type is not None:
                leaf, count = leaf_of(cell_type, types)
                cells[leaf] = cells.get(leaf, 0) + count
        out[str(vc)] = cells
    return out


def vc_status(
    hived_config: Mapping[str, Any], vc: str, leaf_cells: Mapping[str, Mapping[str, int]] | None = None
) -> VcStatus:
    """cellUnits and cellQuota of a VC; an unknown VC gives quota unlimited and every SKU
    (docs/openpai-model.md#skus-and-the-vc-status)."""
    units = resource_units(hived_config)
    cells = vc_leaf_cells(hived_config) if leaf_cells is None else leaf_cells
    if vc not in cells:
        return VcStatus(False, MAX_SAFE_INTEGER, units)
    return VcStatus(True, sum(cells[vc].values()), {t: units[t] for t in cells[vc] if t in units})


def js_get(mapping: Any, *keys: str, default: Any = None) -> Any:
    """lodash `get`: the default only when the path is missing (an explicit null stays null)."""
    for key in keys:
        if not isinstance(mapping, Mapping) or key not in mapping:
            return default
        mapping = mapping[key]
    return mapping


def _num(value: Any) -> Any:
    """JavaScript has one number type: 4.0 is 4."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def plan_hived(
    protocol: Mapping[str, Any],
    user: str,
    hived_config: Mapping[str, Any],
    leaf_cells: Mapping[str, Mapping[str, int]] | None = None,
) -> HivedPlan:
    """Every pod-scheduling-spec and every problem of docs/openpai-model.md#from-protocol-to-hived-pod-scheduling-spec,
    in the rest-server's order. Needs a schema-valid protocol."""
    hived = js_get(protocol, "extras", "hivedScheduler")
    klass = js_get(hived, "jobPriorityClass")
    opportunistic = klass == "oppo"
    # only `=== true` is gang (docs/openpai-model.md#gang-allocation-and-affinity-groups)
    gang = js_get(protocol, "extras", "gangAllocation", default=True) is True
    vc = js_get(protocol, "defaults", "virtualCluster", default="default")
    status = vc_status(hived_config, vc, leaf_cells)
    units = resource_units(hived_config)
    priority = PRIORITIES.get("test" if klass is None else klass)
    roles = protocol["taskRoles"]
    problems: list[Problem] = []
    specs: dict[str, dict[str, Any]] = {}
    for role, role_spec in roles.items():
        spec = _base_spec(vc, priority, hived, role)
        cells = _leaf_cell_number(role, role_spec["resourcePerInstance"], spec["leafCellType"],
                                  units, status, opportunistic, problems)
        spec["leafCellNumber"] = cells
        specs[role] = spec
    groups = _named_groups(protocol, hived, specs, status, units, opportunistic, vc, problems)
    default_group = None
    if not groups and gang:
        default_group = [_member(roles[r], specs[r]["leafCellNumber"]) for r in roles]
    requested: float | None = 0
    for role, role_spec in roles.items():
        name = js_get(hived, "taskRoles", role, "affinityGroupName")
        if name is not None and name in groups:  # each spec gets its own copy of the members
            specs[role]["affinityGroup"] = {"name": f"{user}~{protocol['name']}/{name}",
                                            "members": [dict(m) for m in groups[name]]}
        if default_group is not None:
            specs[role]["affinityGroup"] = {"name": f"{user}~{protocol['name']}/default",
                                            "members": [dict(m) for m in default_group]}
        cells = specs[role]["leafCellNumber"]
        instances = role_spec.get("instances")
        requested = None if requested is None or cells is None or instances is None else requested + instances * cells
    if requested is not None and requested > status.quota and gang and not opportunistic:
        problems.append(Problem(400, "InvalidProtocolError",
                                f"Job requests {_num(requested)} SKUs, exceeds maximum {status.quota} SKUs in VC {vc}.",
                                "/taskRoles"))
    return HivedPlan(specs, tuple(problems), vc, priority, gang, opportunistic,
                     None if requested is None else int(requested), status)


def _base_spec(vc: str, priority: int | None, hived: Any, role: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "virtualCluster": vc,
        "priority": priority,
        "pinnedCellId": js_get(hived, "taskRoles", role, "pinnedCellId"),
        "leafCellType": js_get(hived, "taskRoles", role, "skuType"),
        "leafCellNumber": 0,
    }
    # job-wide, docs/openpai-model.md#the-spec-per-task-role
    for flag in ("gangReleaseEnable", "lazyPreemptionEnable", "ignoreK8sSuggestedNodes"):
        if isinstance(hived, Mapping) and flag in hived:
            spec[flag] = hived[flag]
    spec["affinityGroup"] = None
    return spec


def _member(role_spec: Mapping[str, Any], cells: int | None) -> dict[str, Any]:
    """An affinity-group member; a missing `instances` leaves podNumber out (it is `undefined` in JavaScript)."""
    member: dict[str, Any] = {}
    if "instances" in role_spec:
        member["podNumber"] = _num(role_spec["instances"])
    member["leafCellNumber"] = cells
    return member


def _leaf_cell_number(
    role: str, resources: Mapping[str, Any], sku_type: Any, units: Mapping[str, Sku], status: VcStatus,
    opportunistic: bool, problems: list[Problem],
) -> int | None:
    if sku_type is not None:
        # the friendly "unknown skuType" check comes too late (docs/openpai-model.md#admission-errors)
        if sku_type not in units:
            problems.append(Problem(500, "", "Cannot read property 'gpu' of undefined",
                                    f"/extras/hivedScheduler/taskRoles/{role}/skuType"))
            return None
        per_cell = units[sku_type]
    else:
        pool = list((units if opportunistic else status.cell_units).values())
        per_cell = Sku(*(min((getattr(s, r) for s in pool), default=math.inf) for r in ("gpu", "cpu", "memory")))
    gpu, cpu, memory = (resources.get(k, 0) for k in ("gpu", "cpu", "memoryMB"))
    for amount, unit, label in ((gpu, per_cell.gpu, "GPU"), (cpu, per_cell.cpu, "CPU"), (memory, per_cell.memory,
                                                                                        "memory")):
        if unit == 0 and amount > 0:
            problems.append(Problem(
                400, "InvalidProtocolError",
                f"Taskrole {role} requests {_num(amount)} {label}, but SKU does not configure {label}. "
                f"Please contact admin if the taskrole needs {label} resources.",
                f"/taskRoles/{role}/resourcePerInstance/{'memoryMB' if label == 'memory' else label.lower()}"))
            return None
    return max(0 if amount == 0 else math.ceil(amount / unit) for amount, unit in
               ((gpu, per_cell.gpu), (cpu, per_cell.cpu), (memory, per_cell.memory)))


def _named_groups(
    protocol: Mapping[str, Any], hived: Any, specs: Mapping[str, dict[str, Any]], status: VcStatus,
    units: Mapping[str, Sku], opportunistic: bool, vc: str, problems: list[Problem],
) -> dict[str, list[dict[str, Any]]]:
    """The checks on `extras.hivedScheduler.taskRoles` and the named affinity groups
    (docs/openpai-model.md#gang-allocation-and-affinity-groups; the same page lists the admission errors)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    group_keys: dict[str, tuple[Any, Any]] = {}
    hived_roles = js_get(hived, "taskRoles") if isinstance(hived, Mapping) else None
    for role in hived_roles or {}:
        base = f"/extras/hivedScheduler/taskRoles/{role}"
        if role not in specs:
            problems.append(Problem(400, "InvalidProtocolError", f"Taskrole {role} does not exist.", base))
            continue
        sku, pinned = specs[role]["leafCellType"], specs[role]["pinnedCellId"]
        if sku is not None and pinned is not None:
            problems.append(Problem(400, "InvalidProtocolError",
                                    f"Taskrole {role} has both skuType and pinnedCellId, only one is allowed.", base))
        if sku is not None and sku in units and not opportunistic and sku not in status.cell_units:
            problems.append(Problem(400, "InvalidProtocolError",
                                    f"Taskrole {role} has skuType {sku}, VC {vc} only allows "
                                    f"{','.join(status.cell_units)}.", base + "/skuType"))
        name = js_get(hived_roles, role, "affinityGroupName")
        if name is None:
            continue
        if name in group_keys and group_keys[name] != (sku, pinned):
            problems.append(Problem(400, "InvalidProtocolError",
                                    f"AffinityGroup {name} has inconsistent skuType or pinnedCellId.",
                                    base + "/affinityGroupName"))
        group_keys.setdefault(name, (sku, pinned))
        groups.setdefault(name, []).append(_member(protocol["taskRoles"][role], specs[role]["leafCellNumber"]))
    return groups


def dump_crash(specs: Mapping[str, Mapping[str, Any]]) -> Problem | None:
    """js-yaml cannot dump `undefined`: a gang member without podNumber is an HTTP 500
    (docs/openpai-model.md#admission-errors)."""
    for role, spec in specs.items():
        group = spec.get("affinityGroup")
        if isinstance(group, Mapping) and any("podNumber" not in m for m in group.get("members", ())):
            return Problem(500, "", "unacceptable kind of an object to dump [object Undefined]",
                           f"/taskRoles/{role}", stage="submit")
    return None
