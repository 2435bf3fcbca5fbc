"""A real simulated run (tests/fixtures/grade/base) and its tampered variants, copied into a group folder and graded
with the shipped rubric and the real checker."""

from __future__ import annotations

import shutil
from pathlib import Path

from hivedlab.checker.grading.batch import grade_one
from hivedlab.checker.grading.labspec import shipped_lab
from hivedlab.checker.grading.rubric import load_rubric
from hivedlab.checker.grading.scoring import GroupGrade
from hivedlab.checker.judging.judge import judge_evidence
from tests.support.paths import FIXTURES

GRADE_FIXTURES = FIXTURES / "grade"
BASE = GRADE_FIXTURES / "base"
VARIANTS = GRADE_FIXTURES / "variants"
RUBRIC = load_rubric()
LAB = shipped_lab()
JUDGE = judge_evidence
EXPERIMENTS = ("vc-safety", "priority", "opportunistic", "gang", "incremental")


def group(tmp_path: Path, variant: str | None = None) -> Path:
    root = tmp_path / (variant or "base")
    shutil.copytree(BASE, root)
    if variant:
        overlay = VARIANTS / variant
        for path in overlay.rglob("*"):
            if path.is_file() and path.name != "DELETE":
                shutil.copyfile(path, root / path.relative_to(overlay))
        if (overlay / "DELETE").is_file():
            for rel in (overlay / "DELETE").read_text().split():
                (root / rel).unlink(missing_ok=True)
    return root


def grade(root: Path) -> GroupGrade:
    return grade_one(root.name, root, RUBRIC, LAB, JUDGE)


def points(g: GroupGrade) -> dict[str, float]:
    out = {s.item.id: s.points for s in g.items}
    out.update({f"-{p.penalty.id}": p.points for p in g.penalties})
    return out
