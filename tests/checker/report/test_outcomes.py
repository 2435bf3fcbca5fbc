"""A task FrameworkController stops because its job completed is labelled so, not failed, deleted or preempted."""

from __future__ import annotations

from hivedlab.checker.report.timeline import JOB_COMPLETED, outcome_of
from hivedlab.checker.timeline import Attempt, JobTimeline, Mark


def _mark(seq: int) -> Mark:
    return Mark(seq, f"2026-01-01T08:00:{seq:02d}.000000Z", 1767254400.0 + seq)


def _job(stopped: Attempt, state: str = "SUCCEEDED") -> JobTimeline:
    winner = Attempt("job-train-1", "u1", "train", 1, framework_attempt=0, started=_mark(3), terminated=_mark(10),
                     exit_code=0)
    return JobTimeline("fw", "gang", "alice", "job-config-6", "default", attempts=(stopped, winner), state=state,
                       finished=_mark(13))


def test_framework_attempt_completion_code_means_stopped_because_the_job_completed():
    stopped = Attempt("job-train-0", "u0", "train", 0, framework_attempt=0, started=_mark(3), deleted=_mark(11),
                      terminated=_mark(12), exit_code=143, fc_exit_code=-220)
    assert stopped.outcome == "failed" and outcome_of(_job(stopped), stopped) == JOB_COMPLETED


def test_without_the_code_a_task_deleted_after_a_sibling_succeeded_in_a_succeeded_job_is_stopped_too():
    never_ran = Attempt("job-train-0", "u0", "train", 0, framework_attempt=0, deleted=_mark(11))
    assert never_ran.outcome == "deleted" and outcome_of(_job(never_ran), never_ran) == JOB_COMPLETED


def test_a_task_that_failed_on_its_own_stays_failed():
    failed = Attempt("job-train-0", "u0", "train", 0, framework_attempt=0, started=_mark(3), terminated=_mark(5),
                     exit_code=1)
    assert outcome_of(_job(failed, state="FAILED"), failed) == "failed"
    deleted_early = Attempt("job-train-0", "u0", "train", 0, framework_attempt=0, deleted=_mark(4))
    assert outcome_of(_job(deleted_early), deleted_early) == "deleted"  # before any task succeeded
