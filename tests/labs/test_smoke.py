"""The smoke test of manual step 3.2: a plan run and judged like the experiments, but not one of the five."""

from __future__ import annotations

import json
from pathlib import Path

from hivedlab.checker.plans import load_plan, load_plans

ROOT = Path(__file__).resolve().parent.parent.parent


def test_smoke_is_not_one_of_the_five_experiments():
    assert "smoke" not in {plan.id for plan in load_plans()} and len(load_plans()) == 5
    plan = load_plan("smoke")
    assert plan.manual_step == "3.2" and plan.hived_config == "one-vc"


def test_every_member_submits_one_job_that_waits_then_runs(cli, tmp_path):
    result = cli("run", "smoke", "--out", str(tmp_path), "--no-report", "--lang", "en")
    assert result.code == 0, result.out + result.err
    judged = cli("check", str(tmp_path / "experiments" / "smoke" / "evidence.jsonl"), "--format", "json")
    assert judged.code == 0, judged.out + judged.err
    verdict = json.loads(judged.out)
    assert verdict["experiment"] == "smoke" and verdict["verdict"] == "consistent"
    answer = verdict["answers"][0]["answer"]["en"]
    for user in ("alice", "bob", "carol", "dan"):
        assert f"{user}'s job-smoke-test-{user}-smoke-s1 ran on" in answer


def test_the_smoke_job_is_valid_for_openpai(cli):
    result = cli("validate", str(ROOT / "jobs" / "job-smoke-test.yaml"))
    assert result.code == 0, result.out
