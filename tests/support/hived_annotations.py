"""HiveD's annotations read back as HiveD reads them (docs/hived-config-and-cells.md#the-pod-scheduling-spec): the
blind old-name text replacement, the empty-annotation error and the YAML error; the pod-bind-info YAML. Used by the
tests that hold the model to HiveD's own cases; the toolkit itself only writes bind info
(`hivedlab.models.hived_bind_info`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from hivedlab.models.hived import BindInfo, MemberBindInfo, PodPlacement, UserError
from hivedlab.models.hived.annotations import BIND_INFO as BIND_INFO_ANNOTATION
from hivedlab.models.hived.types import SPEC_PREFIX
from hivedlab.models.hived_bind_info import (
    dump_bind_info as dump_bind_info,  # the writer, for the flows that round-trip
)

# docs/hived-config-and-cells.md#the-pod-scheduling-spec: replaced in the annotation text before parsing,
# even inside names
OLD_NAMES = (
    ("gpuType", "leafCellType"),
    ("gpuNumber", "leafCellNumber"),
    ("gpuIsolation", "leafCellIsolation"),
    ("physicalGpuIndices", "physicalLeafCellIndices"),
)

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CodecError(ValueError):
    """An annotation that cannot be read; the message says why in one line."""


def replace_old_names(text: str) -> str:
    for old, new in OLD_NAMES:
        text = text.replace(old, new)
    return text


def _yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return f"yaml: {problem}"
    # PyYAML reports an error found at the end of the text on the line after it; go-yaml on the last line
    last_line = max(1, len(text.rstrip("\n").splitlines()))
    return f"yaml: line {min(mark.line + 1, last_line)}: {problem}"


def spec_from_annotation(text: str | None) -> dict[str, Any]:
    """The pod-scheduling-spec annotation text -> mapping, or HiveD's user error
    (docs/hived-config-and-cells.md#spec-validation)."""
    if text is None or not text.strip():
        raise UserError(SPEC_PREFIX + "Annotation does not exist or is empty")
    replaced = replace_old_names(text)
    try:
        data = yaml.load(replaced, Loader=_Loader)  # a safe loader
    except yaml.YAMLError as exc:
        raise UserError(f'Failed to unmarshal YAML "{text}" to Object: {_yaml_problem(exc, replaced)}') from None
    if data is None:
        raise UserError(SPEC_PREFIX + "Annotation does not exist or is empty")
    if not isinstance(data, Mapping):
        raise UserError(f'Failed to unmarshal YAML "{text}" to Object: yaml: unmarshal errors: '
                        f"cannot unmarshal {type(data).__name__} into internal.PodSchedulingSpec")
    return dict(data)


def load_bind_info(text: str | None) -> BindInfo:
    if text is None or not text.strip():
        raise CodecError(f"annotation {BIND_INFO_ANNOTATION} does not exist or is empty")
    try:
        data = yaml.load(replace_old_names(text), Loader=_Loader)  # a safe loader
    except yaml.YAMLError as exc:
        raise CodecError(f"annotation {BIND_INFO_ANNOTATION}: {_yaml_problem(exc, text)}") from None
    try:
        return bind_info_from_dict(data)
    except (ValueError, AttributeError, TypeError) as exc:
        raise CodecError(f"annotation {BIND_INFO_ANNOTATION}: {exc}") from None


def bind_info_from_dict(data: Mapping[str, Any]) -> BindInfo:
    """The bind info mapping as HiveD reads it (old names `gpuIsolation`/`physicalGpuIndices` accepted)."""
    if not isinstance(data, Mapping):
        raise ValueError("pod-bind-info is not a mapping")
    members = []
    for member in data.get("affinityGroupBindInfo") or []:
        placements = []
        for p in (member or {}).get("podPlacements") or []:
            indices = p.get("physicalLeafCellIndices", p.get("physicalGpuIndices"))
            types = p.get("preassignedCellTypes") or []
            placements.append(PodPlacement(str(p.get("physicalNode") or ""), _ints(indices),
                                           tuple("" if t is None else str(t) for t in types)))
        members.append(MemberBindInfo(tuple(placements)))
    isolation = data.get("leafCellIsolation", data.get("gpuIsolation"))
    return BindInfo(str(data.get("node") or ""), _ints(isolation), str(data.get("cellChain") or ""), tuple(members))


def _ints(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"expected a list of integers, got {value!r}")
    return tuple(value)


def isolation_annotation(info: BindInfo) -> str:
    """`pod-leaf-cell-isolation`: comma-separated leaf indices, e.g. `0,1`."""
    return ",".join(str(i) for i in info.leaf_cell_isolation)
