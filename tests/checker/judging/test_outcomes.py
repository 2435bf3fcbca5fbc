"""A task FrameworkController stops because its job completed is its own outcome, not failed, deleted or preempted."""

from __future__ import annotations

from hivedlab.checker.judging.timeline import Attempt, Mark


def _mark(seq: int) -> Mark:
    return Mark(seq, f"2026-01-01T08:00:{seq:02d}.000000Z", 1767254400.0 + seq)


def test_stopped_with_exit_143_once_the_job_completed_is_job_completed_not_failed():
    stopped = Attempt("job-train-0", "u0", "train", 0, started=_mark(3), deleted=_mark(11), terminated=_mark(12),
                      exit_code=143, fc_exit_code=-220)  # FrameworkAttemptCompletion
    assert stopped.outcome == "job-completed"


def test_deleted_before_it_ran_once_the_job_completed_is_job_completed_not_deleted():
    assert Attempt("job-train-1", "u1", "train", 1, deleted=_mark(11), fc_exit_code=-220).outcome == "job-completed"


def test_a_failure_of_its_own_and_a_preemption_keep_their_outcomes():
    assert Attempt("a", "u", "train", 0, started=_mark(3), terminated=_mark(5), exit_code=1).outcome == "failed"
    assert Attempt("a", "u", "train", 0, started=_mark(3), terminated=_mark(5), exit_code=0,
                   fc_exit_code=-220).outcome == "succeeded"
    assert Attempt("a", "u", "train", 0, started=_mark(3), deleted=_mark(4), preempted=_mark(4),
                   fc_exit_code=-101).outcome == "preempted"
