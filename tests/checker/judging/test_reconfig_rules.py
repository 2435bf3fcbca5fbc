"""The rule kinds for a config switch (src/hivedlab/checker/judging/rules/reconfig.py) on hand-made timelines: what
each says when the evidence contradicts HiveD's work-preserving reconfiguration, or lacks the switch."""

from __future__ import annotations

from typing import Any

from hivedlab.checker.judging.rules.reconfig import RULES
from hivedlab.checker.judging.rules.rule_base import CONSISTENT, INCONCLUSIVE, INCONSISTENT, Context
from hivedlab.checker.judging.timeline import Attempt, JobTimeline, Mark, Step, Submission, Timeline, Wait
from hivedlab.plans.rule_params import JobsAtSwitch, RemovedVcJob, RuleParams

T0 = 1_767_254_400.0  # 2026-01-01T08:00:00Z
SWITCH = {"switch_config": "one-vc"}


def mark(seq: int) -> Mark:
    return Mark(seq, f"2026-01-01T08:00:{seq:02d}.000000Z", T0 + seq)


def attempt(uid: str, created: int, bound: int | None = None, node: str | None = None, **ends: int) -> Attempt:
    """An attempt with the named end marks (`ended=9`, `deleted=10`, ...) at those seqs."""
    end_marks: dict[str, Any] = {name: mark(seq) for name, seq in ends.items()}
    return Attempt(pod_name="fw1-train-0", uid=uid, task_role="train", task_index=0, created=mark(created),
                   bound=mark(bound) if bound is not None else None, node=node,
                   started=mark(bound + 1) if bound is not None else None,
                   **end_marks)


def job(key: str, fw: str, *attempts: Attempt, submitted: int = 1, status: int = 202, message: str = "") -> JobTimeline:
    sub = Submission(mark(submitted), "alice", key, f"{key}-alice", fw, status, message)
    return JobTimeline(fw, key, "alice", f"{key}-alice", "vc1", submissions=(sub,), attempts=attempts)


def judge(kind: str, rule: RuleParams, *jobs: JobTimeline, switched: bool = True,
          vcs: tuple[str, ...] = ("default",)) -> tuple[str, str]:
    steps = (Step(mark(10), 3, "reached", SWITCH),) if switched else ()
    timeline = Timeline("reconfig", "sim", "sim", "one-vc", {vc: ("hostname-carol",) for vc in vcs}, tuple(jobs),
                        steps=steps)
    outcome = RULES[kind](Context(timeline, "sim", True), rule)
    return outcome.verdict, outcome.answer.en


def test_a_task_ended_by_the_switch_is_inconsistent() -> None:
    ended = job("vc1-job", "fw1", attempt("u1", 2, 3, "hostname-dan", deleted=11))
    later = job("newcomer", "fw2", submitted=12)
    verdict, answer = judge("survives-switch", JobsAtSwitch(("vc1-job",), "one-vc"), ended, later)
    assert verdict == INCONSISTENT and "ended at 08:00:11 (deleted)" in answer


def test_a_task_that_kept_running_is_consistent() -> None:
    kept = job("vc1-job", "fw1", attempt("u1", 2, 3, "hostname-dan", preempted=14))
    later = job("newcomer", "fw2", submitted=12)
    verdict, answer = judge("survives-switch", JobsAtSwitch(("vc1-job",), "one-vc"), kept, later)
    assert verdict == CONSISTENT and "ended no task" in answer


def test_without_the_switch_every_kind_is_inconclusive() -> None:
    rules: dict[str, RuleParams] = {
        "survives-switch": JobsAtSwitch(("vc1-job",), "one-vc"),
        "submission-after-switch": RemovedVcJob("vc1-job", "vc1", "one-vc"),
        "stranded-after-switch": RemovedVcJob("vc1-job", "vc1", "one-vc"),
    }
    running = job("vc1-job", "fw1", attempt("u1", 2, 3, "hostname-dan"))
    for kind, rule in rules.items():
        verdict, answer = judge(kind, rule, running, switched=False)
        assert verdict == INCONCLUSIVE and "no switch to the one-vc config" in answer, kind


LATE = RemovedVcJob("late-vc1", "vc1", "one-vc")
REFUSED = "User alice is not allowed to do operation in vc1"


def test_a_submission_to_the_removed_vc_while_its_job_ran_is_accepted_and_never_scheduled() -> None:
    """The rehearsal cluster's answer: HiveD still lists vc1 for the lazy-preempted vc1 job, the rest-server keeps
    the grant (202), and no scheduler serves vc1, so the new pod is never tried."""
    holder = job("vc1-job", "fw1", attempt("u1", 2, 3, "hostname-dan"))
    late = job("late-vc1", "fw3", attempt("u3", 13), submitted=12)
    verdict, answer = judge("submission-after-switch", LATE, holder, late)
    assert verdict == CONSISTENT
    assert "got HTTP 202" in answer and "still lists vc1" in answer and "never scheduled" in answer
    assert "hivedscheduler-ds-vc1" in answer


def test_what_contradicts_it_is_inconsistent() -> None:
    holder = job("vc1-job", "fw1", attempt("u1", 2, 3, "hostname-dan"))
    refused = job("late-vc1", "fw3", submitted=12, status=403, message=REFUSED)
    verdict, answer = judge("submission-after-switch", LATE, holder, refused)
    assert verdict == INCONSISTENT and "should have been accepted" in answer
    ran = job("late-vc1", "fw3", attempt("u3", 13, 14, "hostname-carol"), submitted=12)
    verdict, answer = judge("submission-after-switch", LATE, holder, ran)
    assert verdict == INCONSISTENT and "bound to hostname-carol" in answer
    wait = Wait(mark(14), "VC vc1 not found", "VC vc1 not found")
    tried = job("late-vc1", "fw3", Attempt(pod_name="fw3-train-0", uid="u3", task_role="train", task_index=0,
                                            created=mark(13), waits=(wait,)), submitted=12)
    verdict, answer = judge("submission-after-switch", LATE, holder, tried)
    assert verdict == INCONSISTENT and "a scheduler wrote an event" in answer


def test_without_a_job_of_the_removed_vc_the_submission_is_refused() -> None:
    refused = job("late-vc1", "fw3", submitted=12, status=403, message=REFUSED)
    verdict, answer = judge("submission-after-switch", LATE, refused)
    assert verdict == CONSISTENT and "dropped its grant" in answer
    accepted = job("late-vc1", "fw3", attempt("u3", 13), submitted=12)
    verdict, answer = judge("submission-after-switch", LATE, accepted)
    assert verdict == INCONSISTENT and "HTTP 403 was expected" in answer
    ended_before = job("vc1-job", "fw1", attempt("u1", 2, 3, "hostname-dan", terminated=8))
    assert judge("submission-after-switch", LATE, ended_before, refused)[0] == CONSISTENT


def test_a_stranded_job_that_ran_again_is_inconsistent() -> None:
    rule = RemovedVcJob("vc1-job", "vc1", "one-vc")
    ran_again = job("vc1-job", "fw1", attempt("u1", 2, 3, "hostname-dan", preempted=14),
                    attempt("u2", 16, 20, "hostname-carol"))
    verdict, answer = judge("stranded-after-switch", rule, ran_again)
    assert verdict == INCONSISTENT and "a later attempt was bound to hostname-carol" in answer
    stranded = job("vc1-job", "fw1", attempt("u1", 2, 3, "hostname-dan", preempted=14), attempt("u2", 16))
    assert judge("stranded-after-switch", rule, stranded)[0] == CONSISTENT
    assert judge("stranded-after-switch", rule, stranded, vcs=("default", "vc1"))[0] == INCONCLUSIVE
