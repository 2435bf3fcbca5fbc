"""Stop a run's jobs: exactly those the run submitted (`<run>/pai/submitted.json`) that are still on the cluster.

Each job is stopped as its own member (owner), never anyone else's job. The calls and replies go to the run's REST
call log (`<run>/pai/rest-calls.jsonl`); the evidence log is left alone (a run may still be writing it): the stop shows
there as the Framework completing with code -210 once the run is resumed or the cluster watched, and `stop_run` records
who stopped what and when in `<run>/pai/user-stops.jsonl`, so the run ends `stopped` (`hivedlab.rundir.UserStop`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hivedlab.backends.pai.backend import UNFINISHED, RunState
from hivedlab.backends.pai.rest import PaiClient
from hivedlab.basics.errors import HivedlabError
from hivedlab.rundir import PAI_STATE, PAI_SUBMITTED, RunDir


@dataclass(frozen=True)
class RunJob:
    """A job the run submitted, with its REST state when asked (`GONE` when the cluster does not know it)."""

    user: str
    job_name: str
    experiment: str
    state: str = "UNKNOWN"

    @property
    def key(self) -> str:
        return f"{self.user}~{self.job_name}"


@dataclass(frozen=True)
class StopResult:
    stopped: tuple[RunJob, ...] = ()
    done: tuple[RunJob, ...] = ()  # finished, stopping already, or not on the cluster
    failed: tuple[tuple[RunJob, str], ...] = ()


def run_state(run_dir: Path) -> RunState:
    """The run's record of what it submitted; a folder without one is not a real-cluster run."""
    if not RunDir(run_dir).pai_submitted.is_file():
        raise HivedlabError(f"{run_dir} is not the folder of a run on a real cluster "
                            f"(no {PAI_STATE}/{PAI_SUBMITTED} in it)")
    return RunState(RunDir(run_dir).pai_state)


def submitted_jobs(state: RunState) -> list[RunJob]:
    """Jobs the run sent: accepted, or pending (sent, the reply lost), in the order they were recorded."""
    return [RunJob(str(j["user"]), str(j["job_name"]), str(j.get("experiment") or ""))
            for j in state.jobs.values() if j.get("status") in ("accepted", "pending")]


def with_state(job: RunJob, clients: Mapping[str, PaiClient]) -> RunJob:
    client = clients.get(job.user.lower())
    if client is None:
        raise HivedlabError(f"no OpenPAI token for member {job.user}, whose job {job.key} this run submitted")
    detail = client.job(job.user, job.job_name)
    state = str((detail.get("jobStatus") or {}).get("state") or "UNKNOWN") if detail is not None else "GONE"
    return RunJob(job.user, job.job_name, job.experiment, state)


def jobs_left(state: RunState, clients: Mapping[str, PaiClient]) -> list[RunJob]:
    """The run's jobs that are still waiting or running on the cluster."""
    return [job for job in (with_state(j, clients) for j in submitted_jobs(state)) if job.state in UNFINISHED]


def stop_jobs(state: RunState, clients: Mapping[str, PaiClient],
              before: Callable[[RunJob], None] | None = None) -> StopResult:
    """Stop every job of the run that is still waiting or running; a job that cannot be stopped is noted, the others
    are still stopped. `before` is told of each job just before its stop is sent (so that a run watching it knows
    the stop was the user's by the time it sees the job stopped)."""
    stopped: list[RunJob] = []
    done: list[RunJob] = []
    failed: list[tuple[RunJob, str]] = []
    for job in submitted_jobs(state):
        try:
            job = with_state(job, clients)
            if job.state not in ("WAITING", "RUNNING"):
                done.append(job)
                continue
            if before:
                before(job)
            clients[job.user.lower()].stop(job.user, job.job_name)
            stopped.append(job)
        except HivedlabError as exc:
            failed.append((job, str(exc)))
    return StopResult(tuple(stopped), tuple(done), tuple(failed))


def stop_hint(run_dir: Path, left: list[RunJob]) -> str:
    """One sentence: which of the run's jobs are still on the cluster and the command that stops them."""
    names = ", ".join(f"{job.key} ({job.state})" for job in left)
    return (f"this run's jobs still on the cluster: {names}; stop them with `hivedlab stop {run_dir}` / "
            f"本次运行仍在集群上的任务：{names}；可用 `hivedlab stop {run_dir}` 停止")
