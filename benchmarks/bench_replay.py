"""Benchmark the HiveD model on the 1,024-GPU workload (tests/fixtures/hived-perf/).

Runs `hivedlab sim replay` as a whole process (median of several runs, peak RSS of the children) and the same
replay in-process (per-decision timings, start-up time, tracemalloc peak), and prints the figures next to
HiveD v0.3.4's own (tests/fixtures/hived-perf/README.md). Both replays are checked: every operation answered, one
decision per schedule operation, and HiveD's own outcomes (2,064 bind, 213 preempt, 723 wait) in and out of process.
The workload is already small: --quick runs the whole process once instead of 7 times and applies no target (CI).

    .venv/bin/python benchmarks/bench_replay.py [--runs 7] [--no-process] [--quick]
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
HIVED_RESULTS = {"bind": 2064, "preempt": 213, "wait": 723}  # HiveD v0.3.4's outcomes of the 3,000 schedules
REPLAY = [sys.executable, "-m", "hivedlab", "sim", "replay", str(CONFIG), str(OPS)]


def expect(condition: bool, what: str) -> None:
    """A benchmark that did not produce what it should fails, whatever its figures."""
    if not condition:
        raise SystemExit(f"bench_replay.py: {what}")


def whole_process(runs: int) -> dict[str, float]:
    walls = []
    cpus = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(REPLAY, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            raise SystemExit(f"replay failed: {done.stderr.decode(errors='replace').strip()}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    return {"median_wall_s": statistics.median(walls), "min_wall_s": min(walls),
            "median_cpu_s": statistics.median(cpus), "peak_rss_mb": peak_kib / 1024}


def process_results() -> dict[str, int]:
    """One more whole-process replay, untimed, its output read: the schedule operations' results."""
    done = subprocess.run(REPLAY, cwd=ROOT, capture_output=True, text=True, check=False)
    expect(done.returncode == 0, f"replay failed: {done.stderr.strip()}")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    ops = json.loads(OPS.read_text(encoding="utf-8"))
    expect(len(lines) == 1 + len(ops), f"{len(lines)} output lines for the init and {len(ops)} operations")
    results: dict[str, int] = {}
    for line in lines:
        if line.get("op") == "schedule":
            results[line["result"]] = results.get(line["result"], 0) + 1
    return results


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _replay_once(trace_memory: bool) -> tuple[float, float, list[float], dict[str, int], float, float]:
    import yaml

    from hivedlab.models.hived import load_config
    from hivedlab.models.hived_replay import Replay

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
    schedules = sum(1 for op in ops if op.get("op") == "schedule")
    expect(len(decisions) == schedules, f"{len(decisions)} decisions for {schedules} schedule operations")
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
    parser.add_argument("--runs", type=int, help="whole-process runs, median reported (default 7; --quick: 1)")
    parser.add_argument("--no-process", action="store_true", help="skip the whole-process runs")
    parser.add_argument("--quick", action="store_true", help="one whole-process run, for CI: checks it, no target")
    args = parser.parse_args()
    runs = args.runs or (1 if args.quick else 7)
    print(f"workload: {OPS.relative_to(ROOT)} on {CONFIG.relative_to(ROOT)} ({os.cpu_count()} CPUs)")
    figures = in_process()
    in_process_results = {k.removeprefix("result_"): v for k, v in figures.items() if k.startswith("result_")}
    expect(in_process_results == HIVED_RESULTS, f"in-process outcomes {in_process_results}, HiveD's {HIVED_RESULTS}")
    print("in-process (one decision = schedule, plus AddAllocatedPod on a bind):")
    for key, value in figures.items():
        print(f"  {key:22s} {value:.3f}" if isinstance(value, float) else f"  {key:22s} {value}")
    print("  HiveD v0.3.4: median 84 us, p99 469 us, all ops 0.52 s, start-up 22 ms")
    if not args.no_process:
        proc = whole_process(runs)
        print(f"whole process (hivedlab sim replay, JSON Lines out), median of {runs}:")
        for key, value in proc.items():
            print(f"  {key:22s} {value:.3f}")
        if not args.quick:
            target = "OK" if proc["median_wall_s"] < 1.3 and proc["peak_rss_mb"] < 200 else "MISSED"
            print(f"  target < 1.3 s and < 200 MB: {target} (HiveD v0.3.4: 1.29 s)")
        out_of_process = process_results()
        expect(out_of_process == HIVED_RESULTS, f"the process's outcomes {out_of_process}, HiveD's {HIVED_RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
