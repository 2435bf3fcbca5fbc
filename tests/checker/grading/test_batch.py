"""The batch: every folder gets a grade, the four outputs are written inside the output folder only."""

from __future__ import annotations

import csv
import gc
import io
import json
import os
import shutil
from pathlib import Path

from hivedlab.checker.grading.batch import discover, grade_batch, grade_one, safe_name
from hivedlab.checker.grading.outputs import feedback_md, results_json
from hivedlab.checker.grading.rubric import load_rubric
from hivedlab.checker.grading.scoring import GroupGrade
from hivedlab.checker.judging.judge import Judgement
from hivedlab.evidence import EvidenceLog
from tests.support.grade_builders import LAB, fake_judge, make_run_dir
from tests.support.grade_class import another_run

RUBRIC = load_rubric()


def _seed(root: Path, seed: int) -> Path:
    """Distinct groups' simulator runs differ in their inputs and their content (the same is flagged as a copy)."""
    return another_run(root, seed)


def _class(tmp_path: Path) -> Path:
    subs = tmp_path / "subs"
    _seed(make_run_dir(subs / "good"), 2)
    make_run_dir(subs / "real", source="k8s")
    edited = _seed(make_run_dir(subs / "edited"), 3)
    log = edited / "experiments" / "priority" / "evidence.jsonl"
    log.write_text(log.read_text().replace("hostname-dan", "hostname-carol", 1))
    (subs / "empty").mkdir()
    (subs / "stray.zip").write_bytes(b"PK")
    make_run_dir(tmp_path / "outside")
    (subs / "escape").symlink_to(os.path.relpath(tmp_path / "outside", subs))
    weird = subs / "we|rd *name*"
    _seed(make_run_dir(weird), 4)
    return subs


def test_every_folder_is_graded_and_the_ta_gets_the_list_to_look_at(tmp_path: Path) -> None:
    subs = _class(tmp_path)
    out = tmp_path / "grades"
    result = grade_batch(subs, out, RUBRIC, LAB, fake_judge)
    names = [g.name for g in result.grades]
    assert names == ["edited", "empty", "escape", "good", "real", "we|rd *name*"]
    assert [s.name for s in result.skipped] == ["stray.zip"]
    assert set(result.needs_look) == {"edited", "empty", "escape", "stray.zip"}
    by_name = {g.name: g for g in result.grades}
    assert by_name["escape"].total() == 0 and "outside the submissions folder" in by_name["escape"].needs_look[0]
    assert by_name["real"].total() == 40


def test_one_batch_survives_every_kind_of_bad_folder(tmp_path: Path) -> None:
    subs = _class(tmp_path)
    empty_log = _seed(make_run_dir(subs / "empty-log"), 5)
    (empty_log / "experiments" / "priority" / "evidence.jsonl").write_text("")
    cut = _seed(make_run_dir(subs / "truncated"), 6)
    log = cut / "experiments" / "priority" / "evidence.jsonl"
    log.write_text(log.read_text()[:-300])
    handwritten = _seed(make_run_dir(subs / "not-template"), 7)
    (handwritten / "report.md").write_text("# report\n")
    fifo = _seed(make_run_dir(subs / "fifo"), 8)
    (fifo / "report.md").unlink()
    os.mkfifo(fifo / "report.md")
    huge = _seed(make_run_dir(subs / "huge"), 9)
    with open(huge / "claims.json", "ab") as handle:
        handle.truncate(3 * 1024 * 1024)
    result = grade_batch(subs, tmp_path / "grades", RUBRIC, LAB, fake_judge, max_bytes=1024 * 1024)
    look = set(result.needs_look)
    assert {"empty-log", "truncated", "not-template", "fifo", "huge", "edited", "empty", "escape"} <= look
    assert "good" not in look and "real" not in look
    by_name = {g.name: g for g in result.grades}
    assert any("not a regular file" in r for r in by_name["fifo"].needs_look)
    assert any("cap" in r for r in by_name["huge"].needs_look)
    assert by_name["truncated"].total() > 0  # graded for what is there


def test_the_four_outputs(tmp_path: Path) -> None:
    subs = _class(tmp_path)
    out = tmp_path / "grades"
    grade_batch(subs, out, RUBRIC, LAB, fake_judge)
    rows = list(csv.DictReader(io.StringIO((out / "grades.csv").read_text())))
    assert [r["group"] for r in rows][:2] == ["edited", "empty"]
    real = next(r for r in rows if r["group"] == "real")
    assert real["priority.answer"] == "8" and real["total"] == "40" and real["max"] == "100"
    assert real["sources"] == "-;k8s;-;-;-" and real["needs_look"] == "no"
    edited = next(r for r in rows if r["group"] == "edited")
    assert "chain-broken" in edited["flags"] and edited["-chain"] == "15"

    summary = (out / "grades.md").read_text()
    assert "## Distribution / 分布" in summary and "| 0–59 | 6 |" in summary
    assert "stray.zip" in summary and "we\\|rd \\*name\\*" in summary

    folders = sorted(p.name for p in (out / "groups").iterdir())
    assert folders == ["edited", "empty", "escape", "good", "real", "we_rd_name"]
    for folder in folders:
        assert (out / "groups" / folder / "feedback.md").is_file()
        results = json.loads((out / "groups" / folder / "results.json").read_text())
        assert set(results) >= {"score", "tests"}
        for test in results["tests"]:
            assert set(test) == {"name", "score", "max_score", "output", "visibility"}
            assert test["visibility"] in ("visible", "hidden")
    # nothing was written anywhere but the output folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades", "outside", "subs"]
    assert not list(subs.rglob("feedback.md"))


def test_students_never_see_hidden_items(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    make_run_dir(subs / "g", claim="consistent")
    log = subs / "g" / "experiments" / "priority" / "evidence.jsonl"
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))  # no end record: claim unsupported
    result = grade_batch(subs, tmp_path / "out", RUBRIC, LAB, fake_judge)
    grade = result.grades[0]
    assert any(f.code == "claim-contradicted" for f in grade.findings)
    feedback = feedback_md(grade, RUBRIC)
    assert "Report claims supported" not in feedback and "claim" not in feedback.lower().replace("claims.json", "")
    assert "Evidence a real cluster cannot produce" not in feedback
    assert "得分 / Score" in feedback and "What was missing" in feedback and "做得好的" in feedback
    results = json.loads(results_json(grade, RUBRIC))
    hidden = [t for t in results["tests"] if t["visibility"] == "hidden"]
    assert {t["name"].split(" / ")[0] for t in hidden} >= {"Report claims supported by the evidence"}
    assert grade.total(include_hidden=False) != grade.total()


def test_output_names_are_safe_and_unique() -> None:
    taken: set[str] = set()
    assert safe_name("../../etc", taken) == "etc"
    assert safe_name("ETC", taken) == "ETC-2"
    assert safe_name("...", taken) == "group"
    assert safe_name("组 1", taken) == "1"


def test_the_output_folder_inside_the_submissions_is_not_a_group(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    make_run_dir(subs / "g")
    (subs / "grades").mkdir()
    groups, skipped, refused = discover(subs, subs / "grades")
    assert [name for name, _ in groups] == ["g"] and skipped == [] and refused == []


def test_parallel_grading_gives_the_same_grades(tmp_path: Path) -> None:
    subs = _class(tmp_path)
    one = grade_batch(subs, tmp_path / "one", RUBRIC, LAB, fake_judge, jobs=1)
    two = grade_batch(subs, tmp_path / "two", RUBRIC, LAB, fake_judge, jobs=2)
    assert (tmp_path / "one" / "grades.csv").read_text() == (tmp_path / "two" / "grades.csv").read_text()
    assert [g.total() for g in one.grades] == [g.total() for g in two.grades]


def test_feedback_shows_the_commands_it_names_as_code_and_escapes_the_rest(tmp_path: Path) -> None:
    """feedback.md printed hivedlab's own `commands` with escaped backticks (\\`hivedlab env\\`); students' text stays
    escaped."""
    root = make_run_dir(tmp_path / "g1", with_env=False)
    feedback = feedback_md(grade_one("g1", root, RUBRIC, LAB, fake_judge), RUBRIC)
    assert "run `python3 labs/00_check_env.py` on every member's machine" in feedback and "\\`" not in feedback
    hostile = feedback_md(grade_one("<b>|x", root, RUBRIC, LAB, fake_judge), RUBRIC)
    assert "&lt;b&gt;\\|x" in hostile and "<b>" not in hostile


def test_grading_a_group_leaves_garbage_collection_as_it_found_it(tmp_path: Path) -> None:
    """Collection is off while a group is graded (its records hold no cycles), then as it was, even after a failure."""
    root = make_run_dir(tmp_path / "g1")
    seen: list[bool] = []

    def judge(log: EvidenceLog, experiment: str) -> Judgement:
        seen.append(gc.isenabled())
        return fake_judge(log, experiment)

    assert gc.isenabled()
    grade_one("g1", root, RUBRIC, LAB, judge)
    assert gc.isenabled() and seen and not any(seen)
    gc.disable()
    try:
        grade_one("g1", root, RUBRIC, LAB, judge)
        assert not gc.isenabled()
    finally:
        gc.enable()
    grade_one("g1", tmp_path / "missing", RUBRIC, LAB, judge)
    assert gc.isenabled()


def test_a_groups_files_are_written_as_its_grade_comes_in_and_again_when_found_a_copy(tmp_path: Path) -> None:
    """While the rest are graded, each group's feedback is already there; a copy found at the end is in the files."""
    subs = tmp_path / "subs"
    _seed(make_run_dir(subs / "a"), 2)
    _seed(make_run_dir(subs / "b"), 3)
    shutil.copytree(subs / "a", subs / "c")  # a copy of a, found once every group is graded
    present: dict[str, bool] = {}

    def arrived(grade: GroupGrade) -> None:
        present[grade.name] = (tmp_path / "out" / "groups" / grade.name / "feedback.md").is_file()

    result = grade_batch(subs, tmp_path / "out", RUBRIC, LAB, fake_judge, progress=arrived)
    assert present == {"a": True, "b": True, "c": True}
    for name in ("a", "c"):
        grade = next(g for g in result.grades if g.name == name)
        assert any(f.code == "copied-evidence" for f in grade.findings)
        assert (tmp_path / "out" / "groups" / name / "feedback.md").read_text() == feedback_md(grade, RUBRIC)
        assert (tmp_path / "out" / "groups" / name / "results.json").read_text() == results_json(grade, RUBRIC)
