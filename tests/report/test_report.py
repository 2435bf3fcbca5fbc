"""The whole report from the fixture run directory: the five rows' answers, HTML, claims.json, kept free text."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from checker.report import build_report
from checker.report_freetext import block, extract

RUN_SIM = Path(__file__).resolve().parents[1] / "fixtures" / "report" / "run-sim"
ROWS_ZH = ["VC 安全 (VC Safety)", "优先级和抢占 (Priority and Preemption)", "低优先级任务 (Opportunistic Job)",
           "群调度 (Gang Scheduling)", "弹性调度 (Incremental Scheduling)"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("built") / "run"
    shutil.copytree(RUN_SIM, run)
    build_report(run, "zh")
    return run


def table_rows(md: str, first_header: str) -> list[list[str]]:
    """The body rows of the Markdown table whose header starts with `first_header` (cells split on unescaped |)."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells, current, escaped = [], "", False
        for char in line.strip()[1:-1]:
            if char == "|" and not escaped:
                cells.append(current.strip())
                current = ""
            else:
                current += char
            escaped = char == "\\" and not escaped
        rows.append([*cells, current.strip()])
    return rows


def claims_of(run: Path) -> dict:
    return {e["id"]: e for e in json.loads((run / "claims.json").read_text(encoding="utf-8"))["experiments"]}


def ran(facts: list[dict], job: str, attempt: int = 0, task: str = "train-0") -> dict:
    return next(f for f in facts if f["job"] == job and f["attempt"] == attempt and f["task"] == task)


def test_five_rows_in_the_manuals_order_and_wording(built):
    rows = table_rows((built / "report.md").read_text(encoding="utf-8"), "实验名称")
    assert [r[0] for r in rows] == ROWS_ZH
    assert all(r[1].startswith("**与 HiveD 的行为一致**") for r in rows)


def test_rows_carry_the_verdicts_answers_with_times_and_nodes(built):
    rows = {r[0]: r for r in table_rows((built / "report.md").read_text(encoding="utf-8"), "实验名称")}
    assert "hostname-dan" in rows[ROWS_ZH[0]][1] and "没有被调度到空闲的 default VC 的机器" in rows[ROWS_ZH[0]][1]
    assert "T+0:01:01 抢占了 hostname-dan 上的 test 任务" in rows[ROWS_ZH[1]][1]
    assert "Job requests 4 SKUs, exceeds maximum 2 SKUs in VC default." in rows[ROWS_ZH[4]][1]
    assert "job-over-quota-gang 于 T+0:07:10 提交时被拒绝（HTTP 400：Job requests 4 SKUs" in rows[ROWS_ZH[4]][1]
    for row in rows.values():
        assert "T+0:" in row[1] and "hostname-" in row[1]


def test_the_facts_give_lab6_experiments_answers(built):
    check_lab6_answers(claims_of(built))


def check_lab6_answers(claims: dict) -> None:
    """The report's facts per experiment give spec/lab6-experiments.md's answers (order and overlap, not durations)."""
    # 4.2: every vc1 job ran on Dan's machine, one after another; none on the idle default VC's machine.
    vc = [f for f in claims["vc-safety"]["facts"] if f["start_s"] is not None]
    assert {f["node"] for f in vc} == {"hostname-dan"} and len(vc) == 4
    spans = sorted((f["start_s"], f["end_s"]) for f in vc)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
    # 4.3: the prod job preempted the test job at once; the test job re-ran after it.
    pr = claims["priority"]["facts"]
    low0, high, low1 = ran(pr, "job-config-1"), ran(pr, "job-config-2"), ran(pr, "job-config-1", 1)
    assert low0["preempted"] and low0["end_s"] <= high["bound_s"] < low0["start_s"] + 120
    assert low1["recreated"] and low1["start_s"] >= high["end_s"]
    # 4.4: oppo starts at once on Carol's idle node, is preempted by the default VC's test job, then runs on Dan's.
    op = claims["opportunistic"]["facts"]
    prod, oppo0, guest, oppo1 = (ran(op, "job-config-3"), ran(op, "job-config-4"), ran(op, "job-default-test"),
                                 ran(op, "job-config-4", 1))
    assert oppo0["node"] == "hostname-carol" and oppo0["start_s"] < prod["end_s"] and oppo0["preempted"]
    assert guest["node"] == "hostname-carol" and oppo1["node"] == "hostname-dan" and oppo1["start_s"] >= prod["end_s"]
    # 4.6: both gang tasks bind in the same round, only after job-config-5 ends.
    gg = claims["gang"]["facts"]
    g0, g1 = ran(gg, "job-config-6"), ran(gg, "job-config-6", task="train-1")
    assert g0["bound_s"] == g1["bound_s"] >= ran(gg, "job-config-5")["end_s"]
    assert g0["waiting_s"] and g1["waiting_s"]
    assert {g0["node"], g1["node"]} == {"hostname-carol", "hostname-dan"}
    # 4.7: task 0 starts while job-config-5 runs; task 1 only after it ends.
    assert claims["incremental"]["rejections"][0]["status"] == 400
    inc = claims["incremental"]["facts"]
    holder, e0, e1 = ran(inc, "job-config-5"), ran(inc, "job-config-7"), ran(inc, "job-config-7", task="train-1")
    assert e0["start_s"] < holder["end_s"]
    assert e1["waiting_s"] and e1["waiting_s"][0][0] < holder["end_s"]
    assert e1["start_s"] is None or e1["start_s"] >= holder["end_s"]  # or task 0 succeeded first: never ran


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


class _Checker(HTMLParser):
    VOID = {"meta", "br", "hr", "img", "link", "input", "col", "area", "base", "source", "wbr"}
    BLOCK = {"figure", "table", "div", "ul", "ol", "p", "h1", "h2", "h3", "h4", "blockquote", "pre"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.refs: list[str] = []
        self.tags: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.ids += [v for k, v in attrs if k == "id"]
        if tag in self.BLOCK and "p" in self.stack:
            self.errors.append(f"<{tag}> inside <p>")
        self.refs += [v for k, v in attrs if k in ("href", "src", "xlink:href") and v]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.ids += [v for k, v in attrs if k == "id"]
        self.refs += [v for k, v in attrs if k in ("href", "src", "xlink:href") and v]

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def check_html(path: Path) -> _Checker:
    checker = _Checker()
    checker.feed(path.read_text(encoding="utf-8"))
    checker.close()
    assert checker.errors == [] and checker.stack == []
    assert len(checker.ids) == len(set(checker.ids)), "ids are unique across the inline charts"
    inner = {r[1:] for r in checker.refs if r.startswith("#")}
    assert inner <= set(checker.ids), "every #reference resolves"
    return checker


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
    text = text.replace(block("observations-gang", "（在此填写。）"), block("observations-gang", "两个子任务同时开始。"))
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
