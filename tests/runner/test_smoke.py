"""The smoke test of manual step 3.2: a plan run and judged like the experiments, but not one of the five."""

from __future__ import annotations

import json

from hivedlab.plans.loader import load_plan, load_plans, main_plans
from tests.support.paths import ROOT


def test_smoke_is_not_one_of_the_five_experiments():
    assert "smoke" not in {plan.id for plan in load_plans()} and len(main_plans()) == 5
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


def test_the_report_gives_the_smoke_test_a_section_not_a_row(cli, tmp_path):
    assert cli("run", "smoke", "--out", str(tmp_path), "--lang", "zh").code == 0
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "**部署后的冒烟测试（手册 3.2）**：与 HiveD 的行为一致（证据来自模拟集群）。" in report
    assert "| 冒烟测试 |" not in report and "### 1. 冒烟测试" not in report
    claims = json.loads((tmp_path / "claims.json").read_text(encoding="utf-8"))
    assert [e["id"] for e in claims["experiments"]] == []
    english = cli("report", str(tmp_path), "--lang", "en", "--out", str(tmp_path / "en"))
    assert english.code == 0, english.err
    text = next((tmp_path / "en").glob("report*.md")).read_text(encoding="utf-8")
    assert "**Smoke test after deployment (manual step 3.2)**: consistent" in text
    assert "| job-smoke-test (carol) | smoke-0 | 1 | hostname-carol (GPU 0) |" in text
