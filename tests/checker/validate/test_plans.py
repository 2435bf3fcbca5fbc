"""`hivedlab validate` on experiment plans: the loader `hivedlab run` uses decides, so a plan with a misspelt rule
parameter is refused (exit 1) with the loader's one-line message, and every shipped plan passes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hivedlab.basics.resources import EXPERIMENTS, SMOKE_PLANS
from hivedlab.checker.validate import ERROR, validate_paths


def _bad_gang(folder: Path) -> Path:
    """gang.yaml with its gang-waits rule's `while` misspelt `whlie`."""
    data = yaml.safe_load((EXPERIMENTS / "gang.yaml").read_text(encoding="utf-8"))
    data["rules"][0]["whlie"] = data["rules"][0].pop("while")
    path = folder / "gang.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


MESSAGE = "gang.yaml: rules/0 (gang-waits): unknown key 'whlie' for kind gang-waits (did you mean 'while'?)"


def test_the_shipped_plans_pass() -> None:
    report = validate_paths([EXPERIMENTS, SMOKE_PLANS])
    assert report.findings == () and report.exit_code() == 0
    assert set(report.kinds.values()) == {"plan"} and len(report.kinds) == len(report.files)


def test_a_misspelt_rule_parameter_is_an_error(tmp_path: Path) -> None:
    path = _bad_gang(tmp_path)
    report = validate_paths([path])
    assert [(f.rule, f.severity, f.message) for f in report.findings] == [("plan", ERROR, MESSAGE)]
    assert report.exit_code() == 1 and report.kinds == {str(path): "plan"}


def test_a_folder_walk_finds_the_bad_plan(tmp_path: Path) -> None:
    _bad_gang(tmp_path)
    assert [f.message for f in validate_paths([tmp_path]).errors] == [MESSAGE]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_command_refuses_the_plan(tmp_path: Path, cli, fmt: str) -> None:
    result = cli("validate", "--format", fmt, str(_bad_gang(tmp_path)))
    assert result.code == 1
    assert MESSAGE in result.out
