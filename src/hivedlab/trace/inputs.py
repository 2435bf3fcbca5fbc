"""A `Workload` from what the user named: the generated trace (default), a CSV trace or the Philly release's files,
with the cluster and the VCs' shares; the jobs that cannot be replayed are left out here with their reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hivedlab.trace.cluster import Cluster
from hivedlab.trace.generator import generate, load_params
from hivedlab.trace.readers import Parsed, read_csv, read_machine_list, read_philly_jobs, read_shares
from hivedlab.trace.workload import Job, LeftOut, ServerType, TraceInputError, Workload, normalized_shares


@dataclass(frozen=True)
class TraceRequest:
    """What to replay: `trace` None means the generated trace; `kind` "csv" or "philly" for a file."""

    trace: Path | None = None
    kind: str = "csv"
    machines: Path | None = None
    shares: Path | None = None
    params: Path | None = None
    jobs: int | None = None
    seed: int = 7


def load(request: TraceRequest) -> Workload:
    params = load_params(request.params, request.jobs)
    if request.trace is None:
        generated = generate(params, request.seed)
        shares = read_shares(request.shares) if request.shares else None
        types = read_machine_list(request.machines, params.servers) if request.machines else generated.server_types
        return assemble(Parsed(list(generated.jobs), []), types, shares, generated.source)
    parsed = read_philly_jobs(request.trace) if request.kind == "philly" else read_csv(request.trace)
    types = read_machine_list(request.machines, params.servers) if request.machines else params.servers
    shares = read_shares(request.shares) if request.shares else None
    return assemble(parsed, types, shares, f"{request.kind} file {request.trace.name}")


def assemble(parsed: Parsed, types: Sequence[ServerType], shares: Mapping[str, float] | None,
             source: str) -> Workload:
    """Jobs sorted by submit time from 0; left out: a repeated job id, a job no server type can place, a job of a
    VC without a share. Shares from the file, else each VC's part of the kept jobs' GPU time."""
    cluster = Cluster(types)
    left = list(parsed.left_out)
    seen: set[str] = set()
    kept: list[Job] = []
    for job in parsed.jobs:
        if job.id in seen:
            left.append(LeftOut(job.id, "the same job id appears again"))
        elif not cluster.fits_anywhere(job.gpus):
            left.append(LeftOut(job.id, f"asks for more GPUs than the cluster can place ({cluster.total_gpus} GPUs)"))
        elif shares is not None and shares.get(job.vc, 0.0) <= 0:
            left.append(LeftOut(job.id, f"VC {job.vc} has no share"))
        else:
            seen.add(job.id)
            kept.append(job)
    if not kept:
        reason = f"{len(left)} left out" if left else "it is empty"
        raise TraceInputError(f"{source}: no job to replay ({reason})")
    kept.sort(key=lambda j: (j.submit, j.id))
    origin = kept[0].submit
    jobs = tuple(Job(j.id, j.vc, j.user, j.submit - origin, j.gpus, j.duration, j.cpu, j.memory_mb) for j in kept)
    if shares is None:
        gpu_time: dict[str, float] = {}
        for job in jobs:
            gpu_time[job.vc] = gpu_time.get(job.vc, 0.0) + job.gpus * max(job.duration, 1.0)
        final = normalized_shares(gpu_time)
    else:
        final = normalized_shares({vc: s for vc, s in shares.items() if s > 0})
    return Workload(jobs, tuple(types), final, source, tuple(left))


def check_exists(paths: Sequence[Path | None]) -> None:
    for path in paths:
        if path is not None and not path.is_file():
            raise TraceInputError(f"{path}: no such file")
