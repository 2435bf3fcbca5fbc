"""Each rule kind's typed parameters (src/hivedlab/plans/rule_params.py): every shipped plan loads into them, and a
plan whose rule has a misspelt, missing or mistyped parameter is refused when loaded, in one line naming the plan
file, the rule (index and id) and the key."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import yaml

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.resources import EXPERIMENTS, SMOKE_PLANS
from hivedlab.basics.text import Text
from hivedlab.plans.loader import load_plan, plan_from_dict
from hivedlab.plans.rule_params import (
    PARAMS,
    GangStart,
    GangTogether,
    JobWhile,
    NoParams,
    Rule,
    Tolerance,
    job_refs,
    keys_of,
    parse_rule,
)

SHIPPED = sorted([*EXPERIMENTS.glob("*.yaml"), *SMOKE_PLANS.glob("*.yaml")])
COMMON = ("id", "kind", "question", "expected", "scheduler")


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_plan_loads_into_typed_rules(path: Path) -> None:
    plan = load_plan(path)
    raw_rules = yaml.safe_load(path.read_text(encoding="utf-8"))["rules"]
    assert [rule.id for rule in plan.rules] == [raw["id"] for raw in raw_rules]
    for rule, raw in zip(plan.rules, raw_rules, strict=True):
        assert isinstance(rule.params, PARAMS[rule.kind])
        for key in raw.keys() - set(COMMON):  # every parameter the plan wrote is in the typed rule
            name = key + "_" if key == "while" else key
            value = getattr(rule.params, name)
            assert value == (tuple(raw[key]) if isinstance(raw[key], list) else
                             Tolerance(**raw[key]) if isinstance(raw[key], dict) else raw[key])
        written = {key + "_" if key == "while" else key for key in raw}
        for field in fields(rule.params):  # a parameter the plan left out takes its documented default
            if field.name not in written:
                default = field.default_factory() if callable(field.default_factory) else field.default
                assert getattr(rule.params, field.name) == default, (rule.id, field.name)


def _parameters(path: Path) -> list[tuple[int, str, str]]:
    """(rule index, rule id, parameter key) for every parameter of every rule of a plan."""
    rules = yaml.safe_load(path.read_text(encoding="utf-8"))["rules"]
    return [(i, rule["id"], key) for i, rule in enumerate(rules) for key in rule if key not in COMMON]


CASES = [(path, *case) for path in SHIPPED for case in _parameters(path)]


@pytest.mark.parametrize(("path", "index", "rule_id", "key"), CASES,
                         ids=[f"{p.stem}-{i}-{k}" for p, i, _, k in CASES])
def test_a_misspelt_parameter_is_refused_naming_plan_rule_and_key(tmp_path: Path, path: Path, index: int,
                                                                   rule_id: str, key: str) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    rule = data["rules"][index]
    typo = key + key[-1]  # `job` -> `jobb`, `while` -> `whilee`
    rule[typo] = rule.pop(key)
    copy = tmp_path / path.name
    copy.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(HivedlabError) as info:
        load_plan(copy)
    message = str(info.value)
    assert message.startswith(f"{path.name}: rules/{index} ({rule_id}): unknown key {typo!r}")
    assert f"(did you mean {key!r}?)" in message and "\n" not in message


def _gang_rule(**changes: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {"id": "r", "kind": "gang-waits", "question": 0, "expected": {"zh": "z", "en": "e"},
                            "job": "gang", "while": "holder"}
    rule.update(changes)
    return {k: v for k, v in rule.items() if v is not None}


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (_gang_rule(job=None), "missing key 'job'"),
        (_gang_rule(reason=3), "key 'reason' must be a string, not 3"),
        (_gang_rule(kind="partial-run", max_parallel="two", **{"while": None}),
         "key 'max_parallel' must be an integer, not 'two'"),
        (_gang_rule(kind="gang-together", tolerance_s={"sim": 0, "k8": 30}, **{"while": None}),
         "unknown key 'tolerance_s/k8' (did you mean 'k8s'?)"),
        (_gang_rule(kind="deadlock", jobs=["a"], expect="yes", job=None, **{"while": None}),
         "key 'expect' must be true or false, not 'yes'"),
        (_gang_rule(kind="gang-start", expect="some", **{"while": None}),
         "key 'expect' must be 'partial' or 'all-or-nothing', not 'some'"),
        (_gang_rule(kind="placement", jobs="gang", vc="vc1", job=None, **{"while": None}),
         "key 'jobs' must be a non-empty list of names, not 'gang'"),
        (_gang_rule(kind="gang-wait"), "unknown rule kind 'gang-wait' (did you mean 'gang-waits'?)"),
        (_gang_rule(expected="both"), "key 'expected' must be a mapping with zh and en texts"),
    ],
    ids=["missing", "reason-type", "int-type", "nested-key", "bool-type", "choice", "list-type", "kind", "expected"],
)
def test_a_wrong_parameter_is_one_line(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(HivedlabError) as info:
        parse_rule(rule)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_rule_parses_into_its_kinds_parameters() -> None:
    rule = parse_rule(_gang_rule(reason="Insufficient", scheduler="hived"))
    assert rule == Rule("r", "gang-waits", 0, Text("z", "e"), JobWhile("gang", "holder", "Insufficient"), ("hived",))
    assert rule.judges("hived") and not rule.judges("default")
    assert rule.without_reason().params == JobWhile("gang", "holder", "")
    together = parse_rule(_gang_rule(kind="gang-together", tolerance_s={"k8s": 5}, **{"while": None}))
    assert together.params == GangTogether("gang", Tolerance(0.0, 5.0)) and together.judges("volcano")
    assert (together.params.tolerance_s.of("sim"), together.params.tolerance_s.of("pai")) == (0.0, 30.0)


def test_every_kind_declares_its_keys() -> None:
    """The YAML keys of each kind (a keyword such as `while` is the field `while_`) are none of the common ones."""
    assert keys_of("gang-waits") == ("job", "while", "reason")
    for kind, params in PARAMS.items():
        assert params is not NoParams and fields(params), kind
        assert not set(keys_of(kind)) & set(COMMON), kind


def test_gang_start_is_asked_while_a_job_runs_only_when_told() -> None:
    """`while` is optional for gang-start; given, it names a plan job the loader checks."""
    asked = parse_rule(_gang_rule(kind="gang-start", expect="partial"))
    assert asked.params == GangStart("gang", "partial", "holder") and job_refs(asked.params) == ("gang", "holder")
    assert parse_rule(_gang_rule(kind="gang-start", expect="partial", **{"while": None})).params == GangStart(
        "gang", "partial")
    plan = load_plan("kubeflow-gang")
    assert {r.id: r.params for r in plan.rules if r.kind == "gang-start"} == {
        "partial-start": GangStart("job2", "partial", "job1"), "all-or-nothing": GangStart("job2", "all-or-nothing",
                                                                                          "job1")}
    raw = dict(plan.raw or {})
    raw["rules"] = [{**r, "while": "job9"} if r["kind"] == "gang-start" else r for r in raw["rules"]]
    with pytest.raises(HivedlabError, match=r"rules/0 \(partial-start\): unknown job 'job9'"):
        plan_from_dict(raw, EXPERIMENTS / "kubeflow-gang.yaml")
