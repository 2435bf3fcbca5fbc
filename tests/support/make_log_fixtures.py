"""Generate the hand-made evidence logs under tests/fixtures/logs/ (the generated files are committed).

Run: .venv/bin/python -m tests.support.make_log_fixtures

Each log is named after its scenario. Nodes: hostname-carol (VC default in the two-VC config) and hostname-dan
(vc1); in the one-VC config `default` owns both. Real-cluster messiness is scripted in: watch restarts that
re-deliver objects, events before their pod, re-created pods (same name, new uid), a node clock a few seconds
ahead, and pods deleted by FrameworkController when the attempt completes.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import FIXTURES
from tests.support.scenario import Scenario, relist

HERE = FIXTURES / "logs"

CAROL, DAN = "hostname-carol", "hostname-dan"
VC1_WAIT = "insufficient capacity when scheduling in VC vc1"
DEFAULT_WAIT = "insufficient capacity when scheduling in VC default"
PHYSICAL_WAIT = "insufficient capacity when scheduling in physical cluster"


def _run_task(sc: Scenario, job, index: int, node: str, t_bind: float, t_run: float, t_end: float,
              code: int = 0) -> None:
    sc.at(t_bind).pod_bind(job, index, node)
    sc.at(t_run).pod_run(job, index)
    sc.framework(job, "AttemptRunning")
    sc.at(t_end).pod_exit(job, index, code)


def _complete(sc: Scenario, job, t: float, code: int = 0) -> None:
    sc.at(t).framework(job, "Completed", code)
    for index in sorted(job.pods):
        sc.pod_delete(job, index)


def vc_safety(path: Path, borrow: bool = False) -> None:
    sc = Scenario(path, seed=path.stem)
    sc.skew[DAN] = 3.0  # Dan's clock runs 3 s ahead
    sc.at(0).plan("vc-safety")
    sc.config("two-vc")
    alice = sc.at(1).submit("alice", "prod", "job-config-0", "vc1", "prod")
    bob = sc.at(1.2).submit("bob", "prod", "job-config-0", "vc1", "prod")
    sc.step(0)
    for job in (alice, bob):
        sc.framework(job, "AttemptCreationPending", watch_type="ADDED")
    sc.at(3).pod_add(alice, 0)
    sc.at(3.1).pod_add(bob, 0)
    sc.framework(alice, "AttemptPreparing")
    sc.at(4).pod_bind(alice, 0, DAN)
    sc.at(4.1).pod_wait(bob, 0, VC1_WAIT)
    sc.at(20).pod_run(alice, 0)
    sc.framework(alice, "AttemptRunning")
    sc.at(30).pod_wait(bob, 0, VC1_WAIT)
    sc.at(40)
    relist(sc, [alice, bob])
    if borrow:  # not what HiveD does: bob's job runs on the idle default VC's node
        sc.at(41).pod_bind(bob, 0, CAROL)
        sc.at(45).pod_run(bob, 0)
        sc.framework(bob, "AttemptRunning")
        sc.at(80).pod_exit(alice, 0)
        _complete(sc, alice, 81)
        sc.at(100).pod_exit(bob, 0)
        _complete(sc, bob, 101)
    else:
        sc.at(80).pod_exit(alice, 0)
        _complete(sc, alice, 81)
        _run_task(sc, bob, 0, DAN, 83, 90, 150)
        _complete(sc, bob, 151)
    sc.at(152).step(1)
    sc.end()
    sc.close()


def _wait_message(reason: str) -> str:
    return ("0/3 nodes are available: 1 Pod is waiting for preemptible or free resource to appear: "
            f"{reason}, 2 node(s) didn't match node selector.")


def priority(path: Path, high_waits: bool = False, stop_early: bool = False, actions: bool = True) -> None:
    sc = Scenario(path, seed=path.stem, actions=actions)
    sc.at(0).plan("priority", members=("alice",))
    sc.config("two-vc")
    low = sc.at(1).submit("alice", "low", "job-config-1", "vc1", "test")
    sc.step(0)
    sc.framework(low, "AttemptCreationPending", watch_type="ADDED")
    sc.at(2).pod_add(low, 0)
    sc.at(3).pod_bind(low, 0, DAN)
    sc.at(10).pod_run(low, 0)
    sc.framework(low, "AttemptRunning")
    sc.step(1)
    high = sc.at(60).submit("alice", "high", "job-config-2", "vc1", "prod")
    sc.step(2)
    sc.framework(high, "AttemptCreationPending", watch_type="ADDED")
    sc.at(61).pod_add(high, 0)
    if stop_early:
        sc.at(62).end("interrupted", "Ctrl-C")
        sc.close()
        return
    if high_waits:  # not what HiveD does: the prod job waits for the test job to finish
        sc.at(62).pod_wait(high, 0, VC1_WAIT)
        sc.at(400).pod_exit(low, 0)
        _complete(sc, low, 401)
        _run_task(sc, high, 0, DAN, 402, 410, 760)
        _complete(sc, high, 761)
    else:
        sc.at(62).preempt(low, 0, high, 0, DAN)
        sc.framework(low, "AttemptDeletionPending", -101)
        sc.at(63).pod_bind(high, 0, DAN)
        sc.retry(low)
        sc.at(64)
        pod = sc.pod_add(low, 0, write=False)
        sc.event(pod, "FailedScheduling", _wait_message(VC1_WAIT), "Warning", "hivedscheduler-ds-vc1")
        sc.pod_added_late(low, 0)  # the event reached the watcher before its pod
        sc.framework(low, "AttemptPreparing")
        sc.at(70).pod_run(high, 0)
        sc.framework(high, "AttemptRunning")
        sc.at(200).pod_wait(low, 0, VC1_WAIT)
        sc.at(420).pod_exit(high, 0)
        _complete(sc, high, 421)
        _run_task(sc, low, 0, DAN, 423, 430, 780)
        _complete(sc, low, 781)
    sc.step(3)
    sc.end()
    sc.close()


def opportunistic(path: Path) -> None:
    sc = Scenario(path, seed=path.stem)
    sc.at(0).plan("opportunistic", members=("alice",))
    sc.config("two-vc")
    prod = sc.at(1).submit("alice", "prod", "job-config-3", "vc1", "prod")
    sc.framework(prod, "AttemptCreationPending", watch_type="ADDED")
    sc.at(2).pod_add(prod, 0)
    sc.at(3).pod_bind(prod, 0, DAN)
    sc.at(10).pod_run(prod, 0)
    sc.framework(prod, "AttemptRunning")
    oppo = sc.at(30).submit("alice", "oppo", "job-config-4", "vc1", "oppo")
    sc.framework(oppo, "AttemptCreationPending", watch_type="ADDED")
    sc.at(31).pod_add(oppo, 0)
    sc.at(32).pod_bind(oppo, 0, CAROL)
    sc.at(40).pod_run(oppo, 0)
    sc.framework(oppo, "AttemptRunning")
    guest = sc.at(60).submit("alice", "guest", "job-default-test", "default", "test")
    sc.framework(guest, "AttemptCreationPending", watch_type="ADDED")
    sc.at(61).pod_add(guest, 0)
    sc.at(62).preempt(oppo, 0, guest, 0, CAROL)
    sc.framework(oppo, "AttemptDeletionPending", -101)
    sc.at(63).pod_bind(guest, 0, CAROL)
    sc.retry(oppo)
    sc.at(64).pod_add(oppo, 0)
    sc.framework(oppo, "AttemptPreparing")
    sc.at(65).pod_wait(oppo, 0, PHYSICAL_WAIT)
    sc.at(70).pod_run(guest, 0)
    sc.framework(guest, "AttemptRunning")
    sc.at(400).pod_exit(prod, 0)
    _complete(sc, prod, 401)
    sc.at(402).pod_bind(oppo, 0, DAN)
    sc.at(410).pod_run(oppo, 0)
    sc.framework(oppo, "AttemptRunning")
    sc.at(420).pod_exit(guest, 0)
    _complete(sc, guest, 421)
    sc.at(760).pod_exit(oppo, 0)
    _complete(sc, oppo, 761)
    sc.end()
    sc.close()


def gang(path: Path, one_after_another: bool = False, source: str = "k8s", start_gap: float = 2.0,
         other_nodes: bool = False, second_plan: bool = False) -> None:
    sc = Scenario(path, source=source, seed=path.stem)
    carol, dan = ("gpu-node-17", "gpu-node-18") if other_nodes else (CAROL, DAN)
    sc.at(0).plan("gang", cluster="sim" if source == "sim" else "pai", members=("alice",))
    sc.config("one-vc")
    holder = sc.at(1).submit("alice", "holder", "job-config-5", "default", "prod")
    sc.framework(holder, "AttemptCreationPending", watch_type="ADDED")
    sc.at(2).pod_add(holder, 0)
    sc.at(3).pod_bind(holder, 0, carol)
    sc.at(10).pod_run(holder, 0)
    sc.framework(holder, "AttemptRunning")
    job = sc.at(30).submit("alice", "gang", "job-config-6", "default", "prod", tasks=2)
    sc.framework(job, "AttemptCreationPending", watch_type="ADDED")
    sc.at(31).pod_add(job, 0)
    sc.pod_add(job, 1)
    if one_after_another:  # not what HiveD does for a gang job
        sc.at(32).pod_bind(job, 0, dan)
        sc.pod_wait(job, 1, DEFAULT_WAIT)
        sc.at(40).pod_run(job, 0)
        sc.framework(job, "AttemptRunning")
        sc.at(400).pod_exit(holder, 0)
        _complete(sc, holder, 401)
        sc.at(402).pod_bind(job, 1, carol)
        sc.at(410).pod_run(job, 1)
        sc.at(470).pod_exit(job, 0)
    else:
        sc.at(32).pod_wait(job, 0, DEFAULT_WAIT)
        sc.pod_wait(job, 1, DEFAULT_WAIT)
        sc.at(100).pod_wait(job, 0, DEFAULT_WAIT)
        sc.pod_wait(job, 1, DEFAULT_WAIT)
        sc.at(400).pod_exit(holder, 0)
        _complete(sc, holder, 401)
        sc.at(402).pod_bind(job, 0, carol)
        sc.pod_bind(job, 1, dan)
        sc.at(410).pod_run(job, 0)
        sc.at(410 + start_gap).pod_run(job, 1)
        sc.framework(job, "AttemptRunning")
        sc.at(470).pod_exit(job, 0)
    sc.at(471).framework(job, "Completed", 0)
    sc.pod_delete(job, 0)
    sc.pod_delete(job, 1, code=-220)
    sc.at(472).end()
    if second_plan:  # a second run appended to the same log
        sc.at(480).plan("priority", members=("alice",))
    sc.close()


def gang_missing_job(path: Path) -> None:
    sc = Scenario(path, seed=path.stem)
    sc.at(0).plan("gang", members=("alice",))
    sc.config("one-vc")
    holder = sc.at(1).submit("alice", "holder", "job-config-5", "default", "prod")
    sc.framework(holder, "AttemptCreationPending", watch_type="ADDED")
    sc.at(2).pod_add(holder, 0)
    _run_task(sc, holder, 0, CAROL, 3, 10, 400)
    _complete(sc, holder, 401)
    sc.at(402).end()
    sc.close()


def incremental(path: Path, second_runs: bool = False, like_gang: bool = False) -> None:
    sc = Scenario(path, seed=path.stem)
    sc.at(0).plan("incremental", members=("alice",))
    sc.config("one-vc")
    holder = sc.at(1).submit("alice", "holder", "job-config-5", "default", "prod")
    sc.framework(holder, "AttemptCreationPending", watch_type="ADDED")
    sc.at(2).pod_add(holder, 0)
    sc.at(3).pod_bind(holder, 0, CAROL)
    sc.at(10).pod_run(holder, 0)
    sc.framework(holder, "AttemptRunning")
    job = sc.at(30).submit("alice", "elastic", "job-config-7", "default", "prod", tasks=2, gang=False)
    sc.framework(job, "AttemptCreationPending", watch_type="ADDED")
    sc.at(31).pod_add(job, 0)
    sc.pod_add(job, 1)
    if like_gang:  # not what HiveD does without gang allocation: both tasks wait and start together
        sc.at(32).pod_wait(job, 0, DEFAULT_WAIT)
        sc.pod_wait(job, 1, DEFAULT_WAIT)
        sc.at(400).pod_exit(holder, 0)
        _complete(sc, holder, 401)
        sc.at(402).pod_bind(job, 0, CAROL)
        sc.pod_bind(job, 1, DAN)
        sc.at(410).pod_run(job, 0)
        sc.pod_run(job, 1)
        sc.framework(job, "AttemptRunning")
        sc.at(470).pod_exit(job, 0)
        sc.at(471).framework(job, "Completed", 0)
        sc.pod_delete(job, 0)
        sc.pod_delete(job, 1, code=-220)
    else:
        sc.at(32).pod_bind(job, 0, DAN)
        sc.pod_wait(job, 1, DEFAULT_WAIT)
        sc.at(40).pod_run(job, 0)
        sc.framework(job, "AttemptRunning")
        if second_runs:  # task 0 still runs when the holder ends: task 1 starts then
            sc.at(400).pod_exit(holder, 0)
            _complete(sc, holder, 401)
            sc.at(402).pod_bind(job, 1, CAROL)
            sc.at(410).pod_run(job, 1)
            sc.at(470).pod_exit(job, 1)
            sc.at(471).framework(job, "Completed", 0)
            sc.pod_delete(job, 1)
            sc.pod_delete(job, 0, code=-220)
        else:  # task 0 succeeds first: the job SUCCEEDS (minSucceededInstances 1) and task 1 never runs
            sc.at(100).pod_exit(job, 0)
            sc.at(101).framework(job, "Completed", 0)
            sc.pod_delete(job, 0)
            sc.pod_delete(job, 1, code=-220)
            sc.at(400).pod_exit(holder, 0)
            _complete(sc, holder, 401)
    later = max(402.0, sc.elapsed + 1) - 402  # the over-quota part starts once the main part is over
    sc.at(402 + later).step(3)
    sc.at(410 + later).submit("alice", "over-gang", "job-over-quota-gang", "default", "prod", tasks=4, status=400,
                      message="Job requests 4 SKUs, exceeds maximum 2 SKUs in VC default.")
    sc.step(4)
    over = sc.at(420 + later).submit("alice", "over-elastic", "job-over-quota-incremental", "default", "prod", tasks=4,
                             gang=False)
    sc.step(5)
    sc.framework(over, "AttemptCreationPending", watch_type="ADDED")
    sc.at(421 + later)
    for index in range(4):
        sc.pod_add(over, index)
    sc.at(422 + later).pod_bind(over, 0, CAROL)
    sc.pod_bind(over, 1, DAN)
    sc.pod_wait(over, 2, DEFAULT_WAIT)
    sc.pod_wait(over, 3, DEFAULT_WAIT)
    sc.at(430 + later).pod_run(over, 0)
    sc.pod_run(over, 1)
    sc.framework(over, "AttemptRunning")
    sc.at(490 + later).pod_exit(over, 0)
    sc.at(491 + later).framework(over, "Completed", 0)
    sc.pod_delete(over, 0)
    for index in (1, 2, 3):
        sc.pod_delete(over, index, code=-220)
    sc.step(6)
    sc.at(492 + later).end()
    sc.close()


BAD_DAN = f"have to use at least one bad node {DAN} when scheduling in VC default"


def node_fault(path: Path, fault: str, cordon: bool = False) -> None:
    """The smoke test on two single-GPU nodes, as the OpenPAI backend records it with the nodes' readiness: both
    nodes listed Ready first. `fault`: "running" (dan NotReady 08:00:10–08:01:28 while bob's 24 s task runs on it; it
    ends once dan is Ready again), "elsewhere" (dan NotReady meanwhile, bob's job submitted during it waits with
    HiveD's bad-node reason, then binds to carol once alice's task ended), "none" (the nodes stay Ready). `cordon`:
    dan is cordoned instead (`spec.unschedulable`), staying Ready (tests make such logs; none is a fixture)."""
    sc = Scenario(path, seed=path.stem)
    sc.at(0).plan("smoke")
    sc.config("one-vc")
    sc.node(CAROL, True, "LISTED")
    sc.node(DAN, True, "LISTED")
    jobs = {}
    for user, t in (("alice", 1), ("bob", 3 if fault != "elsewhere" else 12)):
        if t < 10:
            jobs[user] = sc.at(t).submit(user, "single", "job-smoke-test", "default", "prod")
            sc.framework(jobs[user], "AttemptCreationPending", watch_type="ADDED")
            sc.pod_add(jobs[user], 0)
            sc.at(t + 1).pod_bind(jobs[user], 0, CAROL if user == "alice" else DAN)
    for user, t in (("alice", 5), ("bob", 6)):
        if user in jobs:
            sc.at(t).pod_run(jobs[user], 0)
            sc.framework(jobs[user], "AttemptRunning")
    if fault != "none":
        sc.at(10).node(DAN, cordon, cordoned=cordon)
    if fault == "elsewhere":
        bob = jobs["bob"] = sc.at(12).submit("bob", "single", "job-smoke-test", "default", "prod")
        sc.framework(bob, "AttemptCreationPending", watch_type="ADDED")
        sc.pod_add(bob, 0)
        sc.at(13).pod_wait(bob, 0, BAD_DAN)
        sc.at(20).pod_wait(bob, 0, BAD_DAN)
    sc.at(29).pod_exit(jobs["alice"], 0)
    _complete(sc, jobs["alice"], 30)
    if fault == "elsewhere":
        _run_task(sc, jobs["bob"], 0, CAROL, 31, 32, 56)
        _complete(sc, jobs["bob"], 57)
    if fault != "none":
        sc.at(88).node(DAN, True)  # Ready again, or uncordoned
    if fault != "elsewhere":  # bob's task ran 24 s of its own; on a NotReady node it ends once the node is Ready
        sc.at(30 if fault == "none" else 88.5).pod_exit(jobs["bob"], 0)
        _complete(sc, jobs["bob"], sc.elapsed + 0.5)
    sc.at(sc.elapsed + 1).end()
    sc.close()


def broken_chain(source: Path, path: Path, seq: int) -> None:
    lines = source.read_text(encoding="utf-8").splitlines()
    lines[seq] = lines[seq].replace("hostname-carol", "hostname-dan", 1) if "hostname-carol" in lines[seq] else (
        lines[seq].replace('"seq":', '"seq": ', 1))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def cut_mid_line(source: Path, path: Path) -> None:
    data = source.read_bytes()
    path.write_bytes(data[: len(data) - 57])


def write_all(folder: Path = HERE) -> None:
    """Write every fixture log into `folder` (the committed ones live in this folder)."""
    vc_safety(folder / "vc-safety-consistent.jsonl")
    vc_safety(folder / "vc-safety-borrowed-default-node.jsonl", borrow=True)
    priority(folder / "priority-consistent.jsonl")
    priority(folder / "priority-high-waited.jsonl", high_waits=True)
    priority(folder / "priority-interrupted.jsonl", stop_early=True)
    priority(folder / "watch-only-priority.jsonl", actions=False)
    opportunistic(folder / "opportunistic-consistent.jsonl")
    gang(folder / "gang-consistent.jsonl")
    gang(folder / "gang-one-after-another.jsonl", one_after_another=True)
    gang(folder / "sim-gang-consistent.jsonl", source="sim", start_gap=0.0)
    gang(folder / "sim-gang-starts-5s-apart.jsonl", source="sim", start_gap=5.0)
    gang(folder / "mixed-nodes-of-another-cluster.jsonl", other_nodes=True)
    gang(folder / "mixed-two-experiments.jsonl", second_plan=True)
    gang_missing_job(folder / "gang-missing-gang-job.jsonl")
    incremental(folder / "incremental-consistent.jsonl")
    incremental(folder / "incremental-second-task-later.jsonl", second_runs=True)
    incremental(folder / "incremental-started-together.jsonl", like_gang=True)
    node_fault(folder / "node-fault-pod-running.jsonl", "running")
    node_fault(folder / "node-fault-pod-elsewhere.jsonl", "elsewhere")
    node_fault(folder / "node-fault-none.jsonl", "none")
    broken_chain(folder / "gang-consistent.jsonl", folder / "chain-broken-at-record-7.jsonl", 7)
    cut_mid_line(folder / "gang-consistent.jsonl", folder / "gang-cut-mid-line.jsonl")
    (folder / "not-json-lines.jsonl").write_text("this is a kubectl get pods listing, not an evidence log\n"
                                               "NAME READY\n", encoding="utf-8")


if __name__ == "__main__":
    write_all()
