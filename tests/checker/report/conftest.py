"""The report of one real simulated run (`hivedlab run all`), shared by the report tests that read it as a student."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hivedlab.cli.main import main


@pytest.fixture(scope="session")
def sim_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`hivedlab run all` on the simulated cluster, its report in Chinese (the default)."""
    out = tmp_path_factory.mktemp("sim") / "out"
    try:
        code = main(["run", "all", "--out", str(out)])
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    if code != 0 or not (out / "report.md").is_file():
        pytest.fail(f"`hivedlab run all` did not produce a report (exit {code})")
    return out


@pytest.fixture(scope="session")
def sim_reports(sim_run: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """report.md of that run in zh, and in en re-rendered over the Chinese one (as a student switching language)."""
    english = tmp_path_factory.mktemp("sim-en") / "out"
    shutil.copytree(sim_run, english)
    assert main(["report", str(english), "--lang", "en"]) == 0
    return {"zh": (sim_run / "report.md").read_text(encoding="utf-8"),
            "en": (english / "report.md").read_text(encoding="utf-8")}
