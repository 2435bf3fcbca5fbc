"""The layout installs anywhere: a wheel holds all the code and data, a checkout without symlinks builds a working
package, and no module is importable under a second name (docs/architecture.md#layout)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import ROOT

DATA_FOLDERS = {"configs": "configs", "jobs": "jobs", "labs/experiments": "labs/experiments",
                "labs/smoke": "labs/smoke", "report_templates": "report_templates"}
LEFT_OUT = {".venv", ".git", "build", "out", "*.egg-info", ".mypy_cache", ".ruff_cache", ".import_linter_cache",
            ".pytest_cache", "__pycache__"}


def build_wheel(source: Path, out: Path) -> Path:
    return build_wheel_saying(source, out)[0]


def build_wheel_saying(source: Path, out: Path) -> tuple[Path, str]:
    """The wheel and what the build printed (setuptools' warnings too: pip passes them on unless -q)."""
    leftover = source / "build"  # setuptools' scratch folder, ignored by git; removed again unless it was there before
    existed = leftover.exists()
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    if not existed:
        shutil.rmtree(leftover, ignore_errors=True)
    assert built.returncode == 0, built.stderr
    return next(out.glob("hivedlab-*.whl")), built.stdout + built.stderr


def checkout_without_symlinks(destination: Path) -> Path:
    """The working tree as `git clone -c core.symlinks=false` writes it: each link a plain file holding its target."""
    shutil.copytree(ROOT, destination, symlinks=True, ignore=shutil.ignore_patterns(*LEFT_OUT))
    links = [path for path in destination.rglob("*") if path.is_symlink()]
    assert links, "the repository keeps its browsing links (checker -> src/hivedlab/checker)"
    for link in links:
        target = os.readlink(link)
        link.unlink()
        link.write_text(target, encoding="utf-8")
    return destination


def run_installed(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`hivedlab ARGS` from the unpacked wheel in `site`, the dependencies from this environment, not the checkout."""
    path = os.pathsep.join([str(site), *(p for p in sys.path if p and not Path(p).resolve().is_relative_to(ROOT))])
    env = {**os.environ, "PYTHONPATH": path, "PYTHONSAFEPATH": "1"}
    code = "import sys, hivedlab.cli.main as m; print(m.__file__, file=sys.stderr); sys.exit(m.main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return build_wheel_saying(ROOT, tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def wheel(built: tuple[Path, str]) -> Path:
    return built[0]


def test_the_build_says_no_warning(built: tuple[Path, str]) -> None:
    """`make run` installs the package: a data subfolder missing from `packages` printed ~300 lines of setuptools
    warnings ("absent from the `packages` configuration") that look like failures."""
    said = built[1]
    assert "Building wheel" in said or "Created wheel" in said, said  # pip did pass the build's output on
    assert "absent from" not in said and "Warning" not in said, said


def test_the_wheel_holds_every_module_and_every_data_file(wheel: Path) -> None:
    names = {name for name in zipfile.ZipFile(wheel).namelist() if not name.startswith("hivedlab-")}
    code = {p.relative_to(ROOT / "src").as_posix() for p in (ROOT / "src").rglob("*.py")}
    data = {f"hivedlab/{folder}/{p.relative_to(ROOT / source).as_posix()}"
            for folder, source in DATA_FOLDERS.items() for p in (ROOT / source).rglob("*")
            if p.is_file() and p.suffix != ".py"}
    assert "hivedlab/models/hived/algorithm.py" in code and "hivedlab/labs/experiments/gang.yaml" in data
    assert sorted(code - names) == [], "a package missing from pyproject.toml's [tool.setuptools] packages"
    assert sorted(data - names) == [], "a data file missing from [tool.setuptools.package-data]"
    assert sorted(names - code - data) == [], "the wheel holds only the package's code and data"


def test_a_checkout_without_symlinks_installs_and_runs_the_lab_elsewhere(tmp_path: Path) -> None:
    source = checkout_without_symlinks(tmp_path / "checkout")
    site = tmp_path / "site"
    zipfile.ZipFile(build_wheel(source, tmp_path / "wheel")).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_installed(site, elsewhere, "run", "all", "--out", "out", "--lang", "en", "--no-report")
    assert done.returncode == 0, done.stderr
    assert str(site) in done.stderr.splitlines()[0], "ran the installed copy"
    for experiment in ("vc-safety", "priority", "opportunistic", "gang", "incremental"):
        assert (elsewhere / "out" / "experiments" / experiment / "evidence.jsonl").is_file()


def test_the_installed_wheel_judges_and_reports_from_another_directory(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    done = run_installed(site, tmp_path, "run", "gang", "--out", "out", "--lang", "en")
    assert done.returncode == 0, done.stderr
    verdicts = (tmp_path / "out" / "experiments" / "gang" / "verdicts.json").read_text(encoding="utf-8")
    assert '"verdict": "consistent"' in verdicts and (tmp_path / "out" / "report.html").is_file()


def test_the_browsing_link_is_not_a_second_import_name() -> None:
    code = "import hivedlab.checker.judging.judge\ntry:\n    import checker\nexcept ImportError as e:\n    print(e)\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("import hivedlab.checker, not checker"), done.stdout


def test_no_module_of_the_package_was_loaded_under_another_name() -> None:
    import hivedlab.checker.report.build  # the deepest corners too
    import hivedlab.models.hived.algorithm  # noqa: F401

    package = (ROOT / "src" / "hivedlab").resolve()
    files = {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())}
    loaded = {name: Path(file).resolve() for name, file in files.items() if file}
    ours = {name for name, path in loaded.items() if path.is_relative_to(package)}
    assert "hivedlab.models.hived.algorithm" in ours
    assert sorted(name for name in ours if not name.startswith("hivedlab")) == []
