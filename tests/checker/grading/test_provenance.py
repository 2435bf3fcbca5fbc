"""Provenance: a simulator run relabelled as a real one (source k8s, run.json cluster pai, chain recomputed) is
scored as the simulator run it is and flagged; evidence a real cluster could have written is not."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from hivedlab.checker.grading.provenance import simulator_signs
from hivedlab.evidence import read_evidence, record_hash
from tests.support.graded_runs import BASE, EXPERIMENTS, grade, group


def _reseal(path: Path, change) -> None:
    records, prev = [], "0" * 64
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        change(record)
        record.pop("hash")
        record["prev"] = prev
        record["hash"] = prev = record_hash(record)
        records.append(json.dumps(record, ensure_ascii=False))
    path.write_text("\n".join(records) + "\n", encoding="utf-8")


def _relabel(record: dict) -> None:
    record["source"] = "k8s"
    action = record.get("action") or {}
    if action.get("type") == "plan":
        action["cluster"] = "pai"


def relabelled(root: Path) -> Path:
    run = json.loads((root / "run.json").read_text())
    run["cluster"] = "pai"
    (root / "run.json").write_text(json.dumps(run))
    for experiment in EXPERIMENTS:
        _reseal(root / "experiments" / experiment / "evidence.jsonl", _relabel)
    return root


def test_a_relabelled_simulator_run_scores_as_one_and_is_flagged(tmp_path: Path) -> None:
    honest = grade(group(tmp_path / "a"))
    forged = grade(relabelled(group(tmp_path / "b")))
    assert forged.total() == honest.total()
    assert forged.sources == honest.sources == ("sim",) * 5
    flagged = [f for f in forged.findings if f.code == "simulator-relabelled"]
    assert {f.experiment for f in flagged} == set(EXPERIMENTS)
    assert all("UUID version 5" in f.en and "container ids" in f.en and "2026-01-01T08:00:00Z" in f.en for f in flagged)
    assert any("simulator" in reason for reason in forged.needs_look)


def test_each_sign_alone_is_named(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes((BASE / "experiments" / "priority" / "evidence.jsonl").read_bytes())
    fresh: dict[str, str] = {}

    def random_uids(record: dict) -> None:
        obj = (record.get("watch") or {}).get("object") or {}
        uid = (obj.get("metadata") or {}).get("uid")
        if uid:
            obj["metadata"]["uid"] = fresh.setdefault(uid, str(uuid.uuid4()))

    _reseal(log, random_uids)
    signs = [s.en for s in simulator_signs(read_evidence(log).records)]
    assert not any("UUID" in s for s in signs) and any("08:00:00Z" in s for s in signs)


def test_a_real_looking_log_shows_no_sign(tmp_path: Path) -> None:
    from tests.support.grade_builders import make_run_dir

    root = make_run_dir(tmp_path / "g", source="k8s")
    assert simulator_signs(read_evidence(root / "experiments" / "priority" / "evidence.jsonl").records) == []
    assert simulator_signs([]) == []


def test_a_run_relabelled_as_plain_kubernetes_is_flagged_too(tmp_path: Path) -> None:
    def as_k8s(root: Path) -> Path:
        run = json.loads((root / "run.json").read_text())
        run["cluster"] = "k8s"
        (root / "run.json").write_text(json.dumps(run))  # the logs still say sim: run.json alone claims a real one
        return root

    forged = grade(as_k8s(group(tmp_path / "b")))
    assert {f.experiment for f in forged.findings if f.code == "simulator-relabelled"} == set(EXPERIMENTS)


def test_name_based_uids_of_tfjobs_and_podgroups_are_a_sign(tmp_path: Path) -> None:
    from hivedlab.evidence import EvidenceWriter

    log = tmp_path / "log.jsonl"
    with EvidenceWriter(log, "k8s") as writer:
        for resource, kind in (("tfjobs", "TFJob"), ("podgroups", "PodGroup")):
            uid = str(uuid.uuid5(uuid.NAMESPACE_URL, kind))
            writer.write_object("ADDED", resource, {"kind": kind, "metadata": {"name": "job", "uid": uid}},
                                time="2026-11-26T09:00:00.000000Z")
    (sign,) = [s.en for s in simulator_signs(read_evidence(log).records)]
    assert sign.startswith("2 of 2 object uids are name-based")
