"""Benchmark: `hivedlab run all` on the simulated cluster with verdicts and the report (target: under 5 s on 2 cores),
and `run all --each-member`: every member's turn, 17 runs for the example's four members (target: under 15 s).

Times the whole command in a fresh process (imports included, as a user sees it) `--repeat` times, plus the
simulation alone (`--no-report`), and prints the best and median of each. Every run is checked: exit 0, the five
experiments' evidence (17 runs with --each-member), every verdict consistent, a chart per run and the report, or no
report with --no-report. --quick: each command once, for CI; no target applies.

    .venv/bin/python benchmarks/bench_run.py [--repeat 3] [--seed 1] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 5.0
EACH_MEMBER_TARGET_S = 15.0
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


def _time(args: list[str], out: Path) -> tuple[float, int]:
    command = [sys.executable, "-m", "hivedlab", "run", "all", "--out", str(out), *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
    return elapsed, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, help="runs of each command (default 3; --quick: 1)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="each command once, for CI: checks them, no target")
    args = parser.parse_args()
    repeat = args.repeat or (1 if args.quick else 3)
    results: dict[str, list[float]] = {label: [] for label, _ in RUNS}
    codes = set()
    with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
        for index in range(repeat):
            for number, (label, extra) in enumerate(RUNS):
                elapsed, code = _time(["--seed", str(args.seed), *extra], Path(tmp) / f"{index}-{number}")
                results[label].append(elapsed)
                codes.add(code)
                expect(code == 0, f"{label}: exit {code}")
                check_run(Path(tmp) / f"{index}-{number}", number)
        records = [sum(1 for p in (Path(tmp) / f"0-{n}").rglob("evidence.jsonl") for _ in p.open("rb")) for n in (0, 2)]
    for label, times in results.items():
        print(f"{label}: best {min(times):.2f} s, median {statistics.median(times):.2f} s over {len(times)} run(s)")
    print(f"evidence records: run all {records[0]}, --each-member {records[1]}; exit codes: {sorted(codes)}")
    if args.quick:
        return 0
    best = min(results[RUNS[0][0]])
    each = min(results[RUNS[2][0]])
    print(f"target: under {TARGET_S:g} s on 2 cores -> " + ("OK" if best < TARGET_S else "TOO SLOW"))
    print(f"--each-member target: under {EACH_MEMBER_TARGET_S:g} s -> "
          + ("OK" if each < EACH_MEMBER_TARGET_S else "TOO SLOW"))
    return 0 if best < TARGET_S and each < EACH_MEMBER_TARGET_S and codes <= {0, 1} else 1


if __name__ == "__main__":
    raise SystemExit(main())
