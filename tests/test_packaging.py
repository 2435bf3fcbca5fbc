"""A plain (non-editable) install carries the code and the data, and runs the lab from any directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    leftover = ROOT / "build"  # setuptools' scratch folder, ignored by git; removed again unless it was there before
    existed = leftover.exists()
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    if not existed:
        shutil.rmtree(leftover, ignore_errors=True)
    assert built.returncode == 0, built.stderr
    return next(out.glob("hivedlab-*.whl"))


def test_the_wheel_holds_the_linked_folders_and_the_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in (
        "hivedlab/cluster/hived/algorithm.py", "hivedlab/checker/judge.py", "hivedlab/labs/runner.py",
        "hivedlab/labs/experiments/gang.yaml", "hivedlab/configs/hived/templates/two-vc.yaml.j2",
        "hivedlab/configs/schemas/experiment-plan.schema.json", "hivedlab/jobs/job-config-6.yaml",
        "hivedlab/jobs/rejected/job-over-quota-gang.yaml", "hivedlab/report_templates/report.zh.md.j2",
        "hivedlab/configs/group.example.yaml", "hivedlab/configs/rubric.default.yaml",
        "hivedlab/jobs/kubeflow/kube-batch/tfjob-gang-1.yaml", "hivedlab/configs/schemas/tfjob.schema.json",
    ):
        assert expected in names
    assert not any(name.startswith(("cluster/", "checker/", "labs/")) for name in names), "one namespace only"


def test_the_installed_wheel_runs_an_experiment_from_another_directory(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # the wheel's copy first, the dependencies from this environment; not the checkout
    path = os.pathsep.join([str(site), *(p for p in sys.path if p and Path(p).resolve() != ROOT)])
    env = {**os.environ, "PYTHONPATH": path, "PYTHONSAFEPATH": "1"}
    code = "import sys, hivedlab.cli.main as m; print(m.__file__, file=sys.stderr); sys.exit(m.main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, "run", "gang", "--out", "out", "--lang", "en"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert str(site) in done.stderr.splitlines()[0], "ran the installed copy"
    verdicts = (elsewhere / "out" / "experiments" / "gang" / "verdicts.json").read_text(encoding="utf-8")
    assert '"verdict": "consistent"' in verdicts and (elsewhere / "out" / "report.html").is_file()
