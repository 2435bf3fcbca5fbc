"""The event loop on virtual time: arrivals and completions in time order, a dispatch after each instant.

A job's queuing delay is the time it spent waiting in a queue: completion - submit - duration - the runs it lost to
preemption (a preempted job starts again from the beginning, as a killed container does; its lost runs count in
its completion time and in the GPU hours lost, not in its queuing delay).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

from hivedlab.trace.policies.base import Policy
from hivedlab.trace.workload import Job, LeftOut, Workload

Progress = Callable[[int, int], None]
SAMPLES = 400  # points of the utilization timeline


@dataclass(slots=True)
class JobResult:
    job: Job
    first_start: float = -1.0
    end: float = -1.0
    preemptions: int = 0
    lent: bool = False  # its completing run was on lent GPUs (opportunistic / over quota)
    lost_seconds: float = 0.0  # time in runs that preemption cut short
    lost_gpu_seconds: float = 0.0

    @property
    def queuing(self) -> float:
        return self.end - self.job.submit - self.job.duration - self.lost_seconds

    @property
    def jct(self) -> float:
        return self.end - self.job.submit


@dataclass
class Sample:
    time: float
    used_gpus: int
    stranded_gpus: int
    waiting: int
    held: dict[str, int]  # GPUs per VC
    backlogged: tuple[str, ...]  # VCs with a waiting job


@dataclass
class Outcome:
    policy: str
    total_gpus: int
    results: list[JobResult]
    left_out: list[LeftOut]
    samples: list[Sample] = field(default_factory=list)
    gpu_seconds_used: float = 0.0  # between the first and the last submission
    submit_span: float = 0.0
    span: float = 0.0  # until the last job ended


def simulate(workload: Workload, policy: Policy, progress: Progress | None = None) -> Outcome:
    jobs = workload.jobs
    results: dict[str, JobResult] = {}
    left_out: list[LeftOut] = []
    done: list[JobResult] = []
    ends: list[tuple[float, int, str, int]] = []  # (end time, seq, job, run token)
    token: dict[str, int] = {}
    started_at: dict[str, float] = {}
    total_gpus = sum(c.total_gpus for c in policy.clusters())
    start = jobs[0].submit if jobs else 0.0
    last_submit = jobs[-1].submit if jobs else 0.0
    finish_hint = max((j.submit + j.duration for j in jobs), default=start)
    step = max((finish_hint - start) / SAMPLES, 1.0)
    next_sample = start
    samples: list[Sample] = []
    used_integral = 0.0
    now = start
    i = seq = 0
    while i < len(jobs) or ends:
        t = min(jobs[i].submit if i < len(jobs) else float("inf"), ends[0][0] if ends else float("inf"))
        while next_sample <= t:
            samples.append(_sample(policy, next_sample))
            next_sample += step
        if now < last_submit:
            used_integral += sum(c.used_gpus for c in policy.clusters()) * (min(t, last_submit) - now)
        now = t
        while ends and ends[0][0] == now:
            _, _, job_id, run_token = heapq.heappop(ends)
            if token.get(job_id) != run_token:
                continue
            policy.release(job_id)
            result = results[job_id]
            result.end = now
            done.append(result)
        while i < len(jobs) and jobs[i].submit == now:
            job = jobs[i]
            i += 1
            reason = policy.never_runs(job)
            if reason is not None:
                left_out.append(LeftOut(job.id, reason))
                continue
            results[job.id] = JobResult(job)
            policy.enqueue(job)
        for is_start, run in policy.dispatch(now).events:
            job_id = run.job.id
            result = results[job_id]
            if is_start:
                token[job_id] = token.get(job_id, 0) + 1
                started_at[job_id] = now
                if result.first_start < 0:
                    result.first_start = now
                result.lent = run.lent
                seq += 1
                heapq.heappush(ends, (now + run.job.duration, seq, job_id, token[job_id]))
            else:
                token[job_id] = token.get(job_id, 0) + 1
                result.preemptions += 1
                result.lost_seconds += now - started_at[job_id]
                result.lost_gpu_seconds += run.gpus * (now - started_at[job_id])
        if progress is not None and seq % 2000 == 0:
            progress(len(done), len(jobs))
    samples.append(_sample(policy, now))
    if progress is not None:
        progress(len(done), len(jobs))
    stuck = [r for r in results.values() if r.end < 0]
    for r in stuck:
        left_out.append(LeftOut(r.job.id, "never started: it waits behind a job that can never start"))
    done.sort(key=lambda r: (r.job.submit, r.job.id))
    return Outcome(policy.name, total_gpus, done, left_out, samples, used_integral, last_submit - start, now - start)


def _sample(policy: Policy, time: float) -> Sample:
    heads = [j.gpus for j in policy.heads()]
    stranded = 0
    for cluster in policy.clusters():
        node = max((st.gpus for st in cluster.types), default=0)
        small = [g for g in heads if g <= node]
        stranded += cluster.stranded(min(small) if small else None, len(small) < len(heads))
    held: dict[str, int] = {}
    for run in policy.running.values():
        held[run.job.vc] = held.get(run.job.vc, 0) + run.gpus
    waiting = {j.vc: None for j in policy.waiting()}  # by VC, whatever the policy's queues (FIFO has one)
    backlogged = tuple(sorted(waiting))
    count = sum(len(q) for q in policy.queues.values())
    return Sample(time, sum(c.used_gpus for c in policy.clusters()), stranded, count, held, backlogged)
