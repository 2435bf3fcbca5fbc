"""Benchmark: `hivedlab validate` in-process (targets: every shipped config and job under 0.5 s; 1,000 job files
against one HiveD config under 5 s on one core).

Each figure is the best of --repeat runs, in a fresh process state after one warm-up run (imports and the compiled
JSON Schema are loaded once per process, as in a CI run). Both checks must pass: every shipped file valid, and every
generated job file read and valid. --quick: 20 job files, one run each, for CI; no target applies.

    .venv/bin/python benchmarks/bench_validate.py [--jobs 1000] [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_IMPORT_STARTED = time.perf_counter()
from hivedlab.checker.validate import validate_paths  # noqa: E402

IMPORT_SECONDS = time.perf_counter() - _IMPORT_STARTED


def expect(condition: bool, what: str) -> None:
    """A benchmark that did not produce what it should fails, whatever its figures."""
    if not condition:
        raise SystemExit(f"bench_validate.py: {what}")


def _best(repeat: int, func: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, help="generated job files (default 1000; --quick: 20)")
    parser.add_argument("--repeat", type=int, help="runs of each check, best reported (default 3; --quick: 1)")
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI: checks what it ran, no target")
    args = parser.parse_args()
    jobs = args.jobs or (20 if args.quick else 1000)
    repeat = args.repeat or (1 if args.quick else 3)
    shipped = [ROOT / "jobs", ROOT / "configs"]
    first = time.perf_counter()
    report = validate_paths(shipped)
    cold = time.perf_counter() - first
    expect(len(report.files) > 0 and not report.errors, f"shipped files: {report.errors or 'none found'}")
    warm = _best(repeat, lambda: validate_paths(shipped))
    print(f"shipped files ({len(report.files)}): first run {cold:.3f} s (+ {IMPORT_SECONDS:.3f} s imports), "
          f"then {warm:.3f} s (target < 0.5 s)")
    template = (ROOT / "jobs" / "job-config-6.yaml").read_text(encoding="utf-8")
    config = ROOT / "configs" / "hived" / "one-vc.yaml"
    with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
        folder = Path(tmp)
        for index in range(jobs):
            text = template.replace("name: job-config-6", f"name: job-{index:05d}")
            (folder / f"job-{index:05d}.yaml").write_text(text, encoding="utf-8")
        report = validate_paths([folder], hived_configs=[config])
        expect(len(report.files) == jobs and not report.errors,
               f"{len(report.files)} of {jobs} job files read; errors: {report.errors}")
        many = _best(repeat, lambda: validate_paths([folder], hived_configs=[config]))
    per_job = many / jobs * 1000
    print(f"{jobs} job files against one HiveD config: {many:.3f} s ({per_job:.2f} ms per job; target < 5 s)")
    return 0 if args.quick or (warm < 0.5 and many < 5) else 1


if __name__ == "__main__":
    sys.exit(main())
