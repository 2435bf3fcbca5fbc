"""The rubric's rule for a group hivedlab itself sent to the simulator because its hardware cannot hold the lab's
configs: no simulator penalty when run.json says so and the environment records show it; otherwise a TA's look with
both facts (hivedlab.checker.grading.hardware)."""

from __future__ import annotations

import json
from pathlib import Path

from hivedlab.checker.grading.batch import grade_one
from hivedlab.checker.grading.outputs import feedback_md, grades_md
from hivedlab.checker.grading.rubric import load_rubric
from hivedlab.checker.grading.scoring import GroupGrade
from tests.support.grade_builders import LAB, env_record, fake_judge, make_run_dir

RUBRIC = load_rubric()
ONE_WORKER = """group: g
members:
  - {name: Alice, user: alice, roles: [dev-box], hostname: hostname-alice, ip: 192.0.2.10}
  - {name: Bob, user: bob, roles: [master], hostname: hostname-bob, ip: 192.0.2.11}
  - {name: Carol, user: carol, roles: [worker], hostname: hostname-carol, ip: 192.0.2.12, gpus: 1}
"""
WHY = {"zh": "本组只有一台 worker，1 块 GPU，不足以构成 two-vc 配置（需要 2 块）",
       "en": "the group's single worker has 1 GPU, too few for the 'two-vc' config (2 needed)"}


def _group(tmp_path: Path, carol_gpus: int | None, manual: bool = True) -> Path:
    root = make_run_dir(tmp_path / "g1", with_env=False)
    (root / "inventory.yaml").write_text(ONE_WORKER)
    run = json.loads((root / "run.json").read_text())
    if manual:
        run["hardware"] = {"priority": {"on": "manual", "why": WHY}}
    (root / "run.json").write_text(json.dumps(run))
    (root / "env").mkdir()
    for name, host, ip, gpus in (("Alice", "hostname-alice", "192.0.2.10", 0), ("Bob", "hostname-bob", "192.0.2.11", 0),
                                 ("Carol", "hostname-carol", "192.0.2.12", carol_gpus)):
        if gpus is not None:
            (root / "env" / f"{name.lower()}.json").write_text(json.dumps(env_record(name, host, ip, gpus)))
    return root


def _grade(root: Path) -> GroupGrade:
    return grade_one(root.name, root, RUBRIC, LAB, fake_judge)


def _simulator(grade: GroupGrade) -> float:
    return next(p.points for p in grade.penalties if p.penalty.check == "simulator-evidence")


def test_a_one_gpu_group_the_tool_sent_to_the_simulator_is_not_penalised(tmp_path: Path) -> None:
    grade = _grade(_group(tmp_path, carol_gpus=1))
    assert _simulator(grade) == 0 and "simulator-evidence" not in grade.flags
    assert not any("hardware" in reason for reason in grade.needs_look)
    feedback = feedback_md(grade, RUBRIC)
    assert "priority ran on the simulated cluster on the manual's hardware: run.json says the group's single worker " \
           "has 1 GPU" in feedback
    assert "the environment records show Carol 1 GPU" in feedback and "Not penalised, by the rubric's rule" in feedback
    assert "cannot hold the lab's HiveD configs" in feedback  # not lower-cased by a capitalize()
    assert "环境记录显示 Carol 1 块 GPU" in feedback and "按评分规则不扣分" in feedback
    sheet = grades_md([grade], RUBRIC)
    assert "## Hardware / 硬件" in sheet and "not penalised (rubric rule)" in sheet


def test_the_same_claim_without_the_records_is_penalised_and_looked_at(tmp_path: Path) -> None:
    grade = _grade(_group(tmp_path, carol_gpus=None))
    assert _simulator(grade) == 8 and "hardware-unconfirmed" in grade.flags
    (reason,) = [r for r in grade.needs_look if "manual's hardware" in r]
    assert "run.json says the group's single worker has 1 GPU" in reason and "Carol no record" in reason
    assert "not confirmed" in reason
    assert "do not show such hardware" in feedback_md(grade, RUBRIC)


def test_records_that_show_enough_gpus_do_not_excuse_it(tmp_path: Path) -> None:
    grade = _grade(_group(tmp_path, carol_gpus=2))
    assert _simulator(grade) == 8
    assert any("Carol 2 GPU" in reason and "not confirmed" in reason for reason in grade.needs_look)


def test_simulator_evidence_without_the_hardware_note_is_penalised_as_before(tmp_path: Path) -> None:
    grade = _grade(_group(tmp_path, carol_gpus=1, manual=False))
    assert _simulator(grade) == 8 and grade.hardware is None
    assert "manual's hardware" not in feedback_md(grade, RUBRIC)
