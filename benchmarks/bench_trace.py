"""Benchmark `hivedlab trace`'s replay: each policy on a generated Philly-like trace, CPU seconds and peak memory.

Full mode replays the release-size trace (117,325 jobs) and a 10,000-job trace, each policy in a process of its own
(so that its peak RSS is its own), and checks the targets of docs/benchmarks.md: at 117,325 jobs each policy under
60 s (HiveD under 120 s), all five under 5 minutes, each under 2 GB; at 10,000 jobs all five under 30 s. Times are
CPU seconds of the replay (the machine may be shared; CPU time is what the code costs). Every replay is checked:
every job completed or left out with a reason. --quick replays 1,000 jobs, no target (CI).

    .venv/bin/python benchmarks/bench_trace.py [--quick] [--jobs N] [--policies hived,quota]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POLICIES = ("fifo", "quota", "hived", "drf", "private")
TARGETS = {117325: ({"hived": 120.0}, 60.0, 300.0), 10000: ({}, 30.0, 30.0)}  # per policy, default, all five
MEMORY_MB = 2048

CHILD = """
import json, resource, sys, time
from hivedlab.trace.inputs import TraceRequest, load
from hivedlab.trace.run import replay
jobs, policy = int(sys.argv[1]), sys.argv[2]
workload = load(TraceRequest(jobs=jobs, seed=7))
began = time.process_time()
result = replay(workload, [policy])
cpu = time.process_time() - began
row = result.rows[policy]
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"cpu_s": cpu, "jobs": len(workload.jobs), "done": row.delays.count,
                  "left_out": sum(row.left_out.values()), "preemptions": row.preemptions,
                  "mean_wait_min": row.delays.mean / 60, "peak_rss_mb": peak_mb}))
"""


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"bench_trace.py: {what}")


def one(jobs: int, policy: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(jobs), policy], cwd=ROOT, capture_output=True, text=True,
                          check=False, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    expect(done.returncode == 0, f"{policy} at {jobs} jobs failed: {done.stderr.strip()[-500:]}")
    figures: dict[str, float] = json.loads(done.stdout)
    expect(figures["done"] + figures["left_out"] == figures["jobs"], f"{policy}: a job neither done nor left out")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1,000 jobs, no target")
    parser.add_argument("--jobs", type=int, action="append", help="trace sizes (default: 117325 and 10000)")
    parser.add_argument("--policies", default=",".join(POLICIES))
    args = parser.parse_args(argv)
    sizes = args.jobs or ([1000] if args.quick else [117325, 10000])
    policies = [p for p in args.policies.split(",") if p]
    missed = []
    for jobs in sizes:
        total = 0.0
        per_policy, default, all_five = TARGETS.get(jobs, ({}, None, None))
        for policy in policies:
            f = one(jobs, policy)
            total += f["cpu_s"]
            limit = per_policy.get(policy, default)
            flag = ""
            if not args.quick and limit is not None and f["cpu_s"] > limit:
                flag = f"  MISSED (target {limit:.0f} s)"
                missed.append(f"{policy} at {jobs} jobs")
            if not args.quick and f["peak_rss_mb"] > MEMORY_MB:
                flag += f"  MISSED memory (target {MEMORY_MB} MB)"
                missed.append(f"{policy} memory at {jobs} jobs")
            print(f"{jobs:>7} jobs {policy:<8} {f['cpu_s']:7.1f} s CPU  {f['peak_rss_mb']:6.0f} MB peak  "
                  f"{f['preemptions']:>6.0f} preemptions  mean wait {f['mean_wait_min']:8.1f} min{flag}", flush=True)
        line = f"{jobs:>7} jobs, {len(policies)} policies: {total:.1f} s CPU"
        if not args.quick and all_five is not None and len(policies) == len(POLICIES) and total > all_five:
            line += f"  MISSED (target {all_five:.0f} s)"
            missed.append(f"all five at {jobs} jobs")
        print(line, flush=True)
    if missed:
        print("missed: " + ", ".join(missed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
