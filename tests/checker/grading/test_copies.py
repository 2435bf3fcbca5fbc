"""Copies between groups: a run directory copied and disguised every way (renamed group, members, users, tag,
shifted times, new uids, re-sealed chain) is flagged, one cluster per shared run, naming the matching records;
honest groups with other seeds or inventories are not; overlapping real evidence is; students never see the other
name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hivedlab.checker.grading.batch import grade_batch
from hivedlab.checker.grading.copies import copy_clusters
from hivedlab.checker.grading.outputs import feedback_md
from hivedlab.checker.grading.rubric import load_rubric
from hivedlab.checker.judging.judge import judge_evidence
from hivedlab.evidence import record_hash
from tests.support.grade_builders import LAB, fake_judge, make_run_dir
from tests.support.grade_class import WAYS, another_run

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


def test_copies_disguised_every_way_form_one_cluster_and_honest_groups_none(generated_class: Path,
                                                                           tmp_path: Path) -> None:
    result = grade_batch(generated_class, tmp_path / "out", RUBRIC, LAB, judge_evidence)
    copies = {f"copy-{way}" for way in WAYS}
    clusters = copy_clusters(result.grades)
    assert [set(c.groups) for c in clusters] == [copies | {"honest-1-s1"}]
    for grade in result.grades:
        flagged = [f for f in grade.findings if f.code == "copied-evidence"]
        if grade.name.startswith("honest-") and grade.name != "honest-1-s1":
            assert flagged == [], grade.name
            continue
        assert len(flagged) == 1, grade.name
        assert "copy cluster 1" in flagged[0].en and "the same run by content" in flagged[0].en
        for experiment in ("gang", "priority", "vc-safety"):
            assert f"experiments/{experiment}/evidence.jsonl#seq=0-" in flagged[0].en
        assert flagged[0].file.startswith("experiments/") and flagged[0].seq == 0
        assert "copy cluster 1" in " ".join(grade.needs_look)
        assert "honest" not in feedback_md(grade, RUBRIC).replace(grade.name, "")
    grades = (tmp_path / "out" / "grades.md").read_text(encoding="utf-8")
    section = grades.split("## Copies / 证据相同的小组")[1].split("\n## ")[0]
    assert section.count("cluster 1 / 第 1 簇") == 1 and "cluster 2" not in section
    assert all(name in section for name in copies)


def test_an_honest_class_alone_has_no_copies(generated_class: Path, tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    for folder in generated_class.iterdir():
        if folder.name.startswith("honest-") and folder.name != "honest-1-s1":
            shutil.copytree(folder, subs / folder.name)
    shutil.copytree(generated_class / "copy-all", subs / "honest-1-s1")  # the copy alone is honest-looking
    result = grade_batch(subs, tmp_path / "out", RUBRIC, LAB, judge_evidence)
    assert len(result.grades) == 4 and copy_clusters(result.grades) == []
    assert "None. / 无。" in (tmp_path / "out" / "grades.md").read_text().split("## Copies")[1]


def test_a_cut_copy_is_not_the_same_run(generated_class: Path, tmp_path: Path) -> None:
    """The fingerprint covers the whole log: one record less is another log (the cut is flagged on its own)."""
    subs = tmp_path / "subs"
    shutil.copytree(generated_class / "honest-2-s1", subs / "a")
    shutil.copytree(generated_class / "honest-2-s1", subs / "b")
    for log in sorted((subs / "b" / "experiments").rglob("evidence.jsonl")):
        lines = log.read_text().splitlines(keepends=True)
        log.write_text("".join(lines[:-1]))
    result = grade_batch(subs, tmp_path / "out", RUBRIC, LAB, fake_judge)
    (cluster,) = copy_clusters(result.grades)  # still shared: the same simulator inputs
    assert cluster.places("a") == () and cluster.count("inputs", "a") == 1


def test_a_copied_real_run_directory_is_flagged_naming_both(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    make_run_dir(subs / "alpha", source="k8s")
    shutil.copytree(subs / "alpha", subs / "beta")
    result = grade_batch(subs, tmp_path / "out", RUBRIC, LAB, fake_judge)
    assert any("group(s) beta" in f and "identical log" in f and "the same run by content" in f
               for f in _copies(result, "alpha"))
    assert any("group(s) alpha" in f for f in _copies(result, "beta"))
    grades = (tmp_path / "out" / "grades.md").read_text()
    assert "evidence shared with group(s) beta" in grades and "evidence shared with group(s) alpha" in grades
    beta = next(g for g in result.grades if g.name == "beta")
    assert "alpha" not in feedback_md(beta, RUBRIC)


def test_overlapping_real_evidence_is_flagged_distinct_runs_are_not(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    make_run_dir(subs / "alpha", source="k8s")
    make_run_dir(subs / "beta", source="k8s")
    uids = _uids(subs / "alpha" / LOG)
    for index, uid in enumerate(uids):
        _rewrite(subs / "beta" / LOG, uid, f"beta-{index}")
    another_run(subs / "beta", 1)
    make_run_dir(subs / "gamma", source="k8s")
    _rewrite(subs / "gamma" / LOG, uids[0], "gamma-0")  # one pod's record edited in; the rest shared
    result = grade_batch(subs, tmp_path / "out", RUBRIC, LAB, fake_judge)
    assert _copies(result, "beta") == []
    shared = _copies(result, "alpha")
    assert len(shared) == 1 and "group(s) gamma" in shared[0] and "shared pod/job uid" in shared[0]
    assert "identical log" not in shared[0]


def test_the_same_simulator_inputs_are_flagged(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    make_run_dir(subs / "alpha")
    make_run_dir(subs / "beta")
    other = make_run_dir(subs / "gamma")
    another_run(other, 7)
    result = grade_batch(subs, tmp_path / "out", RUBRIC, LAB, fake_judge)
    assert any("group(s) beta" in f and "same simulator inputs" in f for f in _copies(result, "alpha"))
    assert _copies(result, "gamma") == []
