"""The whole report from the fixture run directory: the five rows' answers, HTML, claims.json, kept free text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from hivedlab.checker.report.build import build_report
from hivedlab.checker.report.freetext import block, extract
from tests.support.paths import FIXTURES
from tests.support.quick_charts import stub_charts
from tests.support.report_checks import ROWS_ZH, check_html, check_lab6_answers, claims_of, table_rows

RUN_SIM = FIXTURES / "report" / "run-sim"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("built") / "run"
    shutil.copytree(RUN_SIM, run)
    with pytest.MonkeyPatch.context() as patch:
        stub_charts(patch)  # the charts themselves: test_charts.py, and the odd-id test below
        build_report(run, "zh")
    return run


def test_five_rows_in_the_manuals_order_and_wording(built):
    rows = table_rows((built / "report.md").read_text(encoding="utf-8"), "实验名称")
    assert [r[0] for r in rows] == ROWS_ZH
    assert all(r[1].startswith("**与 HiveD 的行为一致**") for r in rows)


def test_rows_give_short_answers_and_the_details_the_verdicts_answers_with_times_and_nodes(built):
    md = (built / "report.md").read_text(encoding="utf-8")
    rows = {r[0]: r for r in table_rows(md, "实验名称")}
    # a verdict without summaries (an older checker's): each answer's first statement, up to its colon or full stop
    assert "后提交的 prod 任务 job-config-2 没有等待。" in rows[ROWS_ZH[1]][1]
    assert "T+0:01:01 抢占了" not in rows[ROWS_ZH[1]][1]
    details = md.split("## 实验详情", 1)[1]
    assert "没有被调度到空闲的 default VC 的机器" in details
    assert "T+0:01:01 抢占了 hostname-dan 上的 test 任务" in details
    assert "Job requests 4 SKUs, exceeds maximum 2 SKUs in VC default." in details
    assert "| job-over-quota-gang | — | — | — | — | — | — | T+0:07:10 提交时被拒绝（HTTP 400） |" in details


def test_the_facts_give_lab6_experiments_answers(built):
    check_lab6_answers(claims_of(built))


def test_claims_hold_verdicts_answers_and_files(built):
    data = json.loads((built / "claims.json").read_text(encoding="utf-8"))
    assert data["format"] == "hivedlab-claims/1" and data["simulated"] is True and data["cluster"] == "sim"
    gang = claims_of(built)["gang"]
    assert gang["verdict"] == "consistent" and gang["answers"][0]["question"] == 0
    assert gang["answers"][0]["question_text"].startswith("后提交的任务什么时候开始运行")
    assert gang["answers"][1]["evidence"] == [12, 13]
    for path in [*gang["files"]["jobs"], gang["files"]["evidence"], gang["files"]["chart_png"]]:
        assert (built / path).is_file()


def test_report_says_the_evidence_is_simulated(built):
    md = (built / "report.md").read_text(encoding="utf-8")
    assert "本报告的证据来自 hivedlab 内置的模拟集群" in md
    env = table_rows(md, "Users")
    assert env[0][2:] == ["模拟集群，无此记录"] * 4  # no invented machines


def test_html_is_valid_self_contained_and_links_only_existing_files(built):
    checker = check_html(built / "report.html")
    assert checker.tags.count("svg") == 5 and "img" not in checker.tags
    local = [r for r in checker.refs if not r.startswith("#") and not urlparse(r).scheme]
    assert local, "the report links its job configs and evidence"
    missing = [r for r in local if not (built / unquote(r)).exists()]
    assert missing == []


def test_charts_sit_beside_the_report(built):
    for exp in ("vc-safety", "priority", "opportunistic", "gang", "incremental"):
        assert (built / "experiments" / exp / "timeline.png").read_bytes().startswith(b"\x89PNG")
        assert "<svg" in (built / "experiments" / exp / "timeline.svg").read_text(encoding="utf-8")


def test_regenerating_keeps_the_students_text_even_in_another_language(run_dir, quick_charts):
    build_report(run_dir, "zh")
    md_path = run_dir / "report.md"
    text = md_path.read_text(encoding="utf-8")
    mine = "部署时 kubespray 超时：换了镜像源后重试成功。\n\n![UI](shots/ui.png) | *重点*"
    text = text.replace(block("deploy", "（在此填写。）"), block("deploy", mine))
    text = text.replace(block("observations-gang", "（在此填写。）"),
                        block("observations-gang", "两个子任务同时开始。"))
    md_path.write_text(text, encoding="utf-8")
    build_report(run_dir, "en")
    kept = extract(md_path.read_text(encoding="utf-8"))
    assert kept["deploy"] == mine and kept["observations-gang"] == "两个子任务同时开始。"
    assert "Using different scheduling policies" in md_path.read_text(encoding="utf-8")


def test_report_elsewhere_links_back_to_the_run(run_dir, tmp_path, quick_charts):
    out = tmp_path / "site"
    build_report(run_dir, "en", out)
    checker = check_html(out / "report.html")
    local = [r for r in checker.refs if not r.startswith("#") and not urlparse(r).scheme]
    assert any("evidence.jsonl" in r for r in local)
    assert [r for r in local if not (out / unquote(r)).exists()] == []
    assert not (run_dir / "report.md").exists()


def test_an_experiment_id_with_odd_characters_keeps_its_chart_and_free_text(run_dir):
    odd = "x|y*<b> &z"
    experiments = run_dir / "experiments"
    (experiments / "gang").rename(experiments / odd)
    for other in ("vc-safety", "priority", "opportunistic", "incremental"):
        shutil.rmtree(experiments / other)
    build_report(run_dir, "en")
    md_path = run_dir / "report.md"
    text = md_path.read_text(encoding="utf-8")
    assert "| x\\|y\\*&lt;b&gt; &amp;z |" in text
    fresh = extract(text)
    (block_id,) = [b for b in fresh if b.startswith("observations-")]
    md_path.write_text(text.replace(block(block_id, fresh[block_id]), block(block_id, "kept")), encoding="utf-8")
    build_report(run_dir, "en")
    assert extract(md_path.read_text(encoding="utf-8"))[block_id] == "kept"
    checker = check_html(run_dir / "report.html")
    assert checker.tags.count("svg") == 1 and "img" not in checker.tags
    local = [r for r in checker.refs if not r.startswith("#") and not urlparse(r).scheme]
    assert [r for r in local if not (run_dir / unquote(r)).exists()] == []
