"""A cut log goes to a TA: without its end record (cut at a record boundary or inside a record) it is under "Needs a
look" with where it ends, and the claims that cite records past the cut are listed as such; a run that ended
interrupted is under "Needs a look" with that reason. Each is scored on what its log holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hivedlab.checker.grading.batch import grade_batch, grade_one
from hivedlab.checker.grading.rubric import load_rubric
from hivedlab.checker.grading.scoring import GroupGrade
from hivedlab.checker.judging.judge import judge_evidence
from tests.support.grade_builders import LAB
from tests.support.grade_class import rechain
from tests.support.sim_lab import SimLab

RUBRIC = load_rubric()
LOG = Path("experiments") / "gang" / "evidence.jsonl"


def _grade(root: Path) -> GroupGrade:
    return grade_one(root.name, root, RUBRIC, LAB, judge_evidence)


def _cited(root: Path) -> list[int]:
    claims = json.loads((root / "claims.json").read_text(encoding="utf-8"))
    gang = next(e for e in claims["experiments"] if e["id"] == "gang")
    return sorted({seq for answer in gang["answers"] for seq in answer.get("evidence", [])})


@pytest.mark.parametrize("inside", [False, True], ids=["at-a-record-boundary", "inside-a-record"])
def test_a_cut_log_needs_a_look_and_claims_past_the_cut_are_listed(sim_lab: SimLab, tmp_path: Path,
                                                                  inside: bool) -> None:
    root = sim_lab.copy_to(tmp_path)
    whole = _grade(root)
    cited = _cited(root)
    keep = cited[-1]  # records 0 .. keep-1 stay: the last cited record and every later one are cut away
    lines = (root / LOG).read_text(encoding="utf-8").splitlines(keepends=True)
    (root / LOG).write_text("".join(lines[:keep]) + (lines[keep][:50] if inside else ""), encoding="utf-8")
    grade = _grade(root)
    cut = [f for f in grade.findings if f.code == "log-cut"]
    assert len(cut) == 1 and cut[0].seq == keep - 1 and cut[0].file == LOG.as_posix()
    assert f"ends at record {keep - 1} (line {keep})" in cut[0].en
    assert ("cut in the middle" in cut[0].en) == inside
    assert cut[0].en in grade.needs_look
    past = [f for f in grade.findings if f.code == "claim-past-cut" and f.file == LOG.as_posix()]
    assert past and all(str(cited[-1]) in f.en and f.en in grade.needs_look for f in past)
    assert 0 < grade.total() < whole.total()  # scored on what it holds
    unsupported = next(p for p in grade.penalties if p.penalty.check == "unsupported-claim")
    assert "past the end" not in unsupported.en  # listed for a look, not deducted a second time
    assert not [f for f in whole.findings if f.code in ("log-cut", "claim-past-cut")]


def test_a_cut_log_is_listed_under_needs_a_look_in_grades_md(sim_lab: SimLab, tmp_path: Path) -> None:
    root = sim_lab.copy_to(tmp_path / "subs" / "g1")
    lines = (root / LOG).read_text(encoding="utf-8").splitlines(keepends=True)
    (root / LOG).write_text("".join(lines[:-10]), encoding="utf-8")  # the case: the last ten records gone
    result = grade_batch(root.parent.parent, tmp_path / "out", RUBRIC, LAB, judge_evidence)
    look = (tmp_path / "out" / "grades.md").read_text(encoding="utf-8").split("## Needs a look")[1]
    assert f"{LOG.as_posix()}: no end record: the log ends at record {len(lines) - 11}" in look
    assert result.needs_look == ("g1",)


def test_an_interrupted_run_needs_a_look_with_its_reason(sim_lab: SimLab, tmp_path: Path) -> None:
    root = sim_lab.copy_to(tmp_path)
    whole = _grade(root)

    def interrupted(record: dict[str, object]) -> dict[str, object]:
        if record["kind"] == "action" and isinstance(record["action"], dict) and record["action"]["type"] == "end":
            return {**record, "action": {"type": "end", "status": "interrupted", "reason": "interrupted by the user"}}
        return record

    rechain(root / LOG, interrupted)
    grade = _grade(root)
    (stopped,) = [f for f in grade.findings if f.code == "run-stopped"]
    assert "ended 'interrupted' (interrupted by the user)" in stopped.en and stopped.en in grade.needs_look
    assert not [f for f in grade.findings if f.code == "log-cut"]
    ran = {s.item.id: s.points for s in grade.items}
    assert ran["gang.ran"] == 1.5 and grade.total() == whole.total() - 1.5
