"""Experiment plans: the five shipped plans load in report order; a bad plan is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.resources import EXPERIMENTS
from hivedlab.checker.plans import SubmitStep, WaitStep, load_plan, load_plans


def test_five_plans_in_report_order() -> None:
    plans = load_plans()
    assert [p.id for p in plans] == ["vc-safety", "priority", "opportunistic", "gang", "incremental"]
    assert [p.hived_config for p in plans] == ["two-vc", "two-vc", "two-vc", "one-vc", "one-vc"]


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


def test_incremental_over_quota_after_main_part() -> None:
    plan = load_plan("incremental")
    kinds = [type(s).__name__ + ":" + (s.job if isinstance(s, SubmitStep) else ",".join(s.jobs)) for s in plan.steps]
    assert kinds.index("WaitStep:holder,elastic") < kinds.index("SubmitStep:over-gang")
    rejected = plan.steps[kinds.index("SubmitStep:over-gang")]
    assert rejected.expect == "rejected" and rejected.reply_status == 400
    assert rejected.reply_message == "Job requests 4 SKUs, exceeds maximum 2 SKUs in VC default."


def test_every_rule_question_is_bilingual() -> None:
    for plan in load_plans():
        assert len(plan.questions["zh"]) == len(plan.questions["en"])
        for rule in plan.rules:
            assert rule["expected"]["zh"] and rule["expected"]["en"]


def _copy(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load((EXPERIMENTS / "gang.yaml").read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / f"{data.get('id', 'gang')}.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["steps"].append({"wait": {"job": "gang", "until": "done"}}), "steps/4/wait/until"),
        (lambda d: d["steps"].append({"submit": "nobody"}), "unknown job 'nobody'"),
        (lambda d: d["rules"][0].update(kind="magic"), "rules/0/kind"),
        (lambda d: d["rules"][0].update(job="ghost"), "rules/0: unknown job 'ghost'"),
        (lambda d: d["rules"][0].update(question=9), "question 9 does not exist"),
        (lambda d: d.pop("questions"), "'questions' is a required property"),
    ],
    ids=["bad-until", "unknown-step-job", "unknown-rule-kind", "unknown-rule-job", "bad-question", "no-questions"],
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


def test_invalid_yaml(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("id: [unclosed\n", encoding="utf-8")
    with pytest.raises(HivedlabError, match="not valid YAML"):
        load_plan(path)


def test_a_sixth_experiment_is_a_file(tmp_path: Path) -> None:
    for plan in load_plans():
        (tmp_path / plan.path.name).write_text(plan.path.read_text(encoding="utf-8"), encoding="utf-8")
    _copy(tmp_path, lambda d: d.update(id="extra", order=6))
    assert [p.id for p in load_plans(tmp_path)][-1] == "extra"


def test_ruleset_maps_protocol_names_to_keys() -> None:
    from hivedlab.checker.plans import to_ruleset

    rules = to_ruleset(load_plan("priority"))
    assert rules.job_names == {"job-config-1": "low", "job-config-2": "high"}
    assert rules.questions[0].en == "Does the later job run only after the earlier job has finished?"
    assert [r["kind"] for r in rules.rules] == ["preempts", "retried-after", "placement"]


def test_every_rule_kind_in_the_schema_is_implemented() -> None:
    import json

    from hivedlab.basics.resources import SCHEMAS
    from hivedlab.checker.verdicts import RULE_KINDS

    schema = json.loads((SCHEMAS / "experiment-plan.schema.json").read_text(encoding="utf-8"))
    assert set(schema["$defs"]["rule"]["properties"]["kind"]["enum"]) == set(RULE_KINDS)
