"""HiveD's own test flows and recorded scenarios (`hived-cases.yaml`) replayed against the HiveD model.

One test per flow, named after the case: `unitTestCases` are HiveD v0.3.4's Go unit-test flows (held to both
the test's assertions and the replay's observations), `observedCases` are scenarios recorded by replaying
HiveD's algorithm (lab configs, validation, feature demos). The harness lives in `hived_cases_data.py`
(loader), `hived_cases_views.py` (inspect-JSON shapes) and `hived_cases_runner.py` (one op per step).
"""

from __future__ import annotations

import dataclasses
import re
from types import ModuleType
from typing import Any

import pytest

from tests.support.hived_cases_data import CaseFileError, Suggested, group_of, load_cases, parse_cases
from tests.support.hived_cases_runner import FlowMismatch, FlowRunner
from tests.support.hived_cases_views import (
    cell_users,
    group_summary,
    groups_by_name,
    normalized_bind_info,
    physical_leaves,
    plain,
)

DATA = load_cases()
UNIT = DATA.unit_cases
OBSERVED = DATA.observed_cases


@pytest.fixture(scope="module")
def hived() -> ModuleType:
    from hivedlab.models import hived as api

    return api


@pytest.fixture(scope="module")
def codec() -> ModuleType:
    from tests.support import hived_annotations

    return hived_annotations


# -- the flows -------------------------------------------------------------------------------------------------


def test_unit_flows_loaded() -> None:
    assert UNIT
    assert len(UNIT) == 7
    assert sum(len(case.steps) for case in UNIT) == 143  # every step of HiveD's own algorithm test flows
    # HiveD's replay met every assertion of its test, so a step can be held to both `expect` and `observed`
    assert {step.raw.get("replayVerdict") for case in UNIT for step in case.steps} == {"pass"}


def test_observed_flows_loaded() -> None:
    assert OBSERVED
    assert len(OBSERVED) == 28
    assert sum(len(case.steps) for case in OBSERVED) == 178


@pytest.mark.parametrize("case", UNIT, ids=[case.id for case in UNIT])
def test_hived_unit_flow(case: Any, hived: ModuleType, codec: ModuleType) -> None:
    FlowRunner(DATA, case, hived, codec).run()


@pytest.mark.parametrize("case", OBSERVED, ids=[case.id for case in OBSERVED])
def test_hived_observed_flow(case: Any, hived: ModuleType, codec: ModuleType) -> None:
    FlowRunner(DATA, case, hived, codec).run()


def _with_change(case_id: str, index: int, path: tuple[Any, ...], value: Any, key: str = "observed") -> Any:
    """The case cut after step `index`, with one recorded value of that step replaced."""
    case = next(c for c in DATA.all_cases if c.id == case_id)
    step = case.steps[index]
    record = plain(getattr(step, key))
    target = record
    for part in path[:-1]:
        target = target[part]
    assert path[-1] in target if isinstance(target, dict) else path[-1] < len(target)
    target[path[-1]] = value
    return dataclasses.replace(case, steps=case.steps[:index] + (dataclasses.replace(step, **{key: record}),))


# One recorded value per kind of check; changing it must fail the flow at that step (a harness that compares
# nothing would pass every flow).
CHANGES = [
    ("lab1/vc-safety", 0, ("node",), "hostname-dan", "bind node: HiveD 'hostname-dan', model 'hostname-carol'"),
    ("unit/normal-operations", 7, ("leafCellIsolation",), [0, 1, 2, 3, 4, 6, 7], "leafCellIsolation"),
    ("unit/normal-operations", 7, ("cellChain",), "CT1-NODE", "bind info"),
    ("unit/normal-operations", 3, ("affinityGroupBindInfo", 0, "podPlacements", 0, "preassignedCellTypes", 0),
     "DGX2-V100-NODE", "bind info"),
    ("unit/normal-operations", 6, ("reason",), "insufficient capacity when scheduling in VC VC1", "wait reason"),
    ("unit/normal-operations", 19, ("message",), "other", "user error message"),
    ("unit/normal-operations", 9, ("victims", "0.0.3.1"), ["pod5"], "victims"),
    ("unit/normal-operations", 9, ("groupAfter", "state"), "Allocated", "state of group group11 after the call"),
    ("unit/normal-operations", 24, ("deleted",), "unallocated", "deleted pod was"),
    ("unit/normal-operations", 40, ("present",), ["group1"], "groups present"),
    ("unit/suggested-nodes", 6, ("reportedVictimsOneRandomNode",), ["pod28"], "HiveD reported victims ['pod28']"),
    ("unit/suggested-nodes", 11, ("states", "group24"), "Allocated", "group states"),
    ("unit/backtracking-cell-search", 4, ("group27", "hasVirtualPlacement"), False, "lazy preemption status"),
    ("unit/stateful-preemption", 11, ("state",), "Allocated", "group group26"),
    ("unit/stateful-preemption", 14, ("cells", "0.0.3.1"), ["Used/4"], "returned cells"),
    ("unit/bad-nodes-doomed-cells", 5, ("VC1/2", "priority"), 1, "VC cells"),
    ("unit/reconfiguration", 19, ("groups", "group15", "lazyPreemptor"), "group15", "group group15 after the restart"),
    ("unit/reconfiguration", 20, ("group9", "preemptor"), "group13", "lazy preemption status"),
    ("lab1/opportunistic-then-preempted", 3, ("groups", "default/oppo-a-train-0", "priority"), 0, "affinity groups"),
    ("lab1/opportunistic-then-preempted", 5, ("cells", "hostname-dan", "0"),
     "Reserving/100/using=default/oppo-a-train-0/vcell=vc1/0/0", "leaf cells"),
    ("lab1/opportunistic-then-preempted", 10, ("virtualCluster", 0, "cellPriority"), 0, "VC default status"),
    ("demo/reconfig-delete-node", 2, ("groups", "admin~itc-reconfig-3/default", "missingCells"), 0,
     "after the restart"),
    ("demo/bad-node", 0, ("result",), "error", "result: HiveD 'error', model 'ok'"),
]


@pytest.mark.parametrize(("case_id", "index", "path", "value", "message"), CHANGES,
                         ids=[f"{c[0]}-{c[1]}-{c[2][0]}" for c in CHANGES])
def test_harness_fails_a_changed_record(case_id: str, index: int, path: tuple[Any, ...], value: Any, message: str,
                                        hived: ModuleType, codec: ModuleType) -> None:
    with pytest.raises(FlowMismatch, match=rf"^{case_id} step {index} \(.*{re.escape(message)}"):
        FlowRunner(DATA, _with_change(case_id, index, path, value), hived, codec).run()


def test_harness_fails_a_changed_unit_test_assertion(hived: ModuleType, codec: ModuleType) -> None:
    case = _with_change("unit/normal-operations", 0, ("node",), "0.0.5.0", key="expect")
    with pytest.raises(FlowMismatch, match="HiveD's test: bind node: HiveD '0.0.5.0', model '0.0.1.0'"):
        FlowRunner(DATA, case, hived, codec).run()


def test_harness_checks_the_invariant_of_a_random_case(hived: ModuleType, codec: ModuleType) -> None:
    """demo/sku-type-unspecified: the nodes may differ from HiveD's, the leaf types used may not (4 K80 + 2 M60)."""
    case = next(c for c in DATA.all_cases if c.id == "demo/sku-type-unspecified")
    changed = [dataclasses.replace(s, observed={**s.observed, "node": "10.151.41.18"}) for s in case.steps]
    with pytest.raises(FlowMismatch, match="leaf types of the binds: HiveD"):
        FlowRunner(DATA, dataclasses.replace(case, steps=tuple(changed)), hived, codec).run()
    FlowRunner(DATA, case, hived, codec).run()


def test_harness_reports_a_wrong_wait_reason(hived: ModuleType, codec: ModuleType) -> None:
    case = next(c for c in OBSERVED if c.id == "lab2/equal-priority-no-preemption")
    last = case.steps[-1]
    observed = {**last.observed, "reason": "something else"}
    broken = dataclasses.replace(case, steps=case.steps[:-1] + (dataclasses.replace(last, observed=observed),))
    with pytest.raises(FlowMismatch, match="wait reason: HiveD 'something else', model 'insufficient capacity"):
        FlowRunner(DATA, broken, hived, codec).run()


# -- the loader ------------------------------------------------------------------------------------------------


def test_random_outcomes_are_the_marked_ones() -> None:
    """conventions.nondeterministicSpots: one whole case and the `reportedVictimsOneRandomNode` steps."""
    assert [case.id for case in DATA.all_cases if case.nondeterministic] == ["demo/sku-type-unspecified"]
    random_steps = [(case.id, step.index) for case in DATA.all_cases for step in case.steps if step.random_outcome]
    assert random_steps == [
        ("unit/suggested-nodes", 6),
        ("lab1/opportunistic-then-preempted", 2),
        ("lab2/priority-preemption", 2),
    ]


def test_unit_steps_resolve_pods_and_groups() -> None:
    first = UNIT[0].steps[0]
    assert (first.pod, first.namespace, first.phase, first.bind_on_success) == ("pod1", "test", "Preempting", True)
    assert first.spec is not None and first.spec["affinityGroup"]["name"] == "group1"
    absent = next(s for s in UNIT[0].steps if s.op == "assert")
    assert absent.groups[:3] == ("group1", "group2", "group3")  # groupsOfPods -> their groups, deduplicated
    assert len(absent.groups) == len(set(absent.groups))


def test_group_after_names_the_pods_own_group() -> None:
    """The runner finds a pod's group by `group_of` (docs/hived-config-and-cells.md#the-pod-scheduling-spec); the
    file's `groupAfter` agrees for every step."""
    checked = 0
    for case in DATA.all_cases:
        specs: dict[str, Any] = {}
        for step in case.steps:
            after = step.observed.get("groupAfter")
            if step.op == "schedule" and step.spec_yaml is None:
                specs[step.pod_name] = step.spec
            if after is None or step.pod not in specs:
                continue
            assert after["name"] == group_of(specs[step.pod], step.namespace, step.pod), (case.id, step.index)
            checked += 1
    assert checked > 150


def test_observed_steps_default_to_preempting_on_all_nodes() -> None:
    step = OBSERVED[0].steps[0]
    assert (step.phase, step.suggested, step.bind_on_success) == ("Preempting", Suggested("all"), True)


def test_suggested_nodes_forms() -> None:
    nodes = ["a", "b", "c"]
    assert Suggested("all").resolve(nodes) == nodes
    assert Suggested("list", ("c",)).resolve(nodes) == ["c"]
    assert Suggested("allExcept", ("b",)).resolve(nodes) == ["a", "c"]
    assert Suggested("allExcept", ()).resolve(nodes) == nodes


def _minimal(step: dict[str, Any], kind: str = "observedCases") -> dict[str, Any]:
    data: dict[str, Any] = {"configs": {"c": {"config": {}}}, "pods": {}, "unitTestCases": [], "observedCases": []}
    data[kind] = [{"id": "x/y", "config": "c", "steps": [step]}]
    return data


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"op": "explode", "observed": {}}, "x/y step 0: unknown op 'explode'"),
        ({"op": "schedule", "pod": "p", "observed": {"result": "bind"}}, "schedule step without 'spec'"),
        ({"op": "schedule", "pod": "p", "spec": {}, "phase": "Later", "observed": {"result": "bind"}}, "phase"),
        ({"op": "schedule", "pod": "p", "spec": {}, "suggestedNodes": 3, "observed": {"result": "bind"}},
         "bad suggestedNodes 3"),
        ({"op": "schedule", "pod": "p", "spec": {}, "observed": {"result": "maybe"}}, "unknown observed result"),
        ({"op": "restart", "config": "nope", "observed": {}}, "unknown config 'nope'"),
        ({"op": "inspect", "what": "everything", "observed": {}}, "unknown inspect"),
        ({"op": "schedule", "pod": "p", "spec": {}}, "'observed' missing"),
    ],
)
def test_loader_rejects_malformed_steps(step: dict[str, Any], message: str) -> None:
    with pytest.raises(CaseFileError, match=message.replace("(", r"\(")):
        parse_cases(_minimal(step))


def test_loader_rejects_unknown_unit_pod_and_check() -> None:
    with pytest.raises(CaseFileError, match="pod 'ghost' is not in 'pods'"):
        parse_cases(_minimal({"op": "delete_allocated", "pod": "ghost", "observed": {}}, "unitTestCases"))
    with pytest.raises(CaseFileError, match="unknown check 'vibes'"):
        parse_cases(_minimal({"op": "assert", "check": "vibes", "observed": {}}, "unitTestCases"))


def test_loader_rejects_duplicate_ids_and_unknown_configs() -> None:
    data = _minimal({"op": "inspect", "what": "groups", "observed": {}})
    data["observedCases"].append(dict(data["observedCases"][0]))
    with pytest.raises(CaseFileError, match=r"duplicate case ids \['x/y'\]"):
        parse_cases(data)
    data = _minimal({"op": "inspect", "what": "groups", "observed": {}})
    data["observedCases"][0]["config"] = "missing"
    with pytest.raises(CaseFileError, match="x/y: unknown config 'missing'"):
        parse_cases(data)


# -- the views -------------------------------------------------------------------------------------------------


def test_bind_info_members_sorted_by_leaf_number() -> None:
    big = {"podPlacements": [{"physicalNode": "n", "physicalLeafCellIndices": [0, 1],
                              "preassignedCellTypes": ["T", "T"]}]}
    small = {"podPlacements": [{"physicalNode": "n", "physicalLeafCellIndices": [2], "preassignedCellTypes": ["T"]}]}
    info = {"node": "n", "leafCellIsolation": [2], "cellChain": "C", "affinityGroupBindInfo": [big, small]}
    assert normalized_bind_info(info)["affinityGroupBindInfo"] == [small, big]


def test_groups_by_name_and_summary() -> None:
    assert groups_by_name({"items": None}) == {}
    item = {"metadata": {"name": "g"}, "status": {
        "vc": "a", "priority": 10, "state": "Allocated", "physicalPlacement": {"n1": [1, 0]},
        "virtualPlacement": {"a/0": ["a/0/0"]}, "allocatedPods": ["p2", "p1"],
        "lazyPreemptionStatus": {"preemptor": "h", "preemptionTime": "t"}}}
    assert group_summary(groups_by_name({"items": [item]})["g"]) == {
        "state": "Allocated", "priority": 10, "vc": "a", "lazyPreempted": True, "hasVirtualPlacement": True,
        "physicalPlacement": {"n1": [0, 1]}, "allocatedPods": ["p1", "p2"], "lazyPreemptor": "h"}
    with pytest.raises(ValueError, match="is not"):
        groups_by_name([item])


def test_physical_leaves_by_node_and_index() -> None:
    leaf = {"cellAddress": "rack/n1/3", "cellState": "Used", "cellPriority": 5}
    node = {"cellAddress": "rack/n1", "isNodeLevel": True, "cellChildren": [leaf]}
    rack = {"cellAddress": "rack", "leafCellType": "T", "cellChildren": [node]}
    assert physical_leaves([rack]) == {("n1", 3): [leaf]}


def test_cell_users_from_placements() -> None:
    groups = {
        "victim": {"status": {"state": "BeingPreempted", "physicalPlacement": {"n": [0]}}},
        "preemptor": {"status": {"state": "Preempting", "physicalPlacement": {"n": [0, 1]}}},
    }
    assert cell_users(groups) == {("n", 0): {"using": "victim", "reserving": "preemptor"},
                                  ("n", 1): {"reserving": "preemptor"}}
