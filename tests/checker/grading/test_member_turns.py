"""Grading a run directory where members took turns (`experiments/<id>/<user>/`, docs/evidence.md): every turn is
read and verified, the experiment is scored on its weakest turn, and the one-member layout grades as before."""

from __future__ import annotations

import shutil
from pathlib import Path

from hivedlab.checker.grading.batch import grade_one
from hivedlab.checker.grading.grader import grade_folder
from hivedlab.checker.grading.rubric import load_rubric
from hivedlab.checker.grading.scoring import GroupGrade
from hivedlab.checker.grading.submission import read_submission
from tests.support.grade_builders import LAB, fake_judge, make_run_dir

RUBRIC = load_rubric()
USERS = ("alice", "bob")


def _grade(root: Path) -> GroupGrade:
    return grade_one(root.name, root, RUBRIC, LAB, fake_judge, None)


def _points(grade: GroupGrade) -> dict[str, float]:
    return {s.item.id: s.points for s in grade.items} | {f"-{p.penalty.id}": p.points for p in grade.penalties}


def turns_layout(root: Path) -> Path:
    """The one-member run directory of `make_run_dir`, laid out as if Alice and Bob each took a turn."""
    make_run_dir(root)
    experiment, jobs = root / "experiments" / "priority", root / "jobs" / "priority"
    for folder in (experiment, jobs):
        files = [p for p in folder.iterdir() if p.is_file()]
        for user in USERS:
            (folder / user).mkdir()
            for path in files:
                shutil.copy(path, folder / user / path.name)
        for path in files:
            path.unlink()
    return root


def test_every_turn_is_read_in_inventory_order(tmp_path: Path) -> None:
    sub = read_submission(turns_layout(tmp_path / "g1"))
    priority = sub.experiment("priority")
    assert priority is not None and [t.member for t in priority.turns] == list(USERS)
    assert [t.evidence for t in priority.turns] == [f"experiments/priority/{u}/evidence.jsonl" for u in USERS]
    assert all(t.job_files and t.verdicts for t in priority.turns)
    assert not [p for p in sub.problems if p.code == "missing-evidence"]


def test_turns_grade_as_the_one_member_layout_does(tmp_path: Path) -> None:
    one, turns = _grade(make_run_dir(tmp_path / "one")), _grade(turns_layout(tmp_path / "turns"))
    assert _points(turns) == _points(one) and turns.total() == one.total()


def test_a_broken_turn_is_found_and_the_experiment_scored_on_it(tmp_path: Path) -> None:
    root = turns_layout(tmp_path / "g1")
    log = root / "experiments" / "priority" / "bob" / "evidence.jsonl"
    log.write_text(log.read_text().replace('"nodeName":"hostname-dan"', '"nodeName":"hostname-carol"', 1))
    grade = _grade(root)
    chain = next(f for f in grade.findings if f.code == "chain-broken")
    assert chain.where() == "experiments/priority/bob/evidence.jsonl#seq=3"
    assert _points(grade)["-chain"] > 0 and _points(grade)["priority.evidence"] < 4


def test_a_turn_without_an_end_makes_the_experiment_inconclusive(tmp_path: Path) -> None:
    root = turns_layout(tmp_path / "g1")
    log = root / "experiments" / "priority" / "alice" / "evidence.jsonl"
    log.write_text("".join(line + "\n" for line in log.read_text().splitlines() if '"type":"end"' not in line))
    result = grade_folder(root, LAB, fake_judge, ("priority",)).experiment("priority")
    assert result is not None and result.verdict is not None and result.verdict["verdict"] == "inconclusive"
    assert [t.verdict["verdict"] for t in result.turns if t.verdict] == ["inconclusive", "consistent"]
