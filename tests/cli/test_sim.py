"""`hivedlab sim replay`: help, happy path, bad input (one-line errors, exit 2) and per-step error lines."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import ROOT
from tests.support.scoring import PUBLIC

LAB2 = json.loads((PUBLIC / "pub-0002-lab-config-2.json").read_text(encoding="utf-8"))


def _write(tmp_path: Path, config: str, ops: Any) -> tuple[str, str]:
    config_path = tmp_path / "hived.yaml"
    config_path.write_text(config, encoding="utf-8")
    ops_path = tmp_path / "ops.json"
    ops_path.write_text(ops if isinstance(ops, str) else json.dumps(ops), encoding="utf-8")
    return str(config_path), str(ops_path)


def _lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_help_has_examples(cli: Callable[..., Any]) -> None:
    result = cli("sim", "--help")
    assert result.code == 0
    assert "examples:" in result.out and "hivedlab sim replay" in result.out
    result = cli("sim", "replay", "--help")
    assert result.code == 0 and "OPS.json" in result.out


def test_missing_action_is_a_usage_error(cli: Callable[..., Any]) -> None:
    assert cli("sim").code == 2


def test_replay_matches_the_recorded_scenario(cli: Callable[..., Any], tmp_path: Path) -> None:
    config, ops = _write(tmp_path, LAB2["config"], LAB2["ops"])
    result = cli("sim", "replay", config, ops)
    assert result.code == 0, result.err
    lines = _lines(result.out)
    assert lines[0] == {"op": "init", "result": "ok", "nodes": ["hostname-carol", "hostname-dan"]}
    assert len(lines) == len(LAB2["ops"]) + 1
    for line, expected in zip(lines[1:], LAB2["expected"], strict=True):
        assert line["result"] == expected["result"]
        if expected["result"] == "bind":
            assert (line["node"], line["leafCellIsolation"]) == (expected["node"], expected["leafCellIsolation"])


def test_bad_operations_get_error_lines_and_the_replay_goes_on(cli: Callable[..., Any], tmp_path: Path) -> None:
    spec = {"virtualCluster": "default", "priority": 10, "leafCellType": "GPU", "leafCellNumber": 1}
    ops = [
        {"op": "schedule", "pod": "a", "spec": spec},
        {"op": "explode"},
        {"op": "delete"},
        "not an object",
        {"op": "delete", "pod": "a"},
        {"op": "delete", "pod": "a"},
        {"op": "schedule", "pod": "b", "spec": dict(spec, priority=2000)},
        {"op": "node_bad", "node": "hostname-dan"},
        {"op": "schedule", "pod": "c", "spec": spec},
    ]
    config, ops_path = _write(tmp_path, LAB2["config"], ops)
    result = cli("sim", "replay", config, ops_path)
    assert result.code == 0
    lines = _lines(result.out)[1:]
    assert [line["result"] for line in lines] == ["bind", "error", "error", "error", "ok", "error", "error", "ok",
                                                  "bind"]
    assert "unknown op" in lines[1]["message"]
    assert "'pod'" in lines[2]["message"]
    assert "already deleted" in lines[5]["message"]
    assert lines[6]["message"].endswith("Priority is greater than 1000")
    assert [line["i"] for line in lines] == list(range(len(ops)))


@pytest.mark.parametrize(
    ("config", "ops", "needle"),
    [
        ("physicalCluster: [", "[]", "Failed to unmarshal YAML"),
        ("physicalCluster:\n  physicalCells:\n  - cellType: NOPE\n", "[]",
         "physicalCells contains unknown cellType: NOPE"),
        (None, "{not json", "invalid operations file"),
        (None, '{"op": "schedule"}', "expected a JSON array"),
    ],
)
def test_bad_input_is_one_line_exit_2(cli: Callable[..., Any], tmp_path: Path, config: str | None, ops: str,
                                      needle: str) -> None:
    config_path, ops_path = _write(tmp_path, config if config is not None else LAB2["config"], ops)
    result = cli("sim", "replay", config_path, ops_path)
    assert result.code == 2
    assert result.out == ""
    assert needle in result.err and len(result.err.strip().splitlines()) == 1
    assert result.err.startswith("hivedlab sim: error: ")


def test_unreadable_file(cli: Callable[..., Any], tmp_path: Path) -> None:
    result = cli("sim", "replay", str(tmp_path / "missing.yaml"), str(tmp_path / "missing.json"))
    assert result.code == 2 and "HiveD config " in result.err and "missing.yaml: cannot read (" in result.err


def test_replay_imports_only_what_it_needs(tmp_path: Path) -> None:
    """The replay must stay fast: no kubernetes, requests, rich, jinja2 or matplotlib on its path."""
    import subprocess
    import sys

    config, ops = _write(tmp_path, LAB2["config"], LAB2["ops"][:3])
    probe = (
        "import sys, io, contextlib\n"
        "from hivedlab.cli.main import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): code = main(['sim', 'replay', {config!r}, {ops!r}])\n"
        "heavy = sorted({'kubernetes', 'requests', 'rich', 'jinja2', 'matplotlib', 'docker'} & set(sys.modules))\n"
        "print(code, heavy)\n"
    )
    root = ROOT
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=root, check=False)
    assert done.stdout.strip() == "0 []", done.stderr
