"""Benchmark: `hivedlab validate` in-process (targets: every shipped config and job under 0.5 s; 1,000 job files
against one HiveD config under 5 s on one core).

Each figure is the best of --repeat runs, in a fresh process state after one warm-up run (imports and the compiled
JSON Schema are loaded once per process, as in a CI run).

    .venv/bin/python benchmarks/bench_validate.py [--jobs 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_IMPORT_STARTED = time.perf_counter()
from hivedlab.checker.validate import validate_paths  # noqa: E402

IMPORT_SECONDS = time.perf_counter() - _IMPORT_STARTED


def _best(repeat: int, func) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    shipped = [ROOT / "jobs", ROOT / "configs"]
    first = time.perf_counter()
    report = validate_paths(shipped)
    cold = time.perf_counter() - first
    assert not report.errors, report.errors
    warm = _best(args.repeat, lambda: validate_paths(shipped))
    print(f"shipped files ({len(report.files)}): first run {cold:.3f} s (+ {IMPORT_SECONDS:.3f} s imports), "
          f"then {warm:.3f} s (target < 0.5 s)")
    template = (ROOT / "jobs" / "job-config-6.yaml").read_text(encoding="utf-8")
    config = ROOT / "configs" / "hived" / "one-vc.yaml"
    with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
        folder = Path(tmp)
        for index in range(args.jobs):
            text = template.replace("name: job-config-6", f"name: job-{index:05d}")
            (folder / f"job-{index:05d}.yaml").write_text(text, encoding="utf-8")
        report = validate_paths([folder], hived_configs=[config])
        assert len(report.files) == args.jobs and not report.errors
        many = _best(args.repeat, lambda: validate_paths([folder], hived_configs=[config]))
    per_job = many / args.jobs * 1000
    print(f"{args.jobs} job files against one HiveD config: {many:.3f} s ({per_job:.2f} ms per job; target < 5 s)")
    return 0 if warm < 0.5 and many < 5 else 1


if __name__ == "__main__":
    sys.exit(main())
