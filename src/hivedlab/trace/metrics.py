"""What a replay measured, per policy and per VC: queuing delay and its excess over each VC's private cluster,
completion time, utilization, stranded GPUs, fairness between VCs, preemptions, jobs left out (docs/trace.md#metrics).

The sharing anomaly: a VC whose mean queuing delay under a policy exceeds its mean on its private cluster by more
than 1 % of the latter or 60 s, whichever is larger (the tolerance of issue #40's "done when").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hivedlab.trace.simulate import JobResult, Outcome

TOLERANCE_FRACTION = 0.01
TOLERANCE_SECONDS = 60.0
NAMED_JOBS = 10  # jobs named per policy as waiting longer than in private


@dataclass(frozen=True)
class Delays:
    count: int
    mean: float
    p50: float
    p95: float
    max: float


@dataclass(frozen=True)
class VcRow:
    vc: str
    share: float
    delays: Delays
    private_mean: float | None
    excess: float | None  # mean queuing delay minus the private cluster's, same jobs
    anomalous: bool
    longer_than_private: int  # jobs that waited longer than in private (by more than the tolerance)
    fair_ratio: float | None  # mean GPUs held / entitled GPUs while the VC had a waiting job


@dataclass(frozen=True)
class PolicyRow:
    policy: str
    delays: Delays
    jct: Delays
    utilization: float
    stranded_mean: float
    jain: float | None
    worst_vc: str | None
    worst_ratio: float | None
    preemptions: int
    lost_gpu_hours: float
    left_out: Mapping[str, int]
    vcs: tuple[VcRow, ...]
    anomalous_vcs: tuple[str, ...]
    longer_jobs: int  # jobs that waited longer than alone, by more than the tolerance
    named_jobs: tuple[tuple[str, str, float], ...]  # (job, vc, excess seconds), longest first


def delays(values: Sequence[float]) -> Delays:
    if not values:
        return Delays(0, 0.0, 0.0, 0.0, 0.0)
    ordered = sorted(values)
    return Delays(len(ordered), sum(ordered) / len(ordered), _quantile(ordered, 0.5), _quantile(ordered, 0.95),
                  ordered[-1])


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Nearest rank."""
    index = max(0, min(len(ordered) - 1, int(round(q * len(ordered) + 0.5)) - 1))
    return ordered[index]


def jain(values: Sequence[float]) -> float | None:
    """Jain's fairness index: (sum x)^2 / (n * sum x^2); 1 when all are equal."""
    squares = sum(v * v for v in values)
    return (sum(values) ** 2) / (len(values) * squares) if values and squares > 0 else None


def tolerance(private_mean: float) -> float:
    return max(TOLERANCE_FRACTION * private_mean, TOLERANCE_SECONDS)


def measure(outcome: Outcome, shares: Mapping[str, float], private: Outcome | None) -> PolicyRow:
    by_vc: dict[str, list[JobResult]] = {vc: [] for vc in shares}
    for r in outcome.results:
        by_vc.setdefault(r.job.vc, []).append(r)
    private_q = {r.job.id: r.queuing for r in private.results} if private is not None else {}
    fair = _fairness(outcome, shares)
    rows = []
    named: list[tuple[str, str, float]] = []
    for vc in sorted(by_vc):
        results = by_vc[vc]
        mine = [r.queuing for r in results]
        pairs = [(r, private_q[r.job.id]) for r in results if r.job.id in private_q]
        private_mean = sum(p for _, p in pairs) / len(pairs) if pairs else None
        excess = sum(r.queuing - p for r, p in pairs) / len(pairs) if pairs else None
        longer = [(r.job.id, vc, r.queuing - p) for r, p in pairs if r.queuing - p > tolerance(p)]
        named.extend(longer)
        anomalous = private is not None and excess is not None and private_mean is not None and \
            excess > tolerance(private_mean)
        rows.append(VcRow(vc, shares.get(vc, 0.0), delays(mine), private_mean, excess, anomalous, len(longer),
                          fair.get(vc)))
    named.sort(key=lambda item: (-item[2], item[0]))
    worst = min(fair, key=lambda vc: (fair[vc], vc)) if fair else None
    samples = outcome.samples
    span = outcome.submit_span
    return PolicyRow(
        policy=outcome.policy,
        delays=delays([r.queuing for r in outcome.results]),
        jct=delays([r.jct for r in outcome.results]),
        utilization=outcome.gpu_seconds_used / (outcome.total_gpus * span) if span > 0 and outcome.total_gpus else 0.0,
        stranded_mean=sum(s.stranded_gpus for s in samples) / len(samples) if samples else 0.0,
        jain=_mean_jain(outcome, shares),
        worst_vc=worst,
        worst_ratio=fair[worst] if worst is not None else None,
        preemptions=sum(r.preemptions for r in outcome.results),
        lost_gpu_hours=sum(r.lost_gpu_seconds for r in outcome.results) / 3600,
        left_out=dict(sorted(Counter(item.reason for item in outcome.left_out).items())),
        vcs=tuple(rows),
        anomalous_vcs=tuple(row.vc for row in rows if row.anomalous),
        longer_jobs=len(named),
        named_jobs=tuple(named[:NAMED_JOBS]),
    )


def _entitled(outcome: Outcome, shares: Mapping[str, float], vc: str) -> float:
    return shares.get(vc, 0.0) * outcome.total_gpus


def _fairness(outcome: Outcome, shares: Mapping[str, float]) -> dict[str, float]:
    """Per VC, the mean over the samples where it had a waiting job of GPUs held / GPUs its share entitles it to."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for sample in outcome.samples:
        for vc in sample.backlogged:
            entitled = _entitled(outcome, shares, vc)
            if entitled <= 0:
                continue
            sums[vc] = sums.get(vc, 0.0) + sample.held.get(vc, 0) / entitled
            counts[vc] = counts.get(vc, 0) + 1
    return {vc: sums[vc] / counts[vc] for vc in sums}


def _mean_jain(outcome: Outcome, shares: Mapping[str, float]) -> float | None:
    """Jain's index of GPUs held over share among the VCs with a waiting job, averaged over the samples with two or
    more such VCs (a VC with nothing waiting takes what it needs and is left out of the comparison)."""
    values = []
    for sample in outcome.samples:
        xs = [sample.held.get(vc, 0) / _entitled(outcome, shares, vc) for vc in sample.backlogged
              if _entitled(outcome, shares, vc) > 0]
        if len(xs) >= 2:
            index = jain(xs)
            if index is not None:
                values.append(index)
    return sum(values) / len(values) if values else None
