"""Evidence from the rehearsal cluster (OpenPAI's real control plane on emulated kubelets and GPUs) is graded by its
own rubric line, never as a GPU cluster's: known from run.json's `cluster_kind` or from the pods' container ids."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hivedlab.checker.grading.batch import grade_one
from hivedlab.checker.grading.outputs import feedback_md
from hivedlab.checker.grading.rubric import load_rubric
from hivedlab.checker.grading.scoring import GroupGrade
from hivedlab.checker.report.build import build_report
from tests.support.grade_builders import LAB, fake_judge, make_run_dir, priority_records, write_log

RUBRIC = load_rubric()
KIND = {"kind": "rehearsal", "emulated_nodes": ["hostname-carol", "hostname-dan"]}


def _running_with(container_id: str) -> list[tuple[str, Any]]:
    """The priority run's records, its running pods' containers carrying `container_id`."""
    steps = priority_records()
    steps[0] = ("action", ("plan", {"experiment": "priority", "cluster": "pai"}))
    marked = []
    for kind, payload in steps:
        if kind == "object" and payload[2]["status"].get("phase") == "Running":
            obj = copy.deepcopy(payload[2])
            cid = f"{container_id}{obj['metadata']['uid']}"
            obj["status"]["containerStatuses"] = [{"name": "app", "containerID": cid,
                                                   "state": {"running": {"startedAt": "2026-01-01T08:00:01Z"}}}]
            payload = (payload[0], payload[1], obj)
        marked.append((kind, payload))
    return marked


def _grade(root: Path) -> GroupGrade:
    return grade_one(root.name, root, RUBRIC, LAB, fake_judge)


def _points(grade: GroupGrade, check: str) -> float:
    return next(p.points for p in grade.penalties if p.penalty.check == check)


def _with_log(tmp_path: Path, container_id: str, cluster_kind: dict[str, Any] | None = None) -> Path:
    root = make_run_dir(tmp_path / "g1", source="k8s")
    write_log(root / "experiments" / "priority" / "evidence.jsonl", _running_with(container_id), "k8s")
    if cluster_kind is not None:
        run = json.loads((root / "run.json").read_text())
        (root / "run.json").write_text(json.dumps({**run, "cluster_kind": cluster_kind}))
    return root


def test_a_real_clusters_evidence_draws_neither_line(tmp_path: Path) -> None:
    grade = _grade(_with_log(tmp_path, "docker://"))
    assert _points(grade, "rehearsal-evidence") == 0 and _points(grade, "simulator-evidence") == 0


def test_run_json_saying_rehearsal_draws_the_rehearsal_line(tmp_path: Path) -> None:
    grade = _grade(_with_log(tmp_path, "docker://", KIND))
    assert _points(grade, "rehearsal-evidence") == 4 and _points(grade, "simulator-evidence") == 0
    feedback = feedback_md(grade, RUBRIC)
    assert "ran on the rehearsal cluster (OpenPAI's real control plane, emulated kubelets and GPUs): priority" \
        in feedback
    assert "在演练集群上运行（OpenPAI 的真实控制面，kubelet 与 GPU 为模拟）：priority" in feedback


def test_the_pods_own_container_ids_give_it_away_when_run_json_is_silent(tmp_path: Path) -> None:
    """A run.json edited to hide the rehearsal does not pass it off as a GPU cluster: the pods say emulated://."""
    grade = _grade(_with_log(tmp_path, "emulated://"))
    assert _points(grade, "rehearsal-evidence") == 4


def test_the_report_says_the_evidence_is_the_rehearsal_clusters(tmp_path: Path) -> None:
    root = _with_log(tmp_path, "emulated://", KIND)
    for lang, words in (("zh", ("演练集群（真实控制面，模拟 GPU）", "节点 hostname-carol、hostname-dan")),
                        ("en", ("the rehearsal cluster (real control plane, emulated GPUs)",
                                "nodes hostname-carol, hostname-dan"))):
        (root / "report.md").unlink(missing_ok=True)
        build_report(root, lang)
        text = (root / "report.md").read_text(encoding="utf-8")
        assert all(w in text for w in words), lang
        assert json.loads((root / "claims.json").read_text(encoding="utf-8"))["rehearsal"] is True
