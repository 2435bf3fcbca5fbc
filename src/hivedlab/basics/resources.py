"""Where the shipped data lives: configs, jobs, experiment plans and report templates.

The data stays in the repository's top-level folders (`configs/`, `jobs/`, `labs/experiments/`, `labs/smoke/`,
`report_templates/`). A wheel carries them inside the package (`pyproject.toml` maps each folder to
`hivedlab/configs/`, ...); a checkout (an editable install, or `src/` on the path) reads them where they are. The
import system is not asked: setuptools' editable finder cannot serve a folder without code below a regular package.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent
_CHECKOUT = _PACKAGE.parent.parent if _PACKAGE.parent.name == "src" else None


def _folder(name: str) -> Path:
    """The data folder `name` (as named in the repository): inside the installed package, else in the checkout."""
    for base in (_PACKAGE, _CHECKOUT):
        if base is not None and (base / name).is_dir():
            return base / name
    raise RuntimeError(f"hivedlab is installed without its data ({name}/): reinstall it with `pip install .`")


CONFIGS = _folder("configs")
HIVED_CONFIGS = CONFIGS / "hived"
SCHEMAS = CONFIGS / "schemas"
JOBS = _folder("jobs")
EXPERIMENTS = _folder("labs/experiments")
SMOKE_PLANS = _folder("labs/smoke")  # plans run and judged like the experiments, outside the report's rows
REPORT_TEMPLATES = _folder("report_templates")
GROUP_EXAMPLE = CONFIGS / "group.example.yaml"

# Each data folder under the name it has in the repository, which is how a run names the files it used.
_SHIPPED = {"configs": CONFIGS, "jobs": JOBS, "labs/experiments": EXPERIMENTS, "labs/smoke": SMOKE_PLANS,
            "report_templates": REPORT_TEMPLATES}


def shipped_name(path: Path) -> str:
    """A shipped file's name in the repository (`labs/experiments/gang.yaml`); any other file's base name."""
    absolute = path.absolute()
    for name, folder in _SHIPPED.items():
        if absolute.is_relative_to(folder):
            return f"{name}/{absolute.relative_to(folder).as_posix()}"
    return path.name
