"""Benchmark: grade 200 groups with complete evidence (target: under 30 s on 2 cores).

Makes one complete run directory with `hivedlab run all` on the simulated cluster (or uses --run-dir), copies it
into 200 group folders, then times `hivedlab grade` on them (all checks, re-judging and the four outputs), and
checks what it graded: every group, the same total for every copy, grades.csv, grades.md and each group's
feedback.md and results.json written. --quick: 3 groups (a few seconds), for CI; no target applies.

    .venv/bin/python benchmarks/bench_grade.py [--groups 200] [--jobs 2] [--run-dir DIR] [--quick]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hivedlab.checker.grading.batch import grade_batch  # noqa: E402
from hivedlab.checker.grading.labspec import shipped_lab  # noqa: E402
from hivedlab.checker.grading.rubric import load_rubric  # noqa: E402
from hivedlab.checker.judging.judge import judge_evidence  # noqa: E402
from hivedlab.cli.main import main as hivedlab  # noqa: E402

QUICK_GROUPS = 3


def expect(condition: bool, what: str) -> None:
    """A benchmark that did not produce what it should fails, whatever its figures."""
    if not condition:
        raise SystemExit(f"bench_grade.py: {what}")


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, help=f"group folders to grade (default 200; --quick: {QUICK_GROUPS})")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--run-dir", type=Path, help="a complete run directory to copy (default: hivedlab run all)")
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI: checks what it ran, no target")
    args = parser.parse_args()
    groups = args.groups or (QUICK_GROUPS if args.quick else 200)
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        work = Path(tmp)
        run_dir = args.run_dir
        if run_dir is None:
            run_dir = work / "run"
            code = hivedlab(["run", "all", "--out", str(run_dir)])
            if code not in (0, 1) or not (run_dir / "run.json").is_file():
                print(f"hivedlab run all failed (exit {code}); pass --run-dir", file=sys.stderr)
                return 2
        subs = work / "subs"
        for index in range(groups):
            shutil.copytree(run_dir, subs / f"group-{index:03d}")
        size = sum(p.stat().st_size for p in (subs / "group-000").rglob("*") if p.is_file())
        records = sum(1 for p in (subs / "group-000").rglob("evidence.jsonl") for _ in p.open("rb"))
        rubric = load_rubric()
        lab = shipped_lab()
        judge = judge_evidence
        started, cpu0 = time.perf_counter(), _cpu()
        result = grade_batch(subs, work / "grades", rubric, lab, judge, jobs=args.jobs)
        elapsed, cpu = time.perf_counter() - started, _cpu() - cpu0
        totals = {g.total() for g in result.grades}
        expect(len(result.grades) == groups, f"{len(result.grades)} of {groups} groups graded")
        expect(len(totals) == 1 and min(totals) > 0, f"copies of one run graded {sorted(totals)}")
        expect(len(result.written) == 2 + 2 * groups and all(p.is_file() for p in result.written),
               f"{len(result.written)} outputs written, not grades.csv, grades.md and two per group")
        print(f"groups: {len(result.grades)} ({size / 1024:.0f} KB, {records} evidence records each); "
              f"jobs: {args.jobs}; judge: {judge.__module__}.{judge.__name__}")
        print(f"graded in {elapsed:.2f} s ({1000 * elapsed / max(1, len(result.grades)):.1f} ms per group); "
              f"totals: {sorted(totals)}; needs a look: {len(result.needs_look)}")
        print(f"CPU time: {cpu:.2f} s (this process and its workers); load average now: "
              f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} (other work on the machine slows the wall time)")
        if not args.quick:
            print("target: under 30 s for 200 groups on 2 cores -> " + ("OK" if elapsed < 30 else "TOO SLOW"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
