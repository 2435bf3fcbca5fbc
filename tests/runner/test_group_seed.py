"""The simulator takes every seed, default or given, together with the inventory's group name: two groups never
make runs that only names tell apart, and the same group and seed make the same run again."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from hivedlab.checker.grading.provenance import content_fingerprint
from hivedlab.cli.main import main
from hivedlab.evidence import read_evidence
from hivedlab.runner import group_seed
from tests.support.grade_class import class_inventory

LOG = Path("experiments") / "gang" / "evidence.jsonl"


def _run(tmp_path: Path, name: str, group: str, seed: int | None) -> Path:
    inventory = tmp_path / f"{name}.yaml"
    inventory.write_text(yaml.safe_dump({**class_inventory(1), "group": group}), encoding="utf-8")
    out = tmp_path / name
    args = ["run", "gang", "--no-report", "--inventory", str(inventory), "--out", str(out)]
    assert main([*args, *(("--seed", str(seed)) if seed is not None else ())]) == 0
    return out


def _fingerprint(out: Path) -> str:
    found = content_fingerprint(read_evidence(out / LOG).records)
    assert found is not None
    return found.digest


def test_two_groups_with_one_seed_make_different_runs_and_one_group_the_same_run_again(tmp_path: Path) -> None:
    first = _run(tmp_path, "a", "team-a", None)  # the default seed
    again = _run(tmp_path, "a2", "team-a", 1)
    other = _run(tmp_path, "b", "team-b", None)
    assert _fingerprint(first) == _fingerprint(again)
    assert _fingerprint(first) != _fingerprint(other)
    record = json.loads((other / "run.json").read_text(encoding="utf-8"))
    assert (record["seed"], record["group"]) == (1, "team-b")


def test_the_group_seed_depends_on_both() -> None:
    assert len({group_seed(7, "a"), group_seed(7, "b"), group_seed(8, "a"), group_seed(7, "")}) == 4
