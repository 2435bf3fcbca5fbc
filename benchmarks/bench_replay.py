"""Benchmark the HiveD model on the 1,024-GPU workload (tests/fixtures/hived-perf/).

Runs `hivedlab sim replay` as a whole process (median of several runs, peak RSS of the children) and the same
replay in-process (per-decision timings, start-up time, tracemalloc peak), and prints the figures next to
HiveD v0.3.4's own (tests/fixtures/hived-perf/README.md).

    .venv/bin/python benchmarks/bench_replay.py [--runs 7] [--no-process]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PERF = ROOT / "tests" / "fixtures" / "hived-perf"
CONFIG = PERF / "config.yaml"
OPS = PERF / "ops.json"


def whole_process(runs: int) -> dict[str, float]:
    walls = []
    cpus = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "hivedlab", "sim", "replay", str(CONFIG), str(OPS)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            raise SystemExit(f"replay failed: {done.stderr.decode(errors='replace').strip()}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    return {"median_wall_s": statistics.median(walls), "min_wall_s": min(walls),
            "median_cpu_s": statistics.median(cpus), "peak_rss_mb": peak_kib / 1024}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _replay_once(trace_memory: bool) -> tuple[float, float, list[float], dict[str, int], float, float]:
    import yaml

    sys.path.insert(0, str(ROOT))
    from hivedlab.backends.replay import Replay
    from hivedlab.models.hived import load_config

    ops = json.loads(OPS.read_text(encoding="utf-8"))
    if trace_memory:
        tracemalloc.start()
    cpu_start = time.process_time()
    start = time.perf_counter()
    config = load_config(yaml.safe_load(CONFIG.read_text(encoding="utf-8")))
    session = Replay(config)
    startup = time.perf_counter() - start
    decisions: list[float] = []
    results: dict[str, int] = {}
    run_start = time.perf_counter()
    for i, op in enumerate(ops):
        t0 = time.perf_counter()
        line = session.step(i, op)
        elapsed = time.perf_counter() - t0
        if op.get("op") == "schedule":
            decisions.append(elapsed)
            results[line["result"]] = results.get(line["result"], 0) + 1
    total = time.perf_counter() - run_start
    cpu = time.process_time() - cpu_start
    peak = 0
    if trace_memory:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return startup, total, decisions, results, cpu, peak


def in_process() -> dict[str, float]:
    """Timings from a run without tracemalloc; peak Python memory from a second, traced run."""
    startup, total, decisions, results, cpu, _ = _replay_once(False)
    peak = _replay_once(True)[5]
    return {
        "startup_ms": startup * 1000,
        "all_ops_s": total,
        "cpu_s_incl_startup": cpu,
        "decisions": len(decisions),
        "decisions_per_s": len(decisions) / sum(decisions),
        "median_us": statistics.median(decisions) * 1e6,
        "mean_us": statistics.fmean(decisions) * 1e6,
        "p90_us": _percentile(decisions, 0.90) * 1e6,
        "p99_us": _percentile(decisions, 0.99) * 1e6,
        "tracemalloc_peak_mb": peak / 2**20,
        **{f"result_{k}": v for k, v in sorted(results.items())},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="whole-process runs (median reported)")
    parser.add_argument("--no-process", action="store_true", help="skip the whole-process runs")
    args = parser.parse_args()
    print(f"workload: {OPS.relative_to(ROOT)} on {CONFIG.relative_to(ROOT)} ({os.cpu_count()} CPUs)")
    figures = in_process()
    print("in-process (one decision = schedule, plus AddAllocatedPod on a bind):")
    for key, value in figures.items():
        print(f"  {key:22s} {value:.3f}" if isinstance(value, float) else f"  {key:22s} {value}")
    print("  HiveD v0.3.4: median 84 us, p99 469 us, all ops 0.52 s, start-up 22 ms")
    if not args.no_process:
        proc = whole_process(args.runs)
        print(f"whole process (hivedlab sim replay, JSON Lines out), median of {args.runs}:")
        for key, value in proc.items():
            print(f"  {key:22s} {value:.3f}")
        target = "OK" if proc["median_wall_s"] < 1.3 and proc["peak_rss_mb"] < 200 else "MISSED"
        print(f"  target < 1.3 s and < 200 MB: {target} (HiveD v0.3.4: 1.29 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
