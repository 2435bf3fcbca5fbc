"""Where the project's shipped data lives (configs, jobs, plans, templates).

hivedlab is installed in editable mode from its repository (`make`), so the data folders sit
beside the packages at the repository root.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"
HIVED_CONFIGS = CONFIGS / "hived"
SCHEMAS = CONFIGS / "schemas"
JOBS = ROOT / "jobs"
EXPERIMENTS = ROOT / "labs" / "experiments"
REPORT_TEMPLATES = ROOT / "report_templates"
GROUP_EXAMPLE = CONFIGS / "group.example.yaml"
