"""What `hivedlab check` says about a damaged evidence log, and why it refuses a log, is said in its --lang: Chinese
with `--lang zh`, and with `--lang en` word for word what it said before these lines existed in both languages. The
JSON outputs (`--format json`, verdicts.json) hold the English warnings whatever the language."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.damaged_logs import Damage, broken_chain, cut_last_record, emptied, lines_put_in, plan_renamed
from tests.support.paths import FIXTURES

Cli = Callable[..., Any]
GANG = Path("experiments") / "gang" / "evidence.jsonl"
PRIORITY = Path("experiments") / "priority" / "evidence.jsonl"
WATCH = FIXTURES / "logs" / "watch-only-priority.jsonl"
CUT = ("line 20: not a JSON record (the log ends in a cut record, e.g. after a crash; read up to the last whole "
       "record)")
EDITED = "not a JSON record: a line that is not a record was put into the log (edited)"

CASES: dict[str, tuple[Damage, dict[str, list[str]]]] = {
    "broken chain": (broken_chain, {
        "zh": ["第 3 行：序号 2 的记录被改动过（哈希不符）",
               "第 5 行：记录序号是 5，应当是 4",
               "第 5 行：序号 5 的记录接不上它前一条记录的哈希链",
               "第 19 行：不是 JSON 记录（日志以一条被截断的记录结尾，例如崩溃之后；已读到最后一条完整的记录）"],
        "en": ["line 3: seq 2 was altered (hash mismatch)",
               "line 5: seq 5 where 4 was expected",
               "line 5: seq 5 does not chain to the record before it",
               CUT.replace("line 20", "line 19")],
    }),
    "cut last record": (cut_last_record, {
        "zh": ["第 20 行：不是 JSON 记录（日志以一条被截断的记录结尾，例如崩溃之后；已读到最后一条完整的记录）"],
        "en": [CUT],
    }),
    "six lines put in": (lines_put_in, {  # five shown, then how many more
        "zh": [*(f"第 {n} 行：不是 JSON 记录：日志里被放进了不是记录的一行（被编辑过）" for n in range(2, 7)),
               "… 另有 1 条警告"],
        "en": [*(f"line {n}: {EDITED}" for n in range(2, 7)), "… 1 more"],
    }),
}


def _warning_lines(out: str) -> list[str]:
    return [line.removeprefix("  ! ") for line in out.splitlines() if line.startswith("  ! ")]


@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_logs_warnings_are_printed_in_the_chosen_language(cli: Cli, run_dir: Path, case: str) -> None:
    damage, expected = CASES[case]
    damage(run_dir / GANG)
    printed = {lang: _warning_lines(cli("check", str(run_dir / GANG), "--lang", lang).out) for lang in expected}
    assert printed == expected
    data = json.loads(cli("check", str(run_dir / GANG), "--format", "json").out)
    english = [line for line in expected["en"] if not line.startswith("…")]
    assert data["log"]["warnings"][:5] == english


def test_a_run_directorys_logs_are_judged_in_the_chosen_language_and_verdicts_json_stays_english(
    cli: Cli, run_dir: Path
) -> None:
    broken_chain(run_dir / GANG)
    verdicts = run_dir / GANG.parent / "verdicts.json"
    written = {}
    for lang in ("zh", "en"):
        result = cli("check", str(run_dir), "--lang", lang)
        assert result.code == 3 and _warning_lines(result.out) == CASES["broken chain"][1][lang]
        written[lang] = verdicts.read_bytes()
    assert written["zh"] == written["en"]
    assert json.loads(written["zh"])["log"]["warnings"] == CASES["broken chain"][1]["en"]
    as_json = {lang: cli("check", str(run_dir / GANG), "--format", "json", "--lang", lang).out for lang in ("zh", "en")}
    assert as_json["zh"] == as_json["en"]


def test_an_empty_or_unreadable_log_is_refused_in_the_chosen_language(cli: Cli, run_dir: Path) -> None:
    log = run_dir / GANG
    emptied(log)
    refusals = {
        "zh": f"hivedlab check: error: {log}：不是证据日志（其中没有 JSON Lines 格式的证据记录）",
        "en": f"hivedlab check: error: {log}: not an evidence log (no JSON Lines evidence record in it)",
    }
    for lang, line in refusals.items():
        alone, among = cli("check", str(log), "--lang", lang), cli("check", str(run_dir), "--lang", lang)
        assert (alone.code, alone.err) == (2, line + "\n")
        assert among.code == 2 and line in among.err.splitlines() and "\ngang — " not in "\n" + among.out
    log.unlink()
    refusals = {"zh": f"hivedlab check: error: 无法读取 {log}：", "en": f"hivedlab check: error: cannot read {log}: "}
    for lang, start in refusals.items():
        result = cli("check", str(log), "--lang", lang)
        assert result.code == 2 and result.err.startswith(start) and result.err.count("\n") == 1


def _refusals(run: Path, empty: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Why `check ARGS` judges nothing: its arguments, and the line it prints in each language."""
    log = run / GANG
    return {
        "a log of another experiment": ([str(log), "--experiment", "priority"], {
            "zh": f"{log} 是实验 'gang' 的运行记录，不是 'priority' 的",
            "en": f"{log} is a run of experiment 'gang', not 'priority'"}),
        "a watch log without --experiment": ([str(WATCH)], {
            "zh": f"{WATCH} 没有写明实验计划（是 watch 日志？）：请用 --experiment ID 指定",
            "en": f"{WATCH} names no experiment plan (a watch log?): pass --experiment ID"}),
        "an --experiment there is no plan for": ([str(log), "--experiment", "gan"], {
            "zh": "没有实验计划 'gan'（是不是 'gang'？）", "en": "no experiment plan 'gan' (did you mean 'gang'?)"}),
        "a log naming a plan there is not": ([str(log)], {
            "zh": "没有实验计划 'gangs'（是不是 'gang'？）",
            "en": "no experiment plan 'gangs' (did you mean 'gang'?)"}),
        "a folder without logs": ([str(empty)], {
            "zh": f"{empty}：这个目录中没有 experiments/*/evidence.jsonl",
            "en": f"{empty}: no experiments/*/evidence.jsonl in this directory"}),
    }


@pytest.mark.parametrize("case", list(_refusals(Path("run"), Path("empty"))))
def test_a_log_check_cannot_judge_is_refused_in_the_chosen_language(
    cli: Cli, run_dir: Path, tmp_path: Path, case: str
) -> None:
    (tmp_path / "empty").mkdir()
    if case == "a log naming a plan there is not":
        plan_renamed(run_dir / GANG, "gangs")
    args, said = _refusals(run_dir, tmp_path / "empty")[case]
    for lang in ("zh", "en"):
        for extra in ((), ("--format", "json")):
            result = cli("check", *args, *extra, "--lang", lang)
            assert (result.code, result.out, result.err) == (2, "", f"hivedlab check: error: {said[lang]}\n")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_refused_log_among_others_is_said_in_the_chosen_language_and_the_others_judged(
    cli: Cli, run_dir: Path, tmp_path: Path, lang: str
) -> None:
    said = _refusals(run_dir, tmp_path)
    for case, args, judged in (
        ("a log of another experiment", [str(run_dir / GANG), str(run_dir / PRIORITY), "--experiment", "priority"],
         "priority"),
        ("a watch log without --experiment", [str(WATCH), str(run_dir / GANG)], "gang"),
    ):
        result = cli("check", *args, "--lang", lang, "--format", "json")
        assert result.code == 2 and result.err == f"hivedlab check: error: {said[case][1][lang]}\n"
        assert json.loads(result.out)["experiment"] == judged
