"""What the report notes about a damaged evidence log is said in the report's language: Chinese in the Chinese
report, and in the English report word for word what it said before the warnings were made in both languages."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.basics.text import Text
from hivedlab.checker.report.build import render_markdown
from hivedlab.checker.report.inputs import load_run
from hivedlab.checker.report.timeline import timeline_for_chart
from hivedlab.cli.main import main
from tests.support.damaged_logs import (
    Damage,
    broken_chain,
    cut_last_record,
    edited_and_mixed,
    emptied,
    no_config,
    orphan_pod_events,
)

CASES: dict[str, tuple[Damage, dict[str, list[str]]]] = {
    "broken chain": (broken_chain, {
        "zh": ["注意：gang/evidence.jsonl：第 3 行：序号 2 的记录被改动过（哈希不符）",
               "注意：gang/evidence.jsonl：第 5 行：记录序号是 5，应当是 4",
               "注意：gang/evidence.jsonl：第 5 行：序号 5 的记录接不上它前一条记录的哈希链",
               "注意：gang/evidence.jsonl：另有 1 条警告"],
        "en": ["Note: gang/evidence.jsonl: line 3: seq 2 was altered (hash mismatch)",
               "Note: gang/evidence.jsonl: line 5: seq 5 where 4 was expected",
               "Note: gang/evidence.jsonl: line 5: seq 5 does not chain to the record before it",
               "Note: gang/evidence.jsonl: 1 more warning(s)"],
    }),
    "cut last record": (cut_last_record, {
        "zh": ["注意：gang/evidence.jsonl：第 20 行：不是 JSON 记录（日志以一条被截断的记录结尾，例如崩溃之后；"
               "已读到最后一条完整的记录）"],
        "en": ["Note: gang/evidence.jsonl: line 20: not a JSON record (the log ends in a cut record, e.g. after a "
               "crash; read up to the last whole record)"],
    }),
    "orphan pod events": (orphan_pod_events, {
        "zh": ["注意：gang/evidence.jsonl：1 个 Pod 有事件，却从未出现在日志中"],
        "en": ["Note: gang/evidence.jsonl: 1 pod(s) had events but never appeared in the log"],
    }),
    "edited and mixed": (edited_and_mixed, {
        "zh": ["注意：gang/evidence.jsonl：第 4 行：日志混有两种来源：sim 和 k8s",
               "注意：gang/evidence.jsonl：第 7 行：不是 JSON 记录：日志里被放进了不是记录的一行（被编辑过）"],
        "en": ["Note: gang/evidence.jsonl: line 4: the log mixes sources sim and k8s",
               "Note: gang/evidence.jsonl: line 7: not a JSON record: a line that is not a record was put into the "
               "log (edited)"],
    }),
    "unknown config": (no_config, {
        "zh": ["注意：不知道实验用的是哪份 HiveD 配置：图中不画 VC 的边界"],
        "en": ["Note: the HiveD config used is unknown: the chart shows no VC boundaries"],
    }),
    "no records": (emptied, {
        "zh": ["注意：gang/evidence.jsonl：日志中没有任何记录"],
        "en": ["Note: gang/evidence.jsonl: the log holds no records"],
    }),
}


def _notes(md: str) -> list[str]:
    """The report's problem lines, in order (the intact fixture's report has none)."""
    return [line[2:] for line in md.splitlines() if line.startswith(("- 注意：", "- Note: "))]


@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_log_is_noted_in_the_reports_language(run_dir: Path, case: str) -> None:
    damage, expected = CASES[case]
    damage(run_dir / "experiments" / "gang" / "evidence.jsonl")
    inputs = load_run(run_dir)
    assert {lang: _notes(render_markdown(inputs, lang, run_dir, {}, None)) for lang in expected} == expected


def test_a_log_that_cannot_be_read_or_folded_is_noted_in_both_languages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "gang" / "evidence.jsonl"
    folder.mkdir(parents=True)
    unreadable, empty = timeline_for_chart(folder).problems
    assert unreadable.en.startswith(f"gang/evidence.jsonl: cannot read {folder}: ")
    assert unreadable.zh.startswith(f"gang/evidence.jsonl：无法读取 {folder}：")
    assert empty == Text("gang/evidence.jsonl：日志中没有任何记录", "gang/evidence.jsonl: the log holds no records")

    def fail(records: object) -> None:
        raise ValueError("a record the timeline cannot fold")

    monkeypatch.setattr("hivedlab.checker.report.timeline.build_timeline", fail)
    (problem,) = timeline_for_chart(folder).problems
    assert problem.en == "gang/evidence.jsonl: no timeline could be built (a record the timeline cannot fold)"
    assert problem.zh == "gang/evidence.jsonl：无法构建时间线（a record the timeline cannot fold）"


@pytest.mark.usefixtures("quick_charts")
def test_hivedlab_report_prints_them_in_its_language(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut_last_record(run_dir / "experiments" / "gang" / "evidence.jsonl")
    (zh,), (en,) = CASES["cut last record"][1].values()
    for lang, line in (("zh", zh), ("en", "note: " + en.removeprefix("Note: "))):  # the report's lines, on stderr
        assert main(["report", str(run_dir), "--lang", lang, "--out", str(tmp_path / lang)]) == 0
        assert [said for said in capsys.readouterr().err.splitlines() if "gang/evidence.jsonl" in said] == [line]
