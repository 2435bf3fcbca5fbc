"""A seeded Philly-like trace: the figures and assumptions of configs/trace/philly-like.yaml, nothing else."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hivedlab.basics.resources import CONFIGS
from hivedlab.trace.workload import Job, ServerType, TraceInputError, Workload, normalized_shares

DAY = 86400.0
WEEK = 7 * DAY


@dataclass(frozen=True)
class GeneratorParams:
    jobs: int
    days: float
    servers: tuple[ServerType, ...]
    vcs: int
    vc_weight_exponent: float
    gpus_per_job: Mapping[int, float]
    run_time_sigma: float
    run_time_min_s: float
    run_time_max_days: float
    offered_load: float
    weekly_burst_sigma: float


def default_params_text() -> str:
    return (CONFIGS / "trace" / "philly-like.yaml").read_text(encoding="utf-8")


def load_params(path: Path | None = None, jobs: int | None = None) -> GeneratorParams:
    text = default_params_text() if path is None else _read(path)
    try:
        data: Any = yaml.safe_load(text)
        servers = tuple(ServerType(str(s["name"]), int(s["gpus"]), int(s["count"]), float(s["cpu"]),
                                   float(s["memory_mb"])) for s in data["servers"])
        full = int(data["jobs"])
        # fewer jobs: the same density of submissions over a shorter time
        days = float(data["days"]) * (1.0 if jobs is None else jobs / full)
        params = GeneratorParams(
            jobs=full if jobs is None else jobs, days=days, servers=servers,
            vcs=int(data["vcs"]), vc_weight_exponent=float(data["vc_weight_exponent"]),
            gpus_per_job={int(k): float(v) for k, v in data["gpus_per_job"].items()},
            run_time_sigma=float(data["run_time_sigma"]), run_time_min_s=float(data["run_time_min_s"]),
            run_time_max_days=float(data["run_time_max_days"]), offered_load=float(data["offered_load"]),
            weekly_burst_sigma=float(data["weekly_burst_sigma"]))
    except (yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TraceInputError(f"{path or 'philly-like.yaml'}: not a generator parameter file ({exc})") from None
    return params


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TraceInputError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise TraceInputError(f"{path}: not UTF-8 text") from None


def generate(params: GeneratorParams, seed: int) -> Workload:
    """Jobs per VC by weight, arrivals as weekly-modulated Poisson processes, sizes and log-normal run times."""
    rng = random.Random(seed)
    names = [f"vc{r:02d}" for r in range(1, params.vcs + 1)]
    weights = [1.0 / (r ** params.vc_weight_exponent) for r in range(1, params.vcs + 1)]
    span = params.days * DAY
    weeks = max(1, math.ceil(span / WEEK))
    sizes = list(params.gpus_per_job)
    size_weights = [params.gpus_per_job[g] for g in sizes]
    mean_gpus = sum(g * w for g, w in zip(sizes, size_weights, strict=True)) / sum(size_weights)
    capacity = sum(s.gpus * s.count for s in params.servers)
    # the run times' mean (after the cap) makes the GPU time asked offered_load of the cluster's
    mean_run = params.offered_load * capacity * span / (params.jobs * mean_gpus)
    max_run = params.run_time_max_days * DAY
    mu = _location_for_mean(mean_run, params.run_time_sigma, max_run)
    counts = _split(params.jobs, weights)
    jobs: list[Job] = []
    for vc, count in zip(names, counts, strict=True):
        bursts = [rng.lognormvariate(0.0, params.weekly_burst_sigma) for _ in range(weeks)]
        times = sorted(_arrival(rng, bursts, span) for _ in range(count))
        for n, submit in enumerate(times):
            gpus = rng.choices(sizes, size_weights)[0]
            duration = min(max(rng.lognormvariate(mu, params.run_time_sigma), params.run_time_min_s), max_run)
            jobs.append(Job(f"{vc}-{n:06d}", vc, f"{vc}-u{rng.randrange(20):02d}", round(submit), gpus,
                            float(round(duration))))
    jobs.sort(key=lambda j: (j.submit, j.id))
    gpu_time: dict[str, float] = {}
    for job in jobs:
        gpu_time[job.vc] = gpu_time.get(job.vc, 0.0) + job.gpus * job.duration
    return Workload(tuple(jobs), params.servers, normalized_shares(gpu_time), f"generated (seed {seed})")


def _capped_mean(mu: float, sigma: float, cap: float) -> float:
    """E[min(X, cap)] for X log-normal(mu, sigma)."""
    z = (math.log(cap) - mu) / sigma
    return math.exp(mu + sigma ** 2 / 2) * _phi(z - sigma) + cap * (1 - _phi(z))


def _phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def _location_for_mean(mean: float, sigma: float, cap: float) -> float:
    """The log-normal location whose mean after the cap is `mean` (bisection; the capped mean grows with it)."""
    if mean >= cap:
        raise TraceInputError(f"a mean run time of {mean / DAY:.1f} days cannot be reached under the cap of "
                              f"{cap / DAY:.1f} days: lower offered_load or raise run_time_max_days")
    low, high = math.log(mean) - sigma ** 2 / 2 - 1, math.log(cap) + 5 * sigma
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if _capped_mean(mid, sigma, cap) < mean else (low, mid)
    return (low + high) / 2


def _split(total: int, weights: list[float]) -> list[int]:
    weight_sum = sum(weights)
    counts = [int(total * w / weight_sum) for w in weights]
    counts[0] += total - sum(counts)
    return counts


def _arrival(rng: random.Random, bursts: list[float], span: float) -> float:
    """One arrival time drawn from the piecewise-constant rate: a week by its burst factor, then a uniform time."""
    week = rng.choices(range(len(bursts)), bursts)[0]
    start = week * WEEK
    return start + rng.random() * (min(span, start + WEEK) - start)
