"""The model's inputs and decisions: pod refs, the pod-scheduling-spec and its validation
(docs/hived-config-and-cells.md#the-pod-scheduling-spec), bind info, results.

These values are created on every call, so they are plain slotted dataclasses (a frozen dataclass takes several
times longer to build); nothing changes them after construction, and they hash by value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hivedlab.models.hived.annotations import SCHEDULING_SPEC

Phase = Literal["Filtering", "Preempting"]
PHASE_FILTERING: Phase = "Filtering"
PHASE_PREEMPTING: Phase = "Preempting"

SPEC_PREFIX = f"Pod annotation {SCHEDULING_SPEC}: "


class UserError(Exception):
    """HiveD's HTTP-400 user error; `message` is the text HiveD puts after `Failed: `
    (docs/hived-config-and-cells.md#spec-validation)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(slots=True, unsafe_hash=True)
class PodRef:
    namespace: str
    name: str
    uid: str

    @property
    def key(self) -> str:
        """HiveD's internal.Key(pod): `<uid>(<namespace>/<name>)`."""
        return f"{self.uid}({self.namespace}/{self.name})"


@dataclass(slots=True, unsafe_hash=True)
class AllocatedPod:
    """What HiveD keeps in an affinity group's pod slot: the pod object as it was added, with the node it was bound
    to (its `spec.nodeName`). A preemption names the victim on that node for as long as the object stays in the
    slot, even after the pod itself was deleted (docs/hived-model.md, "What a deleted pod leaves in its group")."""

    pod: PodRef
    node: str


@dataclass(slots=True, unsafe_hash=True)
class PodPlacement:
    physical_node: str
    physical_leaf_cell_indices: tuple[int, ...]
    preassigned_cell_types: tuple[str, ...]


@dataclass(slots=True, unsafe_hash=True)
class MemberBindInfo:
    pod_placements: tuple[PodPlacement, ...]


@dataclass(slots=True, unsafe_hash=True)
class BindInfo:
    node: str
    leaf_cell_isolation: tuple[int, ...]
    cell_chain: str
    affinity_group_bind_info: tuple[MemberBindInfo, ...]

    def to_dict(self) -> dict[str, Any]:
        """HiveD's `pod-bind-info` fields, camelCase, in HiveD's order
        (docs/hived-config-and-cells.md#bind-info-and-the-pod-annotations)."""
        return {
            "node": self.node,
            "leafCellIsolation": list(self.leaf_cell_isolation),
            "cellChain": self.cell_chain,
            "affinityGroupBindInfo": [
                {"podPlacements": [
                    {"physicalNode": p.physical_node,
                     "physicalLeafCellIndices": list(p.physical_leaf_cell_indices),
                     "preassignedCellTypes": list(p.preassigned_cell_types)}
                    for p in member.pod_placements
                ]}
                for member in self.affinity_group_bind_info
            ],
        }


@dataclass(slots=True, unsafe_hash=True)
class Bind:
    node: str
    leaf_cell_isolation: tuple[int, ...]
    bind_info: BindInfo


@dataclass(slots=True, unsafe_hash=True)
class Preempt:
    victims: Mapping[str, tuple[PodRef, ...]]  # node -> all victim pods of the group on it


@dataclass(slots=True, unsafe_hash=True)
class Wait:
    reason: str


@dataclass(slots=True, unsafe_hash=True)
class Member:
    pod_number: int
    leaf_cell_number: int


@dataclass(slots=True, unsafe_hash=True)
class PodSchedulingSpec:
    """A validated pod-scheduling-spec (docs/hived-config-and-cells.md#the-pod-scheduling-spec); `members` already
    merged by leafCellNumber."""

    virtual_cluster: str
    priority: int
    pinned_cell_id: str
    leaf_cell_type: str
    leaf_cell_number: int
    lazy_preemption_enable: bool
    ignore_k8s_suggested_nodes: bool
    group_name: str
    members: tuple[Member, ...] = field(default=())

    @property
    def pod_numbers(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for m in self.members:
            out[m.leaf_cell_number] = out.get(m.leaf_cell_number, 0) + m.pod_number
        return out


def _field_error(name: str, value: Any, go_type: str) -> UserError:
    tag = {bool: "!!bool", int: "!!int", float: "!!float", str: "!!str", list: "!!seq", dict: "!!map"}.get(
        type(value), "!!map" if isinstance(value, Mapping) else "!!str")
    return UserError(f"Failed to unmarshal YAML to Object: yaml: unmarshal errors: field {name}: "
                     f"cannot unmarshal {tag} `{value}` into {go_type}")


def _get_int(data: Mapping[str, Any], name: str, default: int = 0) -> int:
    value = data.get(name, default)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise _field_error(name, value, "int32")
    number: int = value  # an int by now: bools and non-numbers raised
    return number


def _get_str(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if value is None:
        return ""
    if type(value) is str:
        return value
    if isinstance(value, (dict, list)):
        raise _field_error(name, value, "string")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _get_bool(data: Mapping[str, Any], name: str, default: bool) -> bool:
    value = data.get(name, default)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _field_error(name, value, "bool")
    return value


def parse_spec(pod: PodRef, spec: Mapping[str, Any] | None) -> PodSchedulingSpec:
    """Defaults and validation of the pod-scheduling-spec, in HiveD's order
    (docs/hived-config-and-cells.md#the-pod-scheduling-spec)."""
    is_mapping = type(spec) is dict or isinstance(spec, Mapping)
    if spec is None or (is_mapping and not spec):
        raise UserError(SPEC_PREFIX + "Annotation does not exist or is empty")
    if not is_mapping:
        raise _field_error("podSchedulingSpec", spec, "internal.PodSchedulingSpec")
    vc = _get_str(spec, "virtualCluster")
    priority = _get_int(spec, "priority")
    pinned = _get_str(spec, "pinnedCellId")
    leaf_type = _get_str(spec, "leafCellType")
    leaf_number = _get_int(spec, "leafCellNumber")
    lazy = _get_bool(spec, "lazyPreemptionEnable", False)
    # parsed, no effect in v0.3.4 (docs/hived-config-and-cells.md#the-pod-scheduling-spec)
    _get_bool(spec, "gangReleaseEnable", False)
    ignore = _get_bool(spec, "ignoreK8sSuggestedNodes", True)
    group = spec.get("affinityGroup")
    if group is not None and type(group) is not dict and not isinstance(group, Mapping):
        raise _field_error("affinityGroup", group, "AffinityGroupSpec")
    members: list[Member] = []
    if group is None:
        group_name = f"{pod.namespace}/{pod.name}"
        members.append(Member(1, leaf_number))
    else:
        group_name = _get_str(group, "name")
        raw_members = group.get("members")
        if raw_members is not None and not isinstance(raw_members, list):
            raise _field_error("members", raw_members, "[]AffinityGroupMemberSpec")
        for m in raw_members or []:
            if type(m) is not dict and not isinstance(m, Mapping):
                raise _field_error("members", m, "AffinityGroupMemberSpec")
            members.append(Member(_get_int(m, "podNumber"), _get_int(m, "leafCellNumber")))
    if vc == "":
        raise UserError(SPEC_PREFIX + "VirtualCluster is empty")
    if priority < -1:
        raise UserError(SPEC_PREFIX + "Priority is less than -1")
    if priority > 1000:
        raise UserError(SPEC_PREFIX + "Priority is greater than 1000")
    if leaf_number <= 0:
        raise UserError(SPEC_PREFIX + "LeafCellNumber is non-positive")
    if group_name == "":
        raise UserError(SPEC_PREFIX + "AffinityGroup.Name is empty")
    found = False
    for m in members:
        if m.pod_number <= 0:
            raise UserError(SPEC_PREFIX + "AffinityGroup.Members has non-positive PodNumber")
        if m.leaf_cell_number <= 0:
            raise UserError(SPEC_PREFIX + "AffinityGroup.Members has non-positive LeafCellNumber")
        found = found or m.leaf_cell_number == leaf_number
    if not found:
        raise UserError(SPEC_PREFIX + "AffinityGroup.Members does not contains current Pod")
    return PodSchedulingSpec(vc, priority, pinned, leaf_type, leaf_number, lazy, ignore, group_name, tuple(members))
