"""Benchmark: `hivedlab run all` on the simulated cluster with verdicts and the report (target: under 5 s on 2 cores).

Times the whole command in a fresh process (imports included, as a user sees it) `--repeat` times, plus the
simulation alone (`--no-report`), and prints the best and median of each.

    .venv/bin/python benchmarks/bench_run.py [--repeat 3] [--seed 1]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 5.0


def _time(args: list[str], out: Path) -> tuple[float, int]:
    command = [sys.executable, "-m", "hivedlab", "run", "all", "--out", str(out), *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        print(done.stderr, file=sys.stderr)
    return elapsed, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    results: dict[str, list[float]] = {"run all (with verdicts + report)": [], "run all --no-report": []}
    codes = set()
    with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
        for index in range(args.repeat):
            for label, extra in (("run all (with verdicts + report)", []), ("run all --no-report", ["--no-report"])):
                elapsed, code = _time(["--seed", str(args.seed), *extra], Path(tmp) / f"{index}-{len(extra)}")
                results[label].append(elapsed)
                codes.add(code)
        records = sum(1 for p in (Path(tmp) / "0-0").rglob("evidence.jsonl") for _ in p.open("rb"))
    for label, times in results.items():
        print(f"{label}: best {min(times):.2f} s, median {statistics.median(times):.2f} s over {len(times)} run(s)")
    print(f"evidence records per run: {records}; exit codes: {sorted(codes)}")
    best = min(results["run all (with verdicts + report)"])
    print(f"target: under {TARGET_S:g} s on 2 cores -> " + ("OK" if best < TARGET_S else "TOO SLOW"))
    return 0 if best < TARGET_S and codes <= {0, 1} else 1


if __name__ == "__main__":
    raise SystemExit(main())
