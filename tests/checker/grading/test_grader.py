"""One group graded end to end (reading, verifying, re-judging, claims, scoring) — and every kind of bad folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hivedlab.checker.grading.batch import grade_one
from hivedlab.checker.grading.rubric import load_rubric
from hivedlab.checker.grading.scoring import GroupGrade
from tests.support.grade_builders import LAB, fake_judge, make_run_dir, priority_records, report_md

RUBRIC = load_rubric()


def _grade(root: Path, max_bytes: int | None = None) -> GroupGrade:
    return grade_one(root.name, root, RUBRIC, LAB, fake_judge, max_bytes)


def _points(grade: GroupGrade) -> dict[str, float]:
    scores = {s.item.id: s.points for s in grade.items}
    scores.update({f"-{p.penalty.id}": p.points for p in grade.penalties})
    return scores


def _codes(grade: GroupGrade) -> set[str]:
    return {f.code for f in grade.findings}


def test_a_complete_simulated_run_gets_every_priority_point_minus_the_simulator_penalty(tmp_path: Path) -> None:
    grade = _grade(make_run_dir(tmp_path / "g1"))
    points = _points(grade)
    assert points["priority.ran"] == 3 and points["priority.answer"] == 8 and points["priority.evidence"] == 4
    assert points["environment"] == 10 and points["deployment"] == 10 and points["claims"] == 5
    assert points["gang.ran"] == 0  # not run
    assert points["-simulator"] == 8 and points["-chain"] == 0 and points["-forgery"] == 0
    assert grade.total() == 3 + 8 + 4 + 10 + 10 + 5 - 8
    assert grade.sources == ("", "sim", "", "", "")
    assert grade.needs_look == ()


def test_a_real_cluster_run_draws_no_simulator_penalty(tmp_path: Path) -> None:
    grade = _grade(make_run_dir(tmp_path / "g1", source="k8s"))
    assert _points(grade)["-simulator"] == 0
    assert grade.total() == 40 and grade.sources[1] == "k8s"


def test_an_edited_log_breaks_the_chain(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1", source="k8s")
    log = root / "experiments" / "priority" / "evidence.jsonl"
    log.write_text(log.read_text().replace('"nodeName":"hostname-dan"', '"nodeName":"hostname-carol"', 1))
    grade = _grade(root)
    chain = next(f for f in grade.findings if f.code == "chain-broken")
    assert chain.seq == 3 and chain.where() == "experiments/priority/evidence.jsonl#seq=3"
    assert _points(grade)["-chain"] == 15
    assert _points(grade)["priority.evidence"] < 4
    assert any("hash chain broken" in reason for reason in grade.needs_look)


def test_a_truncated_log_runs_partly_and_its_consistent_claim_is_unsupported(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1", source="k8s")
    log = root / "experiments" / "priority" / "evidence.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:-2]) + lines[-2][:40])  # the end record gone, the last one cut mid-line
    grade = _grade(root)
    points = _points(grade)
    assert points["priority.ran"] == 1.5  # started, no end record
    assert points["priority.answer"] == 4  # one of two answers consistent
    claim = next(f for f in grade.findings if f.code == "claim-contradicted")
    assert claim.file == "experiments/priority/evidence.jsonl" and claim.seq == 8  # the record behind the answer
    assert "inconclusive" in claim.en
    assert points["-unsupported"] >= 3 and points["claims"] == 0


def test_an_empty_log(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1")
    (root / "experiments" / "priority" / "evidence.jsonl").write_text("")
    grade = _grade(root)
    assert "empty-log" in _codes(grade)
    assert _points(grade)["priority.ran"] == 0 and _points(grade)["priority.answer"] == 0


def test_a_log_that_is_not_json_lines(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1")
    (root / "experiments" / "priority" / "evidence.jsonl").write_text("<html>lab report</html>\n" * 3)
    grade = _grade(root)
    assert "empty-log" in _codes(grade) and grade.needs_look


def test_missing_files_each_cost_their_item_with_the_reason(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1", with_env=False)
    (root / "claims.json").unlink()
    (root / "experiments" / "priority" / "verdicts.json").unlink()
    grade = _grade(root)
    scores = {s.item.id: s for s in grade.items}
    assert scores["environment"].points == 0
    assert "looked in env/ (the run directory's env/<member>.json)" in scores["environment"].en
    assert scores["claims"].points == 0
    assert scores["priority.evidence"].points == pytest.approx(4 * 5 / 6, abs=0.01)
    assert "verdicts.json present" in scores["priority.evidence"].en
    assert "claims.json is missing" in grade.needs_look


def test_a_report_that_is_not_the_template(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1")
    (root / "report.md").write_text("# Our report\n\nWe did the lab. It went fine. " * 20)
    grade = _grade(root)
    assert _points(grade)["deployment"] == 0
    assert "report-not-template" in _codes(grade)


@pytest.mark.parametrize(("text", "points"), [("", 0), ("（在此填写。）", 0), ("Docker broke.", 5)])
def test_deployment_notes_empty_placeholder_or_short(tmp_path: Path, text: str, points: float) -> None:
    root = make_run_dir(tmp_path / "g1")
    (root / "report.md").write_text(report_md(text))
    assert _points(_grade(root))["deployment"] == points


def test_a_folder_of_unrelated_files(tmp_path: Path) -> None:
    root = tmp_path / "g1"
    root.mkdir()
    (root / "homework.docx").write_bytes(b"PK\x03\x04")
    (root / "notes.txt").write_text("see you")
    grade = _grade(root)
    assert grade.total() == 0
    assert "run.json is missing" in grade.needs_look


def test_a_run_directory_one_level_down_is_found(tmp_path: Path) -> None:
    make_run_dir(tmp_path / "g1" / "out")
    grade = _grade(tmp_path / "g1")
    assert _points(grade)["priority.ran"] == 3
    assert any(s.evidence == ("out/experiments/priority/evidence.jsonl",) for s in grade.items)


def test_a_symlink_out_of_the_group_folder_is_not_read(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "subs" / "g1")
    outside = make_run_dir(tmp_path / "elsewhere")
    log = root / "experiments" / "priority" / "evidence.jsonl"
    log.unlink()
    log.symlink_to(os.path.relpath(outside / "experiments" / "priority" / "evidence.jsonl", log.parent))
    grade = _grade(root)
    assert _points(grade)["priority.ran"] == 0
    assert "unsafe-symlink-outside" in _codes(grade)
    assert any("symlink" in reason for reason in grade.needs_look)


def test_a_huge_file_is_refused_with_the_reason(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1")
    with open(root / "experiments" / "priority" / "evidence.jsonl", "ab") as handle:
        handle.truncate(10 * 1024 * 1024)
    grade = _grade(root, max_bytes=1024 * 1024)
    assert "unsafe-too-large" in _codes(grade)
    assert _points(grade)["priority.ran"] == 0


def test_a_fifo_does_not_hang_the_grader(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1")
    (root / "claims.json").unlink()
    os.mkfifo(root / "claims.json")
    assert "unsafe-not-a-file" in _codes(_grade(root))


def test_garbage_json_and_yaml_are_findings(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1")
    (root / "run.json").write_text("[" * 100_000)  # deep nesting: RecursionError in json
    (root / "inventory.yaml").write_text("members: [unclosed\n")
    (root / "claims.json").write_text(json.dumps(["not", "claims"]))
    grade = _grade(root)
    assert "unparsable" in _codes(grade)
    assert _points(grade)["environment"] == 0  # no inventory: no table


def test_a_judge_that_crashes_is_recorded_not_raised(tmp_path: Path) -> None:
    def broken(log, experiment):
        raise KeyError("answers")

    root = make_run_dir(tmp_path / "g1")
    grade = grade_one("g1", root, RUBRIC, LAB, broken)
    assert "judge-failed" in _codes(grade)
    answer = next(s for s in grade.items if s.item.id == "priority.answer")
    assert answer.points == 0 and "KeyError" in answer.en


def test_forged_records_draw_the_hidden_forgery_penalty(tmp_path: Path) -> None:
    steps = priority_records()
    steps[5] = ("object", ("ADDED", "pods", steps[2][1][2]))  # the low job's pod again, as if it were the high job's
    root = make_run_dir(tmp_path / "g1", steps=steps)
    grade = _grade(root)
    assert {"rv-backwards"} <= _codes(grade)
    assert _points(grade)["-forgery"] == 15


def _with_facts(root: Path, facts: list[dict]) -> None:
    claims = json.loads((root / "claims.json").read_text())
    claims["experiments"][0]["facts"] = facts
    (root / "claims.json").write_text(json.dumps(claims))


def test_facts_the_evidence_shows_are_supported(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1")
    _with_facts(root, [{"job": "job-config-1", "task": "train-0", "attempt": 0, "node": "hostname-dan"},
                       {"job": "job-config-2", "task": "train-0", "attempt": 0, "node": "hostname-dan",
                        "preempted": False}])
    grade = _grade(root)
    assert not [f for f in grade.findings if f.kind == "claim"]
    assert _points(grade)["claims"] == 5


def test_a_claimed_node_the_evidence_contradicts_is_flagged_with_the_bind_record(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1")
    _with_facts(root, [{"job": "job-config-2", "task": "train-0", "attempt": 0, "node": "hostname-carol"},
                       {"job": "job-config-9", "task": "train-0", "attempt": 0, "node": "hostname-dan"}])
    grade = _grade(root)
    wrong = next(f for f in grade.findings if f.code == "fact-contradicted")
    assert wrong.seq == 7 and "hostname-carol" in wrong.en and "hostname-dan" in wrong.en
    assert any(f.code == "fact-not-in-evidence" for f in grade.findings)
    assert _points(grade)["claims"] == 0 and _points(grade)["-unsupported"] == 6


def test_a_hived_config_naming_machines_outside_the_inventory(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1")
    config = root / "hived" / "two-vc.yaml"
    config.write_text(config.read_text().replace("hostname-carol", "borrowed-box"))
    grade = _grade(root)
    finding = next(f for f in grade.findings if f.code == "config-unknown-node")
    assert "borrowed-box" in finding.en and finding.file == "hived/two-vc.yaml"
    assert _points(grade)["-foreign-jobs"] == 5


def test_a_folder_flooded_with_files_is_read_up_to_a_cap(tmp_path: Path) -> None:
    root = make_run_dir(tmp_path / "g1")
    for index in range(40):
        (root / "env" / f"x{index:02d}.json").write_text("{}")
    grade = _grade(root)
    assert "too-many-files" in _codes(grade)
