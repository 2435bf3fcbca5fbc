"""Loads HiveD's recorded scheduling flows (`hived-cases.yaml`) into frozen dataclasses.

The file holds HiveD v0.3.4's own unit-test flows (`unitTestCases`) and replay-observed scenarios
(`observedCases`); its `conventions` header defines every construct mapped here. Loading validates the
structure (known ops and checks, configs and pods that exist) so that a malformed case is a clear
`CaseFileError`, never a confusing failure half-way through a flow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tests.support.fixture_yaml import fixture_yaml
from tests.support.paths import FIXTURES

CASES_FILE = FIXTURES / "spec" / "hived-cases.yaml"

PHASES = ("Filtering", "Preempting")
UNIT_OPS = frozenset(
    {"schedule", "delete_allocated", "delete_unallocated", "assert", "remember_placement",
     "set_bad_node", "set_healthy_node", "restart"}
)
OBSERVED_OPS = frozenset({"schedule", "delete", "inspect", "node_bad", "node_healthy", "restart"})
CHECKS = frozenset(
    {"groupsAbsent", "groupState", "lazyPreempted", "notLazyPreempted", "vcCellHealth", "cellsReturned"}
)
INSPECTS = frozenset({"groups", "cells", "virtualcluster"})
EXPECT_RESULTS = frozenset({"bind", "bind_any", "not_bind", "error"})
OBSERVED_RESULTS = frozenset({"bind", "wait", "preempt", "error"})
# conventions.nondeterministicSpots: the step-level random outcome (HiveD reports one random node's victims).
RANDOM_STEP_KEY = "reportedVictimsOneRandomNode"


class CaseFileError(ValueError):
    """The cases file does not have the structure its `conventions` header describes."""


@dataclass(frozen=True)
class Suggested:
    """conventions.scheduleStep.suggestedNodes: 'all', an explicit list, or {allExcept: [...]}."""

    mode: str  # "all" | "list" | "allExcept"
    nodes: tuple[str, ...] = ()

    def resolve(self, all_nodes: Sequence[str]) -> list[str]:
        if self.mode == "all":
            return list(all_nodes)
        if self.mode == "list":
            return list(self.nodes)
        excluded = set(self.nodes)
        return [node for node in all_nodes if node not in excluded]


@dataclass(frozen=True)
class Step:
    index: int
    op: str
    raw: Mapping[str, Any]
    observed: Mapping[str, Any]
    pod: str | None = None
    namespace: str = "default"
    spec: Mapping[str, Any] | None = None
    spec_yaml: str | None = None
    phase: str = "Preempting"
    suggested: Suggested = Suggested("all")
    bind_on_success: bool = True
    expect: Mapping[str, Any] | None = None
    random_outcome: bool = False
    groups: tuple[str, ...] = ()  # assert steps: `groups` (list or map keys) or the groups of `groupsOfPods`

    @property
    def pod_name(self) -> str:
        """The pod of a step that acts on one (schedule, delete)."""
        if self.pod is None:
            raise CaseFileError(f"{self.label}: names no pod")
        return self.pod

    @property
    def label(self) -> str:
        subject = self.pod or self.raw.get("check") or self.raw.get("what") or self.raw.get("node") or ""
        return f"step {self.index} ({self.op} {subject})".replace(" )", ")")


@dataclass(frozen=True)
class Case:
    id: str
    kind: str  # "unit" | "observed"
    config: str
    namespace: str
    steps: tuple[Step, ...]
    nondeterministic: bool = False
    description: str = ""


@dataclass(frozen=True)
class CasesFile:
    configs: Mapping[str, Mapping[str, Any]]
    unit_cases: tuple[Case, ...]
    observed_cases: tuple[Case, ...]

    @property
    def all_cases(self) -> tuple[Case, ...]:
        return self.unit_cases + self.observed_cases


def load_cases(path: Path = CASES_FILE) -> CasesFile:
    """Read and validate the cases file."""
    return parse_cases(fixture_yaml(path))


def parse_cases(data: Any) -> CasesFile:
    if not isinstance(data, Mapping):
        raise CaseFileError("cases file: top level is not a mapping")
    configs = {name: entry["config"] for name, entry in _mapping(data, "configs", "cases file").items()}
    pods = _mapping(data, "pods", "cases file") if "pods" in data else {}
    unit = tuple(_parse_case(raw, "unit", configs, pods) for raw in _list(data, "unitTestCases", "cases file"))
    observed = tuple(_parse_case(raw, "observed", configs, pods) for raw in _list(data, "observedCases", "cases file"))
    ids = [case.id for case in unit + observed]
    duplicates = sorted({case_id for case_id in ids if ids.count(case_id) > 1})
    if duplicates:
        raise CaseFileError(f"cases file: duplicate case ids {duplicates}")
    return CasesFile(MappingProxyType(configs), unit, observed)


def _parse_case(raw: Any, kind: str, configs: Mapping[str, Any], pods: Mapping[str, Any]) -> Case:
    if not isinstance(raw, Mapping) or not raw.get("id"):
        raise CaseFileError(f"{kind} case without an id: {raw!r:.80}")
    case_id = str(raw["id"])
    config = raw.get("config")
    if config not in configs:
        raise CaseFileError(f"{case_id}: unknown config {config!r}")
    namespace = str(raw.get("namespace") or "default")
    steps = tuple(
        _parse_step(step, index, case_id, kind, namespace, configs, pods)
        for index, step in enumerate(_list(raw, "steps", case_id))
    )
    if not steps:
        raise CaseFileError(f"{case_id}: no steps")
    return Case(
        id=case_id,
        kind=kind,
        config=str(config),
        namespace=namespace,
        steps=steps,
        nondeterministic=bool(raw.get("nondeterministic", False)),
        description=str(raw.get("description") or ""),
    )


def _parse_step(
    raw: Any, index: int, case_id: str, kind: str, namespace: str,
    configs: Mapping[str, Any], pods: Mapping[str, Any],
) -> Step:
    where = f"{case_id} step {index}"
    if not isinstance(raw, Mapping):
        raise CaseFileError(f"{where}: not a mapping")
    op = raw.get("op")
    known = UNIT_OPS if kind == "unit" else OBSERVED_OPS
    if op not in known:
        raise CaseFileError(f"{where}: unknown op {op!r} (known: {', '.join(sorted(known))})")
    observed = raw.get("observed")
    if not isinstance(observed, Mapping):
        raise CaseFileError(f"{where}: 'observed' missing or not a mapping")
    fields: dict[str, Any] = {"index": index, "op": op, "raw": MappingProxyType(dict(raw)), "observed": observed}
    if op == "assert" and raw.get("check") not in CHECKS:
        raise CaseFileError(f"{where}: unknown check {raw.get('check')!r}")
    if op == "inspect" and raw.get("what") not in INSPECTS:
        raise CaseFileError(f"{where}: unknown inspect {raw.get('what')!r}")
    if op == "restart" and raw.get("config") not in configs:
        raise CaseFileError(f"{where}: unknown config {raw.get('config')!r}")
    if "pod" in raw:
        fields["pod"] = str(raw["pod"])
        fields["namespace"] = namespace
    if kind == "unit" and "pod" in raw:
        entry = pods.get(raw["pod"])
        if not isinstance(entry, Mapping):
            raise CaseFileError(f"{where}: pod {raw['pod']!r} is not in 'pods'")
        fields["namespace"] = str(entry.get("namespace") or namespace)
        if op == "schedule":
            fields["spec"] = entry.get("spec")
    if op == "assert":
        fields["groups"] = _assert_groups(raw, where, namespace, pods)
    if op == "schedule":
        fields.update(_schedule_fields(raw, where, kind))
    return Step(**fields)


def _schedule_fields(raw: Mapping[str, Any], where: str, kind: str) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if kind == "observed":
        if "specYaml" in raw:
            fields["spec_yaml"] = str(raw["specYaml"] or "")
        elif isinstance(raw.get("spec"), Mapping):
            fields["spec"] = raw["spec"]
        else:
            raise CaseFileError(f"{where}: schedule step without 'spec' or 'specYaml'")
    phase = raw.get("phase", "Preempting")
    if phase not in PHASES:
        raise CaseFileError(f"{where}: unknown phase {phase!r}")
    fields["phase"] = phase
    fields["suggested"] = _suggested(raw.get("suggestedNodes", "all"), where)
    # conventions.scheduleStep.bindOnSuccess: observedCases always bind on success.
    fields["bind_on_success"] = bool(raw.get("bindOnSuccess", True)) if kind == "unit" else True
    expect = raw.get("expect")
    if expect is not None and (not isinstance(expect, Mapping) or expect.get("result") not in EXPECT_RESULTS):
        raise CaseFileError(f"{where}: bad expect {expect!r}")
    fields["expect"] = expect
    result = raw["observed"].get("result")
    if result not in OBSERVED_RESULTS:
        raise CaseFileError(f"{where}: unknown observed result {result!r}")
    fields["random_outcome"] = RANDOM_STEP_KEY in raw["observed"]
    return fields


def _assert_groups(raw: Mapping[str, Any], where: str, namespace: str, pods: Mapping[str, Any]) -> tuple[str, ...]:
    names: list[str] = [str(name) for name in raw.get("groups") or ()]
    if raw.get("group"):
        names.append(str(raw["group"]))
    for pod in raw.get("groupsOfPods") or ():
        entry = pods.get(pod)
        if not isinstance(entry, Mapping):
            raise CaseFileError(f"{where}: pod {pod!r} in groupsOfPods is not in 'pods'")
        names.append(group_of(entry.get("spec"), str(entry.get("namespace") or namespace), str(pod)))
    if not names and raw.get("check") != "vcCellHealth":
        raise CaseFileError(f"{where}: assert step names no groups")
    return tuple(dict.fromkeys(names))


def _suggested(value: Any, where: str) -> Suggested:
    if value == "all" or value is None:
        return Suggested("all")
    if isinstance(value, list) and all(isinstance(node, str) for node in value):
        return Suggested("list", tuple(value))
    if isinstance(value, Mapping) and set(value) == {"allExcept"} and isinstance(value["allExcept"], list):
        return Suggested("allExcept", tuple(str(node) for node in value["allExcept"]))
    raise CaseFileError(f"{where}: bad suggestedNodes {value!r}")


def _mapping(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise CaseFileError(f"{where}: '{key}' missing or not a mapping")
    return value


def _list(data: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise CaseFileError(f"{where}: '{key}' missing or not a list")
    return value


def group_of(spec: Mapping[str, Any] | None, namespace: str, pod: str) -> str:
    """The affinity group a pod belongs to (docs/hived-config-and-cells.md#the-pod-scheduling-spec: no affinityGroup
    -> `<namespace>/<podName>`)."""
    group = (spec or {}).get("affinityGroup") or {}
    return str(group.get("name") or f"{namespace}/{pod}")
