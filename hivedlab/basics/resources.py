"""Where the shipped data lives: configs, jobs, experiment plans and report templates, read as package data.

The repository's top-level folders (`configs/`, `jobs/`, `labs/`, `report_templates/`, `cluster/`, `checker/`) are
linked into the `hivedlab` package, so the same paths serve an editable checkout and a plain `pip install .`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

PACKAGE = Path(str(resources.files("hivedlab")))
CONFIGS = PACKAGE / "configs"
HIVED_CONFIGS = CONFIGS / "hived"
SCHEMAS = CONFIGS / "schemas"
JOBS = PACKAGE / "jobs"
EXPERIMENTS = PACKAGE / "labs" / "experiments"
SMOKE_PLANS = PACKAGE / "labs" / "smoke"  # plans run and judged like the experiments, outside the report's five rows
REPORT_TEMPLATES = PACKAGE / "report_templates"
GROUP_EXAMPLE = CONFIGS / "group.example.yaml"


def shipped_name(path: Path) -> str:
    """A shipped file's name relative to the package (`labs/experiments/gang.yaml`); any other file's base name."""
    try:
        return path.absolute().relative_to(PACKAGE).as_posix()
    except ValueError:
        return path.name
