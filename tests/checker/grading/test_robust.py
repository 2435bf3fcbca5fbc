"""Hostile folders that used to zero a group or hide its run: a nesting bomb in one line, a folder flooded with
files beside the run, an exception from one file."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.checker.grading import grader
from hivedlab.checker.grading.batch import grade_one
from hivedlab.checker.grading.rubric import load_rubric
from hivedlab.checker.grading.scoring import GroupGrade
from hivedlab.evidence import read_evidence
from tests.support.grade_builders import LAB, fake_judge, make_run_dir

RUBRIC = load_rubric()


def _grade(root: Path) -> GroupGrade:
    return grade_one(root.name, root, RUBRIC, LAB, fake_judge)


def _points(grade: GroupGrade) -> dict[str, float]:
    return {s.item.id: s.points for s in grade.items}


def _codes(grade: GroupGrade) -> set[str]:
    return {f.code for f in grade.findings}


def test_a_nesting_bomb_inserted_mid_log_is_an_edit_that_costs_the_chain(tmp_path: Path) -> None:
    """A line that is not a record, put between two intact records, hides nothing: it breaks the chain (once)."""
    root = make_run_dir(tmp_path / "g1")
    log = root / "experiments" / "priority" / "evidence.jsonl"
    lines = log.read_text().splitlines()
    bomb = "[" * 200_000 + "]" * 200_000
    log.write_text("\n".join([*lines[:3], bomb, *lines[3:]]) + "\n")
    read = read_evidence(log)
    assert len(read.records) == len(lines)
    assert not read.chain_ok and read.first_broken_seq == 3
    assert [w for w in read.warnings if "line 4" in w] == [
        "line 4: not a JSON record: a line that is not a record was put into the log (edited)"]
    grade = _grade(root)
    assert "grader-error" not in _codes(grade) and "file-error" not in _codes(grade)
    penalties = {p.penalty.id: p.points for p in grade.penalties}
    assert penalties["chain"] == 15
    assert any(reason.startswith("experiments/priority/evidence.jsonl: hash chain broken")
               for reason in grade.needs_look)


def test_ten_thousand_files_beside_the_run_do_not_hide_it(tmp_path: Path) -> None:
    group = tmp_path / "g1"
    make_run_dir(group / "out")
    for index in range(10_000):
        (group / f"junk{index:05d}.txt").write_bytes(b"")
    grade = _grade(group)
    assert _points(grade)["priority.ran"] == 3
    assert "missing-file" not in _codes(grade)
    finding = next(f for f in grade.findings if f.code == "folder-too-big")
    assert "10001 entries" in finding.en and finding.kind == "problem"


def test_an_exception_from_one_file_costs_that_experiment_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(grader, "check_log", explode)
    grade = _grade(make_run_dir(tmp_path / "g1"))
    assert "grader-error" not in _codes(grade)
    finding = next(f for f in grade.findings if f.code == "file-error")
    assert finding.file == "experiments/priority/evidence.jsonl" and "RuntimeError" in finding.en
    points = _points(grade)
    assert points["environment"] == 10 and points["deployment"] == 10 and points["priority.ran"] == 0


def test_one_bad_line_costs_once_and_the_chain_break_names_its_log(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1")
    log = root / "experiments" / "priority" / "evidence.jsonl"
    lines = log.read_text().splitlines()
    log.write_text("\n".join([*lines[:3], "{not json", *lines[4:]]) + "\n")  # record 3 made unreadable
    grade = _grade(root)
    penalties = {p.penalty.id: p.points for p in grade.penalties}
    assert penalties["chain"] == 15 and penalties["forgery"] == 0
    assert "seq-order" not in _codes(grade)
    assert any(reason.startswith("experiments/priority/evidence.jsonl: hash chain broken")
               for reason in grade.needs_look)


def test_a_seq_that_goes_back_is_still_disorder(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1")
    log = root / "experiments" / "priority" / "evidence.jsonl"
    lines = log.read_text().splitlines()
    log.write_text("\n".join([*lines[:4], lines[2], *lines[4:]]) + "\n")
    assert "seq-order" in _codes(_grade(root))


def test_feedback_total_equals_grades_csv_and_says_how(tmp_path: Path) -> None:
    import csv
    import io

    from hivedlab.checker.grading.batch import grade_batch
    from hivedlab.checker.grading.outputs import feedback_md

    subs = tmp_path / "subs"
    make_run_dir(subs / "g", claim="consistent")
    log = subs / "g" / "experiments" / "priority" / "evidence.jsonl"
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))  # a hidden claim deduction
    result = grade_batch(subs, tmp_path / "out", RUBRIC, LAB, fake_judge)
    row = next(csv.DictReader(io.StringIO((tmp_path / "out" / "grades.csv").read_text())))
    feedback = feedback_md(result.grades[0], RUBRIC)
    assert f"Score: {row['total']} / {row['max']}**" in feedback
    assert "items the TA reviews" in feedback and "Made up of" in feedback


def test_every_deduction_file_is_listed(tmp_path: Path) -> None:
    from hivedlab.checker.grading.outputs import feedback_md
    from hivedlab.checker.grading.scoring import PenaltyScore

    grade = _grade(make_run_dir(tmp_path / "g1"))
    penalty = next(p for p in RUBRIC.penalties if p.id == "foreign-jobs")
    refs = tuple(f"experiments/e{i}/evidence.jsonl" for i in range(7))
    many = PenaltyScore(penalty, 7, "foreign jobs", "不属于实验的任务", refs)
    from dataclasses import replace

    feedback = feedback_md(replace(grade, penalties=(many,)), RUBRIC)
    assert all(ref in feedback for ref in refs)


def test_the_environment_item_counts_what_the_report_fills_from_the_inventory(tmp_path: Path) -> None:
    import json

    root = make_run_dir(tmp_path / "g1")
    for path in (root / "env").glob("*.json"):
        record = json.loads(path.read_text())
        record.pop("hostname", None)
        record.pop("ip", None)
        path.write_text(json.dumps(record))
    score = next(s for s in _grade(root).items if s.item.id == "environment")
    assert ".hostname" not in score.en and ".ip" not in score.en
