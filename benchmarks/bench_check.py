"""Benchmark the checker and the watcher (not a test; run by hand and report the figures).

    .venv/bin/python benchmarks/bench_check.py [--mb 200] [--changes 5000] [--quick]

1. `hivedlab check` speed and peak memory: writes a log of real-sized records (pods of a few kB with
   OpenPAI's labels/annotations, FailedScheduling events), about --mb MB, around the gang scenario (so the verdict
   must still come out consistent), then checks it in a fresh process and reports seconds, MB/s, peak RSS and the
   extrapolation to 1 GB. Target: 1 GB in < 30 s and < 500 MB peak.
2. Watcher throughput: a local API server (tests/support/k8s_server.py) produces --changes pod changes as fast
   as it can while the watcher records them; reports changes per second. Target: >= 500/s.

Both parts check what they produced: the checker reads every record written and finds the gang scenario consistent,
the watcher records every change. --quick: a 1 MB log and 200 changes (a few seconds), for CI; no target applies.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the helpers: tests.support.*

from tests.support.scenario import DEFAULT_WAIT_FOR_BENCH, Scenario  # noqa: E402

QUICK_MB, QUICK_CHANGES = 1, 200


def expect(condition: bool, what: str) -> None:
    """A benchmark that did not produce what it should fails, whatever its figures."""
    if not condition:
        raise SystemExit(f"bench_check.py: {what}")


def write_big_log(path: Path, megabytes: int) -> int:
    """The gang scenario with a long wait in the middle: the holder's pod status and the gang's FailedScheduling
    events are updated again and again (as kubelet and the scheduler do) until the log reaches the size."""
    sc = Scenario(path, seed="bench")
    sc.at(0).plan("gang", members=("alice",))
    sc.config("one-vc")
    holder = sc.at(1).submit("alice", "holder", "job-config-5", "default", "prod")
    sc.framework(holder, "AttemptCreationPending", watch_type="ADDED")
    sc.at(2).pod_add(holder, 0)
    sc.at(3).pod_bind(holder, 0, "hostname-carol")
    sc.at(10).pod_run(holder, 0)
    job = sc.at(30).submit("alice", "gang", "job-config-6", "default", "prod", tasks=2)
    sc.at(31).pod_add(job, 0)
    sc.pod_add(job, 1)
    target = megabytes * 1024 * 1024
    t = 32.0
    while path.stat().st_size < target:
        for _ in range(50):
            t += 0.01
            sc.at(t).pod_wait(job, 0, DEFAULT_WAIT_FOR_BENCH)
            sc.pod_wait(job, 1, DEFAULT_WAIT_FOR_BENCH)
    t += 1
    sc.at(t).pod_exit(holder, 0)
    sc.framework(holder, "Completed", 0)
    sc.pod_delete(holder, 0)
    sc.at(t + 1).pod_bind(job, 0, "hostname-carol")
    sc.pod_bind(job, 1, "hostname-dan")
    sc.at(t + 5).pod_run(job, 0)
    sc.pod_run(job, 1)
    sc.at(t + 60).pod_exit(job, 0)
    sc.framework(job, "Completed", 0)
    sc.end()
    count = sc.writer.next_seq
    sc.close()
    return count


CHILD = """
import json, resource, time
from hivedlab.checker.judging.judge import judge_file
start = time.perf_counter()
result = judge_file({log!r})
elapsed = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": elapsed, "peak_mb": peak, "verdict": result.verdict, "records": result.log.records}}))
"""


def bench_check(megabytes: int) -> dict[str, float | str]:
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "big.jsonl"
        start = time.perf_counter()
        records = write_big_log(log, megabytes)
        written = time.perf_counter() - start
        size_mb = log.stat().st_size / 1024 / 1024
        out = subprocess.run([sys.executable, "-c", CHILD.format(log=str(log))],
                             capture_output=True, text=True, check=False)
        expect(out.returncode == 0, f"the check failed: {out.stderr.strip()}")
        result = json.loads(out.stdout)
    expect(size_mb >= megabytes, f"the log is {size_mb:.1f} MB, not {megabytes} MB")
    expect(result["records"] == records, f"the checker read {result['records']} of {records} records")
    expect(result["verdict"] == "consistent", f"the gang scenario's verdict is {result['verdict']}, not consistent")
    rate = size_mb / result["seconds"]
    return {"log_mb": round(size_mb, 1), "records": records, "write_s": round(written, 1),
            "check_s": round(result["seconds"], 2), "mb_per_s": round(rate, 1),
            "extrapolated_1gb_s": round(1024 / rate, 1), "peak_rss_mb": round(result["peak_mb"], 1),
            "verdict": result["verdict"]}


def bench_watcher(changes: int) -> dict[str, float]:
    import kubernetes

    from hivedlab.backends.watcher import Watcher
    from hivedlab.evidence import EvidenceWriter, read_evidence
    from tests.support.k8s_server import FakeApiServer

    filler = {"annotations": {f"note-{i}": "x" * 100 for i in range(20)}}  # ~3 kB objects, like real pods
    with tempfile.TemporaryDirectory() as folder, FakeApiServer() as server:
        log = Path(folder) / "watch.jsonl"
        config = kubernetes.client.Configuration()
        config.host = server.url
        pods = [server.add("pods", f"p{i}", spec=filler) for i in range(10)]
        with EvidenceWriter(log, "k8s") as writer:
            watcher = Watcher(kubernetes.client.ApiClient(config), "default", writer, resources=("pods",),
                              server_timeout_s=60, read_timeout_s=70)
            watcher.start()
            pause = threading.Event()
            while writer.next_seq < 12:  # started + 10 LISTED + listed: the watch is about to begin
                pause.wait(0.01)
            pause.wait(0.2)
            base = writer.next_seq
            start = time.perf_counter()
            for i in range(changes):
                server.modify("pods", pods[i % 10]["metadata"]["uid"], status={"phase": "Running", "n": i})
            produced = time.perf_counter() - start
            deadline = time.monotonic() + 120
            while writer.next_seq < base + changes and time.monotonic() < deadline:
                pause.wait(0.005)
            elapsed = time.perf_counter() - start
            watcher.stop(timeout=10)
        recorded = sum(1 for r in read_evidence(log).records if r.resource == "pods" and r.watch_type == "MODIFIED")
    expect(recorded == changes, f"the watcher recorded {recorded} of {changes} changes")
    return {"changes": changes, "recorded": recorded, "produce_s": round(produced, 2), "record_s": round(elapsed, 2),
            "changes_per_s": round(changes / elapsed)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, help="size of the generated log (default 200 MB; --quick: 1 MB)")
    parser.add_argument("--changes", type=int, help="pod changes for the watcher (default 5000; --quick: 200)")
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI: checks what it ran, no target")
    args = parser.parse_args()
    megabytes = args.mb or (QUICK_MB if args.quick else 200)
    changes = args.changes or (QUICK_CHANGES if args.quick else 5000)
    print("check:", json.dumps(bench_check(megabytes)), flush=True)
    print("watcher:", json.dumps(bench_watcher(changes)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
