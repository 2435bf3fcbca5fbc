"""The report of a real simulated run (`hivedlab run all`): five rows, and facts that give docs/lab-experiments.md's
answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.report_checks import ROWS_ZH, check_html, check_lab6_answers, table_rows
from tests.support.sim_lab import SimLab


@pytest.fixture
def sim_run(sim_lab: SimLab) -> Path:
    assert sim_lab.code == 0, sim_lab.stderr
    return sim_lab.out


def test_simulated_run_report_has_the_five_rows(sim_run):
    rows = table_rows((sim_run / "report.md").read_text(encoding="utf-8"), "实验名称")
    assert [r[0] for r in rows] == ROWS_ZH
    assert all("T+0:" not in r[1] for r in rows)  # short answers; the timelines are in the details
    # the simulator makes HiveD's decisions, so the checker finds every experiment consistent
    assert all(r[1].startswith("**与 HiveD 的行为一致**") for r in rows), [r[1][:80] for r in rows]


def test_simulated_run_facts_give_the_lab6_answers(sim_run):
    data = json.loads((sim_run / "claims.json").read_text(encoding="utf-8"))
    assert data["simulated"] is True
    check_lab6_answers({e["id"]: e for e in data["experiments"]})


def test_simulated_run_html_is_valid(sim_run):
    check_html(sim_run / "report.html")


def test_an_optional_experiment_gets_its_own_section(sim_lab: SimLab, tmp_path, quick_charts):
    """`hivedlab run reconfig` into a folder that holds the five: the manual's table keeps its five rows, and the
    optional experiment is reported after the main ones, under a heading of its own."""
    from hivedlab.cli.main import main

    out = sim_lab.copy_to(tmp_path)
    assert main(["run", "reconfig", "--out", str(out)]) == 0
    text = (out / "report.md").read_text(encoding="utf-8")
    assert [r[0] for r in table_rows(text, "实验名称")] == ROWS_ZH
    details, optional = text.split("## 实验详情", 1)[1].split("## 选做实验", 1)
    assert "运行中切换调度器配置" not in details and details.count("\n### ") == 5
    section = optional.split("\n## ", 1)[0]
    assert "### 6. 运行中切换调度器配置" in section and "**与 HiveD 的行为一致**" in section
    assert "jobs/reconfig/" in section and "observations-reconfig" in section
    claims = json.loads((out / "claims.json").read_text(encoding="utf-8"))
    assert [e["id"] for e in claims["experiments"]][-1] == "reconfig"
    check_html(out / "report.html")


def test_a_run_of_only_the_optional_experiment_says_so(tmp_path, quick_charts):
    from hivedlab.cli.main import main

    out = tmp_path / "out"
    assert main(["run", "reconfig", "--out", str(out), "--lang", "en"]) == 0
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "holds no main experiment; the optional ones follow below" in text
    assert "## Optional experiments" in text and "### 1. Switching the scheduler config while jobs run" in text
