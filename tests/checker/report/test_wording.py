"""The report's and the verdicts' wording (issue #38's list): no stray spaces around a Chinese name, "使用了 VC vc1",
the two jobs named instead of "both", "the cells of the idle VC", one instant said once, a note in the report's
language, no fix hint for a file meant to be refused, and no absolute path in what a run writes."""

from __future__ import annotations

import json

from hivedlab.basics.text import Text
from hivedlab.checker.report.context import problem_line, run_span
from hivedlab.checker.report.whose import tight
from tests.support.paths import ROOT

EXAMPLE = (ROOT / "configs" / "group.example.yaml").read_text(encoding="utf-8")
CHINESE = EXAMPLE.replace("Alice", "张三").replace("Bob", "李四").replace("Carol", "王五").replace("Dan", "赵六")


def _answers(out, experiment: str, lang: str) -> str:
    verdict = json.loads((out / "experiments" / experiment / "verdicts.json").read_text(encoding="utf-8"))
    return " ".join(answer["answer"][lang] for answer in verdict["answers"])


def test_no_space_between_chinese_words_but_beside_latin_ones():
    assert tight("（张三、李四 依次各做一遍；下面是 张三 的运行）") == "（张三、李四依次各做一遍；下面是张三的运行）"
    latin = "（Alice、Bob 依次各做一遍；下面是 Alice 的运行）"
    assert tight(latin) == latin


def test_a_report_of_chinese_names_has_no_stray_spaces(cli, tmp_path, quick_charts):
    inventory = tmp_path / "group.yaml"
    inventory.write_text(CHINESE, encoding="utf-8")
    out = tmp_path / "out"
    assert cli("run", "priority", "--each-member", "--inventory", str(inventory), "--out", str(out)).code == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "（张三、李四、王五、赵六依次各做一遍；下面是张三的运行）" in report
    assert "- 以下细节为张三的运行。" in report and "下面是 张三" not in report


def test_the_verdicts_words(sim_lab):
    assert "使用了 VC vc1 配额之外的空闲 GPU" in _answers(sim_lab.out, "opportunistic", "zh")
    assert "使用了VC" not in _answers(sim_lab.out, "opportunistic", "zh")
    assert "never placed on the cells of the idle VC default" in _answers(sim_lab.out, "vc-safety", "en")
    assert "job-config-1 和 job-config-2 都已结束" in _answers(sim_lab.out, "priority", "zh")
    assert "job-config-1 and job-config-2 were both done" in _answers(sim_lab.out, "priority", "en")
    assert "both were done" not in _answers(sim_lab.out, "priority", "en")


def test_one_instant_is_said_once():
    assert run_span("2026-11-29 00:22:52 UTC", "2026-11-29 00:22:52 UTC") == {
        "started": "2026-11-29 00:22:52 UTC", "finished": ""}
    assert run_span("2026-11-29 00:22:52 UTC", "2026-11-29 00:23:10 UTC")["finished"] == "00:23:10 UTC"
    assert run_span("2026-11-29 23:59:59 UTC", "2026-11-30 00:00:01 UTC")["finished"] == "2026-11-30 00:00:01 UTC"


def test_a_note_is_in_the_reports_language():
    said = Text("缺少 experiments/gang/verdicts.json", "experiments/gang/verdicts.json is missing")
    assert problem_line(said, "zh") == "注意：缺少 experiments/gang/verdicts.json"
    assert problem_line(said, "en") == "Note: experiments/gang/verdicts.json is missing"
    assert problem_line("a timeline could not be built", "zh") == "Note: a timeline could not be built"


def test_a_missing_verdict_file_is_noted_in_chinese(cli, sim_lab, tmp_path):
    out = sim_lab.copy_to(tmp_path)
    (out / "experiments" / "gang" / "verdicts.json").unlink()
    assert cli("report", str(out)).code == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert (out / "experiments" / "gang" / "verdicts.json").is_file()  # `report` judged the log again and wrote it
    assert "缺少 experiments/gang/verdicts.json" not in report and "注意：experiments" not in report


def test_a_file_meant_to_be_refused_gets_no_fix_hint(cli):
    result = cli("validate", "jobs/rejected")
    assert result.code == 0 and "expected rejection: [one-vc.yaml] Job requests 4 SKUs" in result.out
    assert "(HTTP 400 InvalidProtocolError)  (/taskRoles)" in result.out and "ask for fewer cells" not in result.out
    assert "ask for fewer cells" in cli("validate", "jobs/rejected/job-over-quota-gang.yaml").out  # named: an error


def test_no_file_a_run_writes_holds_an_absolute_path(sim_lab):
    verdict = json.loads((sim_lab.out / "experiments" / "gang" / "verdicts.json").read_text(encoding="utf-8"))
    assert verdict["log"]["path"] == "experiments/gang/evidence.jsonl"
    written = [p for p in sim_lab.out.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".md", ".yaml")]
    assert written and [p for p in written if str(sim_lab.out) in p.read_text(encoding="utf-8")] == []
