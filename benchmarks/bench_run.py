"""Benchmark: `hivedlab run all` on the simulated cluster with verdicts and the report (target: a median of at most
1.8 s of CPU on the 2-core development machine, the process and any chart workers together: the 1.76 s reached for
issue 31 on main with the Kubeflow issue's changes, docs/benchmarks.md), and
`run all --each-member`: every member's turn, 17 runs for the example's four members (target: under 15 s wall).

Times the whole command in a fresh process (imports included, as a user sees it) `--repeat` times, plus the
simulation alone (`--no-report`), and prints the best and median CPU time (user + system, of the command and every
process it waited for: the chart workers) and wall time of each. Every run is checked: exit 0, the five experiments'
evidence (17 runs with --each-member), every verdict consistent, a chart per run and the report, or no report with
--no-report. --quick: each command once, for CI; no target applies.

--compare DIR...: `run all` in this checkout and in each DIR (another checkout, e.g. `git worktree add /tmp/old
40d3aa9`, run with its own code: DIR/src or DIR on PYTHONPATH, this interpreter's libraries), in turn, `--repeat`
rounds (default 5), so that a busy machine slows them alike; the median CPU and wall of each checkout.

    .venv/bin/python benchmarks/bench_run.py [--repeat 3] [--seed 1] [--quick]
    .venv/bin/python benchmarks/bench_run.py --compare /tmp/old-a /tmp/old-b [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 1.8  # CPU seconds, median
EACH_MEMBER_TARGET_S = 15.0  # wall seconds, best
RUNS: tuple[tuple[str, list[str]], ...] = (
    ("run all (with verdicts + report)", []),
    ("run all --no-report", ["--no-report"]),
    ("run all --each-member (with verdicts + report)", ["--each-member"]),
)
EXPERIMENT_RUNS = (5, 5, 17)  # evidence logs per command of RUNS: the five experiments; with --each-member, 17


def expect(condition: bool, what: str) -> None:
    """A benchmark that did not produce what it should fails, whatever its figures."""
    if not condition:
        raise SystemExit(f"bench_run.py: {what}")


def check_run(out: Path, number: int) -> None:
    """What one command of RUNS must have written in `out`."""
    label, extra = RUNS[number]
    logs = sorted(out.rglob("evidence.jsonl"))
    expect(len(logs) == EXPERIMENT_RUNS[number], f"{label}: {len(logs)} evidence logs, not {EXPERIMENT_RUNS[number]}")
    expect((out / "run.json").is_file(), f"{label}: no run.json")
    if "--no-report" in extra:
        expect(not (out / "report.md").exists(), f"{label}: a report was written")
        return
    expect((out / "report.md").is_file() and (out / "report.html").is_file(), f"{label}: no report.md/report.html")
    for log in logs:
        verdict = json.loads((log.parent / "verdicts.json").read_text(encoding="utf-8"))["verdict"]
        expect(verdict == "consistent", f"{label}: {log.parent.relative_to(out)} is {verdict}")
        expect((log.parent / "timeline.png").is_file(), f"{label}: no chart in {log.parent.relative_to(out)}")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(args: list[str], out: Path, tree: Path = ROOT) -> tuple[float, float, int]:
    """(wall, CPU, exit code) of `hivedlab run all ARGS --out OUT` run with `tree`'s code."""
    command = [sys.executable, "-m", "hivedlab", "run", "all", "--out", str(out), *args]
    env = dict(os.environ)  # each checkout's own code, whichever the interpreter has installed
    env["PYTHONPATH"] = str(tree / "src" if (tree / "src" / "hivedlab").is_dir() else tree)
    cpu, started = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    elapsed, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
    return elapsed, cpu, done.returncode


def _commit(tree: Path) -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True,
                          check=False)
    return done.stdout.strip() or "?"


def compare(trees: list[Path], repeat: int, seed: int) -> int:
    """`run all` in this checkout and each of `trees`, in turn, `repeat` rounds."""
    trees = [ROOT, *trees]
    for tree in trees:
        expect(tree.is_dir(), f"--compare: {tree} is not a folder")
    figures: dict[Path, list[tuple[float, float]]] = {tree: [] for tree in trees}
    with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
        for index in range(repeat):
            for number, tree in enumerate(trees):
                out = Path(tmp) / f"{index}-{number}"
                elapsed, cpu, code = _time(["--seed", str(seed)], out, tree)
                expect(code == 0, f"run all in {tree}: exit {code}")
                check_run(out, 0)
                figures[tree].append((elapsed, cpu))
    for tree in trees:
        cpu = [c for _, c in figures[tree]]
        wall = [w for w, _ in figures[tree]]
        name = "this checkout" if tree == ROOT else str(tree)
        print(f"{_commit(tree)} ({name}): CPU median {statistics.median(cpu):.2f} s (runs "
              + ", ".join(f"{c:.2f}" for c in cpu) + f"); wall median {statistics.median(wall):.2f} s")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, help="runs of each command (default 3; --quick: 1; --compare: 5)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="each command once, for CI: checks them, no target")
    parser.add_argument("--compare", nargs="+", type=Path, metavar="DIR",
                        help="other checkouts to time `run all` in, in turn with this one")
    args = parser.parse_args()
    if args.compare:
        return compare([p.resolve() for p in args.compare], args.repeat or 5, args.seed)
    repeat = args.repeat or (1 if args.quick else 3)
    results: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in RUNS}
    codes = set()
    with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
        for index in range(repeat):
            for number, (label, extra) in enumerate(RUNS):
                elapsed, cpu, code = _time(["--seed", str(args.seed), *extra], Path(tmp) / f"{index}-{number}")
                results[label].append((elapsed, cpu))
                codes.add(code)
                expect(code == 0, f"{label}: exit {code}")
                check_run(Path(tmp) / f"{index}-{number}", number)
        records = [sum(1 for p in (Path(tmp) / f"0-{n}").rglob("evidence.jsonl") for _ in p.open("rb")) for n in (0, 2)]
    for label, figures in results.items():
        wall, cpu = [w for w, _ in figures], [c for _, c in figures]
        print(f"{label}: CPU best {min(cpu):.2f} s, median {statistics.median(cpu):.2f} s; wall best {min(wall):.2f} s,"
              f" median {statistics.median(wall):.2f} s over {len(figures)} run(s)")
    print(f"evidence records: run all {records[0]}, --each-member {records[1]}; exit codes: {sorted(codes)}")
    if args.quick:
        return 0
    cpu = statistics.median(c for _, c in results[RUNS[0][0]])
    each = min(w for w, _ in results[RUNS[2][0]])
    print(f"target: a median of at most {TARGET_S:g} s of CPU -> " + ("OK" if cpu <= TARGET_S else "TOO SLOW"))
    print(f"--each-member target: under {EACH_MEMBER_TARGET_S:g} s wall -> "
          + ("OK" if each < EACH_MEMBER_TARGET_S else "TOO SLOW"))
    return 0 if cpu <= TARGET_S and each < EACH_MEMBER_TARGET_S and codes <= {0, 1} else 1


if __name__ == "__main__":
    raise SystemExit(main())
