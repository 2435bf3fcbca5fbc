"""Copies between groups: a copied real-cluster run directory, evidence that overlaps, and the same simulator
inputs are flagged in grades.md naming both groups; distinct runs are not; students never see the other name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hivedlab.checker.grading.batch import grade_batch
from hivedlab.checker.grading.outputs import feedback_md
from hivedlab.checker.grading.rubric import load_rubric
from hivedlab.evidence import record_hash
from tests.support.grade_builders import LAB, fake_judge, make_run_dir

RUBRIC = load_rubric()
LOG = Path("experiments") / "priority" / "evidence.jsonl"


def _rewrite(path: Path, old: str, new: str) -> None:
    """Replace text in every record and re-seal the chain (another group's genuinely different run)."""
    lines, prev = [], "0" * 64
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line.replace(old, new))
        record.pop("hash")
        record["prev"] = prev
        record["hash"] = prev = record_hash(record)
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _uids(path: Path) -> list[str]:
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = (json.loads(line).get("watch") or {}).get("object") or {}
        uid = (obj.get("metadata") or {}).get("uid")
        if uid and uid not in found:
            found.append(uid)
    return found


def _copies(result, name: str) -> list[str]:
    grade = next(g for g in result.grades if g.name == name)
    return [f.en for f in grade.findings if f.code == "copied-evidence"]


def test_a_copied_real_run_directory_is_flagged_naming_both(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    make_run_dir(subs / "alpha", source="k8s")
    shutil.copytree(subs / "alpha", subs / "beta")
    result = grade_batch(subs, tmp_path / "out", RUBRIC, LAB, fake_judge)
    assert any("group beta" in f and "identical log" in f for f in _copies(result, "alpha"))
    assert any("group alpha" in f for f in _copies(result, "beta"))
    grades = (tmp_path / "out" / "grades.md").read_text()
    assert "evidence shared with group beta" in grades and "evidence shared with group alpha" in grades
    beta = next(g for g in result.grades if g.name == "beta")
    assert "alpha" not in feedback_md(beta, RUBRIC)


def test_overlapping_real_evidence_is_flagged_distinct_runs_are_not(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    make_run_dir(subs / "alpha", source="k8s")
    make_run_dir(subs / "beta", source="k8s")
    uids = _uids(subs / "alpha" / LOG)
    for index, uid in enumerate(uids):
        _rewrite(subs / "beta" / LOG, uid, f"beta-{index}")
    make_run_dir(subs / "gamma", source="k8s")
    _rewrite(subs / "gamma" / LOG, uids[0], "gamma-0")  # one pod's record edited in; the rest shared
    result = grade_batch(subs, tmp_path / "out", RUBRIC, LAB, fake_judge)
    assert _copies(result, "beta") == []
    shared = _copies(result, "alpha")
    assert len(shared) == 1 and "group gamma" in shared[0] and "shared pod/job uid" in shared[0]
    assert "identical log" not in shared[0]


def test_the_same_simulator_inputs_are_flagged(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    make_run_dir(subs / "alpha")
    make_run_dir(subs / "beta")
    other = make_run_dir(subs / "gamma")
    run = json.loads((other / "run.json").read_text())
    (other / "run.json").write_text(json.dumps({**run, "seed": 7}))
    result = grade_batch(subs, tmp_path / "out", RUBRIC, LAB, fake_judge)
    assert any("group beta" in f and "same simulator inputs" in f for f in _copies(result, "alpha"))
    assert _copies(result, "gamma") == []
