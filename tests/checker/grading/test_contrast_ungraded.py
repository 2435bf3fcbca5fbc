"""Contrast runs without HiveD (docs/other-schedulers.md) are listed in the feedback as ungraded, never scored."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.grade_builders import make_run_dir


def test_contrast_runs_are_listed_as_ungraded(cli, tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path / "out")
    run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    plain = cli("grade", "--self", str(run_dir))
    run["contrast"] = ["kubeflow-gang@default", "kubeflow-gang@kube-batch"]
    (run_dir / "run.json").write_text(json.dumps(run), encoding="utf-8")
    result = cli("grade", "--self", str(run_dir))
    assert result.code == plain.code
    assert "Ungraded contrast runs" in result.out and "`kubeflow-gang@kube-batch`" in result.out
    assert "Ungraded contrast runs" not in plain.out
    score = [line for line in result.out.splitlines() if "Score" in line]
    assert score == [line for line in plain.out.splitlines() if "Score" in line]
