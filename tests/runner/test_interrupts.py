"""Ctrl-C at any instant of `hivedlab run`: one line with the next command, never a traceback (not even from inside a
library's import, where Python before 3.12 wraps the KeyboardInterrupt in a RuntimeError), and the next command the
line gives ends in a complete run directory."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

INSTANTS = 42


def _start(out: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "hivedlab", *args, "--out", str(out)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "MPLBACKEND": "Agg"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as from a terminal


def _interrupted_at(out: Path, after_s: float) -> tuple[int, str]:
    run = _start(out, "run", "gang")
    time.sleep(after_s)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=120)
    return run.returncode, err


@pytest.mark.slow
def test_ctrl_c_at_many_instants_says_the_next_command_and_it_completes_the_run(tmp_path: Path) -> None:
    began = time.monotonic()
    whole = _start(tmp_path / "whole", "run", "gang")
    whole.communicate(timeout=300)
    assert whole.returncode == 0
    duration = time.monotonic() - began
    advice: list[tuple[Path, str]] = []
    for index in range(INSTANTS):
        out = tmp_path / f"cut{index}"
        code, err = _interrupted_at(out, 0.1 + duration * index / INSTANTS)
        if "init_import_site" in err:  # a loaded machine: the Ctrl-C came while Python itself started, before any
            continue  # of hivedlab's code could run ("Fatal Python error: init_import_site")
        assert "Traceback" not in err and "RuntimeError" not in err, (index, err)
        if code == 0:  # it had finished
            continue
        # 130, or the SIGINT death Python chooses after a Ctrl-C inside an import (a shell shows it as 130 too)
        said = [line for line in err.strip().splitlines() if not line.startswith("小组 / group:")]  # the group line
        assert code in (130, -signal.SIGINT) and len(said) == 1, (index, code, err)
        found = re.search(r"`(hivedlab [^`]+)`", err)
        assert found, err
        advice.append((out, found.group(1)))
    assert advice, "no instant landed while the run ran"
    for out, command in advice[:: max(1, len(advice) // 4)]:  # follow the advice: it completes the run directory
        done = subprocess.run([sys.executable, "-m", *command.split()], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "MPLBACKEND": "Agg"})
        assert done.returncode == 0, (command, done.stderr)
        assert (out / "experiments" / "gang" / "verdicts.json").is_file() and (out / "claims.json").is_file()


def test_a_ctrl_c_python_could_not_raise_where_it_landed_is_kept_not_printed() -> None:
    """A KeyboardInterrupt inside a finalizer or an import-machinery callback is "unraisable": Python would print
    "Exception ignored …" with a traceback and go on. `python -m hivedlab`'s hook keeps it instead (and, while the
    CLI loads, turns it into the one-line interrupt)."""
    import ast

    source = (Path(__file__).parents[2] / "src" / "hivedlab" / "__main__.py").read_text(encoding="utf-8")
    kept = [node for node in ast.parse(source).body if isinstance(node, ast.AnnAssign | ast.FunctionDef)
            and ast.unparse(node).startswith(("_CUT", "def _unraisable"))]
    assert len(kept) == 2
    child = "\n".join(["import sys", *map(ast.unparse, kept), "sys.unraisablehook = _unraisable",
                       "class Cut:", "    def __del__(self):", "        raise KeyboardInterrupt",
                       "Cut()", "print(type(_CUT[0]).__name__ if _CUT else 'lost')"])
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "KeyboardInterrupt" and not done.stderr, done.stderr
