"""Against the real programs (marker `rehearsal`): the optional reconfig plan runs unattended on the rehearsal
cluster (the run switches HiveD's config itself) and is judged as the real rest-server, HiveD and kube-scheduler
behave: the switch ends nothing, a test job preempts a demoted prod job, a new vc1 submission is accepted and never
scheduled, the former vc1 job is stranded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.rehearsal_lab import hivedlab, missing_parts, rehearsal_lab

pytestmark = [pytest.mark.rehearsal, pytest.mark.slow]


def test_reconfig_runs_unattended_and_is_consistent(tmp_path: Path) -> None:
    missing = missing_parts()
    if missing:
        pytest.skip(f"no rehearsal cluster to start: {missing}")
    with rehearsal_lab(tmp_path, "two-vc", ["default", "vc1"], speedup=5) as env:
        out = tmp_path / "out"
        run = hivedlab("run", "reconfig", "--cluster", "pai", "--out", str(out), "--lang", "en", env=env)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "switching the rehearsal cluster to 'one-vc'" in run.stderr  # the run's progress lines
        verdicts = json.loads((out / "experiments" / "reconfig" / "verdicts.json").read_text(encoding="utf-8"))
        assert verdicts["verdict"] == "consistent", [a["answer"]["en"] for a in verdicts["answers"]]
        by_kind = {a["kind"]: a["answer"]["en"] for a in verdicts["answers"]}
        assert "got HTTP 202" in by_kind["submission-after-switch"]
        assert "event Preempted" in by_kind["preempts-one-of"]
