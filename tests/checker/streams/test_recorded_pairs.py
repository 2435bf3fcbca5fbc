"""The recorded stream pairs (tests/fixtures/stream-pairs/, docs/simulator-vs-rehearsal.md): each plan on each layout
as the rehearsal cluster ran it, and the Kubeflow plan's contrast runs (`kubeflow/kubeflow-gang@<scheduler>/`). The
simulator runs the same plan on the same layout (under the same scheduler) again here, and its stream must match the
recorded rehearsal stream beyond the documented differences."""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hivedlab.checker.streams import diff_streams, load_known, read_stream
from tests.support.paths import FIXTURES
from tests.support.transcripts import find_secrets

PAIRS = FIXTURES / "stream-pairs"
RECORDED = "rehearsal.jsonl.gz"
CASES = sorted(log.parent for log in PAIRS.glob(f"*/*/{RECORDED}"))
OPENPAI_LAYOUTS = {"manual", "four-gpu", "mixed"}
KUBEFLOW = "kubeflow"  # the layout of the Kubeflow plan's contrast runs, one folder per scheduler


def _unpacked(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "rehearsal.jsonl"
    with gzip.open(folder / RECORDED, "rb") as packed, target.open("wb") as out:
        shutil.copyfileobj(packed, out)
    return target


def test_every_layout_and_plan_is_recorded() -> None:
    layouts = {case.parent.name for case in CASES}
    assert layouts == OPENPAI_LAYOUTS | {KUBEFLOW}
    for layout in layouts:
        assert (PAIRS / layout / "inventory.yaml").is_file()
    assert len(CASES) == 3 * 7 + 2, [f"{c.parent.name}/{c.name}" for c in CASES]
    assert sorted(c.name for c in CASES if c.parent.name == KUBEFLOW) == [
        "kubeflow-gang@default", "kubeflow-gang@kube-batch"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_the_simulator_matches_the_recorded_rehearsal(case: Path, tmp_path: Path,
                                                      cli: Callable[..., Any]) -> None:
    recorded = read_stream(_unpacked(case, tmp_path))
    assert recorded.source == "k8s" and recorded.run_id == case.name
    plan, _, scheduler = case.name.partition("@")
    ran = cli("run", plan, *(("--scheduler", scheduler) if scheduler else ()), "--cluster", "sim", "--seed", "1",
              "--inventory", str(case.parent / "inventory.yaml"), "--out", str(tmp_path / "sim"), "--no-report",
              "--lang", "en")
    assert ran.code in (0, 1), ran.err
    home = "contrast" if scheduler else "experiments"
    simulated = read_stream(tmp_path / "sim" / home / case.name / "evidence.jsonl")
    undocumented = [d.line() for d in diff_streams(simulated, recorded, load_known()) if not d.documented]
    assert undocumented == []


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_a_recorded_log_holds_no_secret(case: Path, tmp_path: Path) -> None:
    """The fixture scan (tests/test_fake_contracts.py) reads text files only; the packed logs are scanned here."""
    text = _unpacked(case, tmp_path).read_text(encoding="utf-8")
    assert find_secrets(text) == []
    assert "/root/" not in text and "/home/" not in text
