"""The report of `hivedlab run all` read as a student would, in Chinese and in English: every sentence agrees with
the evidence, the table beside it and itself (one clock, the right outcome labels, the right labels over answers),
the results table is short, the typography is right, and the group's own explanations have their place."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

import pytest

from hivedlab.basics.text import first_statement
from hivedlab.cli.main import main
from tests.support.report_checks import table_rows

LANGS = ("zh", "en")
NUMBER = {"vc-safety": 1, "priority": 2, "opportunistic": 3, "gang": 4, "incremental": 5}
HEADER = {"zh": "实验名称", "en": "Experiment"}


def section(report: str, experiment: str) -> str:
    """The per-experiment section `### N. …` up to the next heading of its level or above."""
    start = report.index(f"\n### {NUMBER[experiment]}. ")
    end = re.compile(r"\n#{2,3} ").search(report, start + 1)
    return report[start:end.start() if end else len(report)]


def bullets(text: str) -> list[str]:
    """The section's answer bullets (a question's label and its answers, nested answers joined)."""
    found: list[str] = []
    for line in text.splitlines():
        if line.startswith("- *"):
            found.append(line)
        elif line.startswith("    - ") and found:
            found[-1] += " " + line.strip()
    return found


def rows(text: str, lang: str) -> list[list[str]]:
    return table_rows(text, "任务" if lang == "zh" else "Job")


def row(text: str, lang: str, job: str, task: str = "train-0", attempt: str = "1") -> list[str]:
    return next(r for r in rows(text, lang) if r[:3] == [job, task, attempt])


def as_clock(since: str, zero: str) -> str:
    """A table's T+h:mm:ss as the clock time the sentences print (T+0 is printed in the section)."""
    h, m, s = (int(x) for x in since.removeprefix("T+").split(":"))
    start = datetime.strptime(zero, "%H:%M:%S")
    return (start + timedelta(hours=h, minutes=m, seconds=s)).strftime("%H:%M:%S")


def blocks(report: str) -> int:
    return len(re.findall(r"^<!-- hivedlab:free-text \S+ -->$", report, re.MULTILINE))


def zero_of(text: str) -> str:
    match = re.search(r"T\+0 = (\d\d:\d\d:\d\d)", text)
    assert match, "the section says when T+0 is"
    return match.group(1)


@pytest.mark.parametrize("lang", LANGS)
def test_the_header_shows_the_wall_clock_to_the_second_and_names_the_simulated_clock(sim_reports, lang):
    report = sim_reports[lang]
    assert not re.search(r"\d\d:\d\d:\d\d\.\d", report), "no time with a fraction of a second anywhere"
    header = report.split("\n## ", 1)[0]
    assert ("计算机时钟" if lang == "zh" else "computer clock") in header
    assert ("模拟时钟" if lang == "zh" else "simulated clock") in header
    for experiment in NUMBER:
        assert ("（模拟时钟）" if lang == "zh" else "(simulated clock)") in section(report, experiment)


@pytest.mark.parametrize("lang", LANGS)
def test_one_instant_prints_with_one_second_in_the_sentence_and_the_table(sim_reports, lang):
    priority = section(sim_reports[lang], "priority")
    ended = as_clock(row(priority, lang, "job-config-2")[5], zero_of(priority))
    assert (f"于 {ended} 结束之后" if lang == "zh" else f"ended at {ended}") in priority

    incremental = section(sim_reports[lang], "incremental")
    started = as_clock(row(incremental, lang, "job-config-7")[4], zero_of(incremental))
    assert (f"于 {started} 在 hostname-dan (GPU 0) 上开始运行" if lang == "zh"
            else f"started at {started} on hostname-dan (GPU 0)") in incremental


@pytest.mark.parametrize("lang", LANGS)
def test_a_delay_after_submission_is_the_difference_of_the_printed_times(sim_reports, lang):
    pattern = (r"于 (\S+) 提交，.*?于 (\S+) 在 \S+ \(GPU 0\) 上开始运行（提交后 (\d+) 秒）" if lang == "zh"
               else r"submitted at (\S+) while.*?started at (\S+) on \S+ \(GPU 0\), (\d+) s after submission")
    for experiment in ("priority", "opportunistic"):
        match = re.search(pattern, section(sim_reports[lang], experiment))
        assert match, experiment
        submitted, started = (datetime.strptime(match.group(i), "%H:%M:%S") for i in (1, 2))
        assert int(match.group(3)) == (started - submitted).seconds


@pytest.mark.parametrize("lang", LANGS)
def test_incremental_says_task_0_did_not_wait_and_task_1_never_ran_because_the_job_succeeded(sim_reports, lang):
    incremental = section(sim_reports[lang], "incremental")
    assert "—" in row(incremental, lang, "job-config-7", "train-1")[4], "on the manual's configs task 1 never runs"
    answer = next(b for b in bullets(incremental) if "minSucceededInstances" in b).split("*", 2)[2]  # without the label
    if lang == "zh":
        assert "0 号子任务没有等待整个任务" in answer and "1 号子任务等待空闲的 GPU" in answer and "从未运行" in answer
        assert "子任务先后运行" not in answer
    else:
        assert "Task 0 did not wait for the whole job" in answer and "task 1 waited for a free GPU" in answer
        assert "never ran" in answer and "one after the other" not in answer


@pytest.mark.parametrize("lang", LANGS)
def test_a_task_stopped_because_its_job_completed_is_neither_failed_nor_deleted(sim_reports, lang):
    stopped = "任务已完成，被停止" if lang == "zh" else "stopped: the job had completed"
    gang, incremental = section(sim_reports[lang], "gang"), section(sim_reports[lang], "incremental")
    for text, job in ((gang, "job-config-6"), (incremental, "job-config-7")):  # exit 143 once the other task had
        ends = {row(text, lang, job, task)[7] for task in ("train-0", "train-1")}  # succeeded (which: the seed)
        assert stopped in ends and len(ends) == 2, ends
    assert row(section(sim_reports[lang], "priority"), lang, "job-config-1")[7] == ("被抢占" if lang == "zh"
                                                                                       else "preempted")


@pytest.mark.parametrize("lang", LANGS)
def test_a_preemptor_whose_table_row_shows_a_wait_is_not_said_to_have_not_waited(sim_reports, lang):
    for experiment, job in (("priority", "job-config-2"), ("opportunistic", "job-default-test")):
        text = section(sim_reports[lang], experiment)
        waited = row(text, lang, job)[6]
        assert waited != "—", "the preemptor's pod waited while the victim's pod exited"
        until = as_clock(waited.split("–")[1], zero_of(text))
        answer = next(b for b in bullets(text) if "Preempted" in b)
        assert ("没有等待：" if lang == "zh" else "did not wait:") not in answer
        assert (f"只等待调度到 {until}" if lang == "zh" else f"waited to be scheduled only until {until}") in answer


@pytest.mark.parametrize("lang", LANGS)
def test_each_question_labels_its_own_answers_once(sim_reports, lang):
    for experiment in NUMBER:
        labels = [b.split("*")[1] for b in bullets(section(sim_reports[lang], experiment))]
        assert len(labels) == len(set(labels)), (experiment, labels)
    placement = next(b for b in bullets(section(sim_reports[lang], "priority")) if "vc1" in b and "hostname-dan" in b
                     and ("只运行在" in b or "ran only on" in b))
    assert ("恢复" if lang == "zh" else "recover") not in placement.split("*")[1]


def test_the_english_report_over_a_chinese_one_has_no_chinese_placeholder(sim_reports):
    english = sim_reports["en"]
    assert "（在此填写。）" not in english
    assert english.count("(Write here.)") == blocks(english)


@pytest.mark.parametrize("lang", LANGS)
def test_the_results_table_gives_short_answers_and_leaves_timelines_to_the_details(sim_reports, lang):
    report = sim_reports[lang]
    for name, phenomenon, _files in table_rows(report, HEADER[lang]):
        sentences = [s for s in re.split(r"<br/>", phenomenon)[1:] if not s.startswith(("（证据", "(evidence"))]
        assert len(sentences) == 1, name
        assert "T+" not in phenomenon and "seq" not in phenomenon, name
        assert not re.search(r"记录|record", phenomenon), name
        assert len(phenomenon) < 700, (name, len(phenomenon))
    for experiment in NUMBER:
        details = section(report, experiment)
        assert "T+0 = " in details and "seq " in details


def test_chinese_typography(sim_reports):
    report = sim_reports["zh"]
    for fault in ("？：", ".，", "。，", "（容差 0 秒）", "秒 都"):
        assert fault not in report, fault
    prose = re.sub(r"`[^`]*`", "code", report)
    assert not re.search(r"[\u4e00-\u9fff，。；：] [\u4e00-\u9fff，。；：]", prose), \
        re.search(r".{20}[\u4e00-\u9fff，。；：] [\u4e00-\u9fff，。；：].{20}", prose)


def test_english_phrasing(sim_reports):
    report = sim_reports["en"]
    assert "task(s)" not in report and "?:" not in report and " .," not in report
    assert "tasks 0 and 1 ran first while tasks 2 and 3 waited" in report


@pytest.mark.parametrize("lang", LANGS)
def test_every_experiment_asks_for_the_groups_own_explanation(sim_reports, lang):
    for experiment in NUMBER:
        text = section(sim_reports[lang], experiment)
        assert f"<!-- hivedlab:free-text explanation-{experiment} -->" in text
        assert ("我们的解释：" if lang == "zh" else "Our explanation: ") in text


def test_explanations_are_kept_when_the_report_is_rendered_again(sim_lab, tmp_path):
    out = sim_lab.copy_to(tmp_path)
    report = out / "report.md"
    mine = "HiveD 按 cell 分配：job-config-6 的两个子任务属于同一个 affinity group，只能一起放下。"
    text = report.read_text(encoding="utf-8")
    marker = "<!-- hivedlab:free-text explanation-gang -->\n\n（在此填写。）"
    assert marker in text
    report.write_text(text.replace(marker, f"<!-- hivedlab:free-text explanation-gang -->\n\n{mine}"), encoding="utf-8")
    assert main(["report", str(out), "--lang", "en"]) == 0
    again = report.read_text(encoding="utf-8")
    assert mine in section(again, "gang")
    assert again.count("(Write here.)") == blocks(again) - 1


def test_an_answer_without_a_summary_is_shown_by_its_first_statement_outside_brackets():
    assert (first_statement("任务按提交顺序一个接一个地运行：alice 的 a 08:00:05–08:01:06。", "zh")
            == "任务按提交顺序一个接一个地运行。")
    blocked = "(the hash chain is broken at record 7: the log was edited; not evidence) Every job ran on vc1. More."
    assert first_statement(blocked, "en") == blocked.split(" More.")[0]
    assert first_statement("无句号的回答", "zh") == "无句号的回答"


def test_several_answers_to_one_question_are_a_nested_list_in_the_html(sim_lab):
    html = (sim_lab.out / "report.html").read_text(encoding="utf-8")
    assert re.search(r"4 GPU）的任务？</em>\s*<ul>\s*<li>job-over-quota-gang 不能提交：", html)


def test_a_rejected_job_is_named_not_a_flat_no(sim_lab):
    """The same question's other answer says a non-gang job of that size is accepted: a bare "不能：" contradicted
    it."""
    verdict = json.loads((sim_lab.out / "experiments" / "incremental" / "verdicts.json").read_text(encoding="utf-8"))
    (answer,) = [a for a in verdict["answers"] if a["rule"] == "over-quota-gang-rejected"]
    assert answer["answer"]["zh"].startswith("job-over-quota-gang 不能提交：alice 的 job-over-quota-gang-")
    assert answer["answer"]["en"].startswith("job-over-quota-gang cannot be submitted: alice's job-over-quota-gang-")
    assert not answer["answer"]["zh"].startswith("不能") and not answer["summary"]["en"].startswith("No:")


def test_t_plus_counts_from_the_whole_second_of_the_first_record():
    from types import SimpleNamespace

    from hivedlab.checker.report.context import since_start

    exp = SimpleNamespace(timeline=SimpleNamespace(into_second=0.7))  # the first record at 10:00:00.7
    since = since_start(exp)  # an instant 10:01:10.2 is 69.5 s after the first record
    assert since(69.5) == "T+0:01:10" and since(None) == ""


@pytest.mark.parametrize("lang", LANGS)
def test_every_start_a_sentence_names_is_a_start_in_the_table(sim_reports, lang):
    pattern = (r"于 (\d\d:\d\d:\d\d) 在 (\S+ \(GPU \d+\)) 上开始运行" if lang == "zh"
               else r"started at (\d\d:\d\d:\d\d) on (\S+ \(GPU \d+\))")
    checked = 0
    for experiment in NUMBER:
        text = section(sim_reports[lang], experiment)
        starts = {(as_clock(r[4], zero_of(text)), r[3]) for r in rows(text, lang) if r[4].startswith("T+")}
        for match in re.finditer(pattern, text):
            assert (match.group(1), match.group(2)) in starts, (experiment, match.group(0))
            checked += 1
    assert checked >= 5


def test_a_priority_answer_names_each_job_in_full_once(sim_lab):
    """The full run name once, then the job's short name: one bullet used to repeat "alice 的 job-config-1-…" five
    times."""
    verdict = json.loads((sim_lab.out / "experiments" / "priority" / "verdicts.json").read_text(encoding="utf-8"))
    for answer in verdict["answers"]:
        for lang, owner in (("zh", "alice 的 "), ("en", "alice's ")):
            text = answer["answer"][lang]
            for job in ("job-config-1", "job-config-2"):
                assert text.count(f"{owner}{job}-alice-priority") <= 1, (answer["rule"], lang, text)
