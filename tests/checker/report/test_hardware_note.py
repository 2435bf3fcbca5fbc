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


def test_a_group_on_other_hardware_gets_its_layouts_notes_in_the_report(cli, tmp_path):
    """One worker with 2 GPUs: both configs render (two-vc splits its GPUs); the report says how they differ."""
    inventory = tmp_path / "group.yaml"
    inventory.write_text(
        "group: g2\nmembers:\n"
        "  - {name: Alice, user: alice, roles: [dev-box], hostname: hostname-alice, ip: 192.0.2.10}\n"
        "  - {name: Bob, user: bob, roles: [master], hostname: hostname-bob, ip: 192.0.2.11}\n"
        "  - {name: Carol, user: carol, roles: [worker], hostname: hostname-carol, ip: 192.0.2.12, gpus: 2}\n",
        encoding="utf-8")
    out = tmp_path / "out"
    result = cli("run", "all", "--inventory", str(inventory), "--out", str(out), "--lang", "en")
    assert result.code == 0, result.err
    report = (out / "report.md").read_text(encoding="utf-8")
    assert ("vc-safety, priority, opportunistic, gang, incremental ran on the group's own hardware with a HiveD "
            "config that differs from the manual's: a single worker: every job runs on it") in report
    assert "gang, incremental ran on the group's own hardware" in report and "2 GPUs of the same machine" in report
    assert "..\n" not in report
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["hardware"]["gang"]["on"] == "group" and len(run["hardware"]["gang"]["notes"]) == 2


def test_the_manuals_hardware_has_no_layout_note(sim_lab):
    run = json.loads((sim_lab.out / "run.json").read_text(encoding="utf-8"))
    assert all(entry == {"on": "group"} for entry in run["hardware"].values())
    assert "HiveD 配置与实验手册的不同" not in (sim_lab.out / "report.md").read_text(encoding="utf-8")
