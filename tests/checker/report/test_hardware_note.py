"""The report says which experiments ran on the manual's simulated hardware, and why (run.json's `hardware`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

from hivedlab.checker.report.build import build_report
from tests.support.paths import FIXTURES

RUN_SIM = FIXTURES / "report" / "run-sim"
WHY = {"zh": "本组只有一台 worker，1 块 GPU，不足以构成 one-vc 配置（需要 2 块）",
       "en": "the group's single worker has 1 GPU, too few for the 'one-vc' config (2 needed)"}


def _run(tmp_path: Path, hardware: Mapping[str, object] | None) -> Path:
    run = tmp_path / "run"
    shutil.copytree(RUN_SIM, run)
    data = json.loads((run / "run.json").read_text(encoding="utf-8"))
    if hardware is not None:
        data["hardware"] = hardware
    (run / "run.json").write_text(json.dumps(data), encoding="utf-8")
    return run


def test_the_report_names_the_experiments_on_the_manuals_hardware(tmp_path: Path, quick_charts: None) -> None:
    run = _run(tmp_path, {"vc-safety": {"on": "group"}, "gang": {"on": "manual", "why": WHY},
                          "incremental": {"on": "manual", "why": WHY}})
    build_report(run, "en")
    md = (run / "report.md").read_text(encoding="utf-8")
    assert ("> - gang, incremental ran on the simulated cluster on the lab manual's hardware (two workers with one GPU "
            "each), with the group's own members: " + WHY["en"]) in md
    assert "vc-safety ran" not in md
    build_report(run, "zh")
    assert "gang、incremental 在模拟集群上按实验手册的硬件" in (run / "report.md").read_text(encoding="utf-8")


def test_no_note_when_every_experiment_ran_on_the_groups_workers(tmp_path: Path, quick_charts: None) -> None:
    for hardware in (None, {"gang": {"on": "group"}}, {"gang": "garbage"}):
        run = _run(tmp_path / str(len(str(hardware))), hardware)
        build_report(run, "en")
        assert "the lab manual's hardware" not in (run / "report.md").read_text(encoding="utf-8")
