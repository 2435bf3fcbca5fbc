"""The numbered experiment scripts 03-07 run as programs, say which manual step they are, and run that experiment."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from hivedlab.plans.loader import load_plan, main_plans
from tests.support.paths import ROOT

EXAMPLE = "configs/group.example.yaml"  # named: a script reads the repository's group.yaml, which a developer may have

SCRIPTS = {
    "03_vc_safety.py": "vc-safety",
    "04_priority.py": "priority",
    "05_opportunistic.py": "opportunistic",
    "06_gang.py": "gang",
    "07_incremental.py": "incremental",
}


def test_every_main_experiment_plan_has_a_numbered_script():
    plans = {p.id for p in main_plans()}  # an optional plan (reconfig) runs as `hivedlab run ID` only
    assert set(SCRIPTS.values()) == plans
    assert all(load_plan(plan).manual_step and load_plan(plan).summary for plan in plans)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_script_prints_its_step_and_runs_the_experiment(script, tmp_path, cli):
    experiment = SCRIPTS[script]
    done = subprocess.run(
        [sys.executable, str(ROOT / "labs" / script), "--out", str(tmp_path), "--no-report", "--lang", "en",
         "--inventory", EXAMPLE],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    plan = load_plan(experiment)
    step = plan.manual_step
    assert done.stdout.startswith(f"[实验手册 {step} / manual step {step}] {plan.summary['zh']}\n"
                                  f"{plan.summary['en']}\n")
    judged = cli("check", str(tmp_path / "experiments" / experiment / "evidence.jsonl"), "--format", "json")
    assert judged.code == 0, judged.out + judged.err
    assert json.loads(judged.out)["experiment"] == experiment


def _script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A numbered script run as a student runs it, with the example inventory named (a script reads the
    repository's group.yaml, which a developer may have)."""
    return subprocess.run([sys.executable, str(ROOT / "labs" / name), *args, "--inventory", EXAMPLE], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_a_script_run_again_simulates_again_and_keeps_the_earlier_run(tmp_path):
    """The README's order: `make run`, then a numbered script into the same out/ (it used to exit 2)."""
    out = tmp_path / "out"
    assert _script("06_gang.py", "--out", str(out), "--no-report").returncode == 0
    first = (out / "experiments" / "gang" / "evidence.jsonl").read_bytes()
    again = _script("06_gang.py", "--out", str(out), "--no-report", "--lang", "en")
    assert again.returncode == 0, again.stderr
    (moved,) = [line for line in again.stderr.splitlines() if "moved" in line]
    assert moved.startswith("之前的模拟结果已移到 ")
    assert f"the earlier simulated run was moved to {out / 'replaced'}/" in moved
    (aside,) = (out / "replaced").iterdir()
    assert (aside / "experiments" / "gang" / "evidence.jsonl").read_bytes() == first


def test_a_script_never_moves_real_cluster_evidence(tmp_path):
    out = tmp_path / "out"
    real = out / "experiments" / "gang" / "evidence.jsonl"
    real.parent.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "fixtures" / "logs" / "gang-consistent.jsonl", real)
    before = real.read_bytes()
    done = _script("06_gang.py", "--out", str(out), "--no-report")
    assert done.returncode == 2 and "never replaces" in done.stderr
    assert real.read_bytes() == before and not (out / "replaced").exists()


def test_a_script_reads_options_as_argparse_does(tmp_path):
    """`--cluster=pai` is a real-cluster run: the script must not add the simulator's --replace to it."""
    done = _script("06_gang.py", "--cluster=pai", "--out", str(tmp_path / "out"))
    assert "--replace is for simulated runs" not in done.stderr
    assert "运行于 / running on: 真实集群 / real cluster" in done.stdout
    member = _script("04_priority.py", "--member=carol", "--out", str(tmp_path / "o2"), "--no-report")
    assert member.returncode == 0, member.stderr
    assert "轮到 Carol 提交 / Carol's turn to submit" in member.stdout
