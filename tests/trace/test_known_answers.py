"""Traces whose outcome follows by reasoning: the sharing anomaly under quota VCs and not under HiveD, DRF's
textbook example, FIFO's head-of-line blocking."""

from __future__ import annotations

from hivedlab.trace.cells import derive_cells
from hivedlab.trace.cluster import Cluster
from hivedlab.trace.metrics import measure
from hivedlab.trace.policies.drf import DrfPolicy
from hivedlab.trace.policies.registry import build
from hivedlab.trace.simulate import Outcome, simulate
from hivedlab.trace.workload import Job, ServerType
from tests.trace.support import job, workload


def _scattered() -> list[Job]:
    """Two 8-GPU servers, VCs a and b with half each. At 0, b submits sixteen 1-GPU jobs: eight within its quota fill
    one server, eight beyond it fill the other. At 5 every odd one ends: b holds 4 GPUs on each server, exactly its
    quota, so nothing of b's is above quota. At 10, a submits an 8-GPU job: a's quota is free, but no server is."""
    jobs = [job(f"b{i:02d}", "b", 0, 1, 5 if i % 2 else 1000) for i in range(16)]
    jobs.append(job("a-8gpu", "a", 10, 8, 100))
    return jobs


def _replay(name: str, jobs: list[Job], shares: dict[str, float]) -> Outcome:
    w = workload(jobs, shares)
    return simulate(w, build(name, w, derive_cells(w.server_types, w.shares)))


def _delay(outcome: Outcome, job_id: str) -> float:
    return next(r.queuing for r in outcome.results if r.job.id == job_id)


def test_scattered_quota_makes_the_8gpu_job_wait_and_hived_starts_it_at_once() -> None:
    shares = {"a": 0.5, "b": 0.5}
    quota = _replay("quota", _scattered(), shares)
    hived = _replay("hived", _scattered(), shares)
    private = _replay("private", _scattered(), shares)
    assert _delay(quota, "a-8gpu") == 990  # until b's long jobs end at 1000
    assert _delay(hived, "a-8gpu") == 0  # HiveD preempts b's opportunistic jobs on a's cell
    assert _delay(private, "a-8gpu") == 0
    assert sum(r.preemptions for r in quota.results) == 0
    assert sum(r.preemptions for r in hived.results) == 4  # b's four long jobs beyond its cells
    shares_map = {"a": 0.5, "b": 0.5}
    assert measure(quota, shares_map, private).anomalous_vcs == ("a",)
    assert "a" not in measure(hived, shares_map, private).anomalous_vcs


def test_quota_takes_back_lent_gpus_when_that_lets_the_job_start() -> None:
    """b holds all 16 GPUs (8 above its quota) when a's 4-GPU job comes: b's 4 most recent jobs go."""
    jobs = [job(f"b{i:02d}", "b", 0, 1, 1000) for i in range(16)] + [job("a-4gpu", "a", 10, 4, 100)]
    quota = _replay("quota", jobs, {"a": 0.5, "b": 0.5})
    assert _delay(quota, "a-4gpu") == 0
    assert sum(r.preemptions for r in quota.results) == 4
    assert sorted(r.job.id for r in quota.results if r.preemptions) == ["b12", "b13", "b14", "b15"]


def test_drf_textbook_example_gives_three_and_two_tasks() -> None:
    """Ghodsi et al. (NSDI 2011) section 4: 9 CPUs and 18 GB; A's tasks ⟨1 CPU, 4 GB⟩, B's ⟨3 CPU, 1 GB⟩."""
    server = ServerType("box", 100, 1, 9, 18 * 1024)  # GPUs plentiful: CPU and memory decide
    jobs = [job(f"A{i}", "A", 0, 1, 1000, cpu=1, memory_mb=4096) for i in range(10)]
    jobs += [job(f"B{i}", "B", 0, 1, 1000, cpu=3, memory_mb=1024) for i in range(10)]
    w = workload(jobs, {"A": 0.5, "B": 0.5}, (server,))
    policy = DrfPolicy(Cluster(w.server_types), w.shares)
    for j in w.jobs:
        policy.enqueue(j)
    started = [run.job.vc for is_start, run in policy.dispatch(0).events if is_start]
    assert started.count("A") == 3 and started.count("B") == 2
    # both at 2/3 of a resource (A of memory, B of CPU), over a weight of 1/2
    assert abs(policy.dominant_share("A") - 4 / 3) < 1e-9 and abs(policy.dominant_share("B") - 4 / 3) < 1e-9


def test_fifo_head_of_line_blocking() -> None:
    """One 8-GPU server: a 4-GPU job runs; an 8-GPU job waits for it; a 1-GPU job behind waits too, although 4 GPUs
    are free all the while."""
    jobs = [job("j1", "a", 0, 4, 100), job("j2", "a", 1, 8, 10), job("j3", "b", 2, 1, 10)]
    shares = {"a": 0.5, "b": 0.5}
    w = workload(jobs, shares, (ServerType("8gpu", 8, 1, 48, 524288),))
    cells = derive_cells(w.server_types, w.shares)
    fifo = simulate(w, build("fifo", w, cells))
    starts = {r.job.id: r.first_start for r in fifo.results}
    assert starts == {"j1": 0, "j2": 100, "j3": 110}
    drf = simulate(w, build("drf", w, cells))
    assert next(r.first_start for r in drf.results if r.job.id == "j3") == 2  # another VC's queue goes on


def test_a_job_bigger_than_a_server_takes_whole_servers() -> None:
    jobs = [job("small", "a", 0, 1, 100), job("big", "b", 1, 16, 10)]
    w = workload(jobs, {"a": 0.5, "b": 0.5}, (ServerType("8gpu", 8, 3, 48, 524288),))
    cells = derive_cells(w.server_types, w.shares)
    for name in ("fifo", "quota", "hived", "drf"):
        outcome = simulate(w, build(name, w, cells))
        assert {r.job.id: r.first_start for r in outcome.results} == {"small": 0, "big": 1}, name
