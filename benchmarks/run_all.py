"""Run every benchmark in this folder, one process each, and print their figures (`make bench`).

Full mode (the default) measures at the sizes docs/benchmarks.md records, and a benchmark whose figure misses its
target says so. With --quick (`make bench-quick`, which CI runs after `make test`) every benchmark runs at small
sizes in a few seconds and checks that it ran and produced what it should (every record read, every change
recorded, every group graded, every verdict consistent); no timing target applies, so a slow or busy machine never
fails it. Neither mode needs the network.

    .venv/bin/python benchmarks/run_all.py [--quick] [NAME ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, a few seconds each: check that every benchmark runs (CI), no timing target")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="only these benchmarks, e.g. bench_check or check (default: all: "
                        + ", ".join(s.stem for s in scripts) + ")")
    args = parser.parse_args(argv)
    chosen = [s for s in scripts if not args.names or {s.stem, s.stem.removeprefix("bench_")} & set(args.names)]
    unknown = sorted(set(args.names) - {n for s in scripts for n in (s.stem, s.stem.removeprefix("bench_"))})
    if unknown:
        parser.error(f"no benchmark named {', '.join(unknown)}")
    failed = []
    started = time.perf_counter()
    for script in chosen:
        print(f"== {script.name}{' --quick' if args.quick else ''}", flush=True)
        began = time.perf_counter()
        command = [sys.executable, str(script), *(["--quick"] if args.quick else [])]
        code = subprocess.run(command, check=False).returncode
        print(f"-- {script.name}: exit {code}, {time.perf_counter() - began:.1f} s wall", flush=True)
        if code != 0:
            failed.append(script.name)
    print(f"{len(chosen) - len(failed)} of {len(chosen)} benchmarks passed in {time.perf_counter() - started:.1f} s"
          f"{' (quick mode)' if args.quick else ''}", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
