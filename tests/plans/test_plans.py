"""Experiment plans: the five shipped main plans load in report order, the optional reconfig plan after them; a
bad plan is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.resources import EXPERIMENTS
from hivedlab.plans.loader import (
    RestartStep,
    Step,
    StopStep,
    SubmitStep,
    SwitchConfigStep,
    WaitStep,
    load_plan,
    load_plans,
    main_plans,
    plan_from_dict,
)


def test_five_plans_in_report_order() -> None:
    plans = main_plans()
    assert [p.id for p in plans] == ["vc-safety", "priority", "opportunistic", "gang", "incremental"]
    assert [p.hived_config for p in plans] == ["two-vc", "two-vc", "two-vc", "one-vc", "one-vc"]
    assert not any(p.optional for p in plans)
    assert [p.id for p in load_plans()] == [*(p.id for p in plans), "reconfig"]


def test_reconfig_switches_the_config_while_its_jobs_run() -> None:
    plan = load_plan("reconfig")
    assert plan.optional and plan.hived_config == "two-vc"
    switch = plan.steps.index(SwitchConfigStep("one-vc"))
    assert plan.steps[switch - 1] == WaitStep(("vc1-job", "default-job"), "running", 900.0)
    assert plan.steps[switch + 1] == SubmitStep("late-vc1")  # accepted: HiveD still lists vc1 (the vc1 job runs)
    assert StopStep(("vc1-job", "late-vc1")) in plan.steps[switch:]  # neither would ever end by itself


def test_restart_step_parses(tmp_path: Path) -> None:
    data = yaml.safe_load((EXPERIMENTS / "priority.yaml").read_text(encoding="utf-8"))
    data["steps"].insert(2, {"restart": "hived"})
    plan = plan_from_dict(data, tmp_path / "priority.yaml")
    assert plan.steps[2] == RestartStep("hived") and not plan.optional


@pytest.mark.parametrize(
    "step, message",
    [
        ({"restart": "kube-scheduler"}, "steps/1"),
        ({"switch_config": "One VC"}, "steps/1"),
        ({"switch_config": "one-vc", "stop": "low"}, "steps/1"),
        ({"switch_config": "three-vc"}, "steps/1: no HiveD config template 'three-vc' \\(known: one-vc, two-vc\\)"),
    ],
)
def test_bad_reconfiguration_steps(tmp_path: Path, step: dict, message: str) -> None:
    data = yaml.safe_load((EXPERIMENTS / "priority.yaml").read_text(encoding="utf-8"))
    data["steps"].insert(1, step)
    with pytest.raises(HivedlabError, match=message):
        plan_from_dict(data, tmp_path / "priority.yaml")


def test_priority_steps_as_the_manual_runs_them() -> None:
    plan = load_plan("priority")
    assert plan.steps == (
        SubmitStep("low"),
        WaitStep(("low",), "running", 900.0),
        SubmitStep("high"),
        WaitStep(("low", "high"), "finished", 3600.0),
    )
    assert plan.jobs["low"].file == "job-config-1.yaml"


def test_vc_safety_submits_one_copy_per_member() -> None:
    plan = load_plan("vc-safety")
    assert plan.steps[0] == SubmitStep("prod", as_="each-member")


def _jobs_of(step: Step) -> str:
    if isinstance(step, SubmitStep):
        return step.job
    return ",".join(step.jobs) if isinstance(step, (WaitStep, StopStep)) else ""


def test_incremental_over_quota_after_main_part() -> None:
    plan = load_plan("incremental")
    kinds = [type(s).__name__ + ":" + _jobs_of(s) for s in plan.steps]
    assert kinds.index("WaitStep:holder,elastic") < kinds.index("SubmitStep:over-gang")
    rejected = plan.steps[kinds.index("SubmitStep:over-gang")]
    assert isinstance(rejected, SubmitStep)
    assert rejected.expect == "rejected" and rejected.reply_status == 400
    assert rejected.reply_message == "Job requests 4 SKUs, exceeds maximum 2 SKUs in VC default."


def test_every_rule_question_is_bilingual() -> None:
    for plan in load_plans():
        assert len(plan.questions["zh"]) == len(plan.questions["en"])
        for rule in plan.rules:
            assert rule.expected.zh and rule.expected.en


def _copy(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load((EXPERIMENTS / "gang.yaml").read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / f"{data.get('id', 'gang')}.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def _placement(data: dict, vc: str) -> None:
    """The plan's first rule made a placement rule on `vc`."""
    first = data["rules"][0]
    data["rules"][0] = {"id": first["id"], "kind": "placement", "question": 0, "expected": first["expected"],
                        "jobs": ["gang"], "vc": vc}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["steps"].append({"wait": {"job": "gang", "until": "done"}}), "steps/4/wait/until"),
        (lambda d: d["steps"].append({"submit": "nobody"}), "unknown job 'nobody'"),
        (lambda d: d["rules"][0].update(kind="magic"), "rules/0 (gang-waits): key 'kind': unknown rule kind"),
        (lambda d: d["rules"][0].update(job="ghost"), "rules/0 (gang-waits): unknown job 'ghost'"),
        (lambda d: d["rules"][0].update(question=9), "question 9 does not exist"),
        (lambda d: d.pop("questions"), "'questions' is a required property"),
        (lambda d: d["rules"][0].update(outside_vc="vc1"),
         "rules/0 (gang-waits): unknown key 'outside_vc' for kind gang-waits"),
        (lambda d: _placement(d, "vc1"), "rules/0 (gang-waits): vc 'vc1' is not a VC of one-vc"),
    ],
    ids=["bad-until", "unknown-step-job", "unknown-rule-kind", "unknown-rule-job", "bad-question", "no-questions",
         "key-of-another-kind", "unknown-rule-vc"],
)
def test_bad_plan_is_one_line_error(tmp_path: Path, edit, message: str) -> None:
    with pytest.raises(HivedlabError) as info:
        load_plan(_copy(tmp_path, edit))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_id_must_match_file(tmp_path: Path) -> None:
    path = _copy(tmp_path, lambda d: None).rename(tmp_path / "other.yaml")
    with pytest.raises(HivedlabError, match="must equal the file name"):
        load_plan(path)


def test_unknown_id_suggests(tmp_path: Path) -> None:
    with pytest.raises(HivedlabError, match="did you mean 'gang'"):
        load_plan("gnag")


def test_a_folder_named_like_a_plan_is_not_taken_for_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`hivedlab run smoke --out smoke`, run again from the same folder: `smoke` there is the run's folder."""
    (tmp_path / "smoke").mkdir()
    (tmp_path / "gang").mkdir()
    monkeypatch.chdir(tmp_path)
    assert load_plan("smoke").id == "smoke" and load_plan("gang").id == "gang"


def test_invalid_yaml(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("id: [unclosed\n", encoding="utf-8")
    with pytest.raises(HivedlabError, match="not valid YAML"):
        load_plan(path)


def test_a_sixth_experiment_is_a_file(tmp_path: Path) -> None:
    for plan in load_plans():
        (tmp_path / plan.path.name).write_text(plan.path.read_text(encoding="utf-8"), encoding="utf-8")
    _copy(tmp_path, lambda d: d.update(id="extra", order=6))
    assert [p.id for p in main_plans(tmp_path)][-1] == "extra"  # a TA's sixth plan is a main one unless optional


def test_ruleset_maps_protocol_names_to_keys() -> None:
    from hivedlab.plans.loader import to_ruleset

    rules = to_ruleset(load_plan("priority"))
    assert rules.job_names == {"job-config-1": "low", "job-config-2": "high"}
    assert rules.questions[0].en == "Does the later job run only after the earlier job has finished?"
    assert [r.kind for r in rules.rules] == ["preempts", "retried-after", "placement"]


def test_every_rule_kind_in_the_schema_is_implemented() -> None:
    import json

    from hivedlab.basics.resources import SCHEMAS
    from hivedlab.checker.judging.verdicts import RULE_KINDS
    from hivedlab.plans.rule_params import PARAMS

    schema = json.loads((SCHEMAS / "experiment-plan.schema.json").read_text(encoding="utf-8"))
    assert set(schema["$defs"]["rule"]["properties"]["kind"]["enum"]) == set(RULE_KINDS) == set(PARAMS)


def test_grading_expects_the_main_experiments_only() -> None:
    from hivedlab.checker.grading.labspec import shipped_lab

    assert [e.id for e in shipped_lab().experiments] == [p.id for p in main_plans()]
