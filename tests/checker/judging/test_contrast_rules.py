"""The deadlock rule of runs without HiveD (src/hivedlab/checker/judging/rules/contrast.py) on hand-made timelines: a
deadlock, a run where every job started (one of them, maybe, after a partial start), a starved job, a refused job and
a partial start that never completed are told apart, and only the first two can agree with a plan."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.resources import EXPERIMENTS
from hivedlab.checker.judging.pod_facts import LeafCell, VcShare
from hivedlab.checker.judging.rules.cells import free_cells
from hivedlab.checker.judging.rules.contrast import NEVER_BESIDE, deadlock, gang_start
from hivedlab.checker.judging.rules.rule_base import CONSISTENT, INCONCLUSIVE, INCONSISTENT, Context, speaker
from hivedlab.checker.judging.timeline import Attempt, JobTimeline, Mark, Submission, Timeline, Wait
from hivedlab.plans.loader import load_plan, plan_from_dict
from hivedlab.plans.rule_params import Deadlock, GangStart

T0 = 1_767_254_400.0  # 2026-01-01T08:00:00Z


def mark(seq: int) -> Mark:
    return Mark(seq, f"2026-01-01T08:00:{seq:02d}.000000Z", T0 + seq)


def task(job: str, index: int, bound: int | None) -> Attempt:
    wait = Wait(mark(2), "", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    return Attempt(pod_name=f"{job}-worker-{index}", uid=f"{job}-{index}", task_role="worker", task_index=index,
                   created=mark(1), waits=(wait,) if bound is None or bound > 3 else (),
                   bound=mark(bound) if bound is not None else None, node="hostname-carol" if bound else None)


def job(key: str, *bound: int | None, status: int = 201) -> JobTimeline:
    sub = Submission(mark(0), "alice", key, key, key, status, None if status < 300 else "forbidden")
    attempts = tuple(task(key, i, b) for i, b in enumerate(bound)) if status < 300 else ()
    return JobTimeline(key, key, None, key, None, submissions=(sub,), attempts=attempts)


def judge(expect: bool, *jobs: JobTimeline, waits_whole: bool = False) -> tuple[str, str]:
    timeline = Timeline("gang", "sim", "sim", None, {}, tuple(jobs), scheduler="default")
    params = Deadlock(tuple(str(j.job_key) for j in jobs), expect, waits_whole)
    outcome = deadlock(Context(timeline, "sim", True), params)
    return outcome.verdict, outcome.answer.en


def test_two_partial_starts_are_a_deadlock() -> None:
    verdict, answer = judge(True, job("a", 3, None), job("b", 4, None))
    assert verdict == CONSISTENT and "a deadlock" in answer
    assert judge(False, job("a", 3, None), job("b", 4, None))[0] == INCONSISTENT


def test_every_job_started_is_no_deadlock() -> None:
    verdict, answer = judge(False, job("a", 3, 3), job("b", 9, 9))
    assert verdict == CONSISTENT and answer.endswith("no deadlock.")


def test_a_job_that_completed_after_a_partial_start_is_no_deadlock_and_says_so() -> None:
    """Kubernetes' default scheduler with one operator thread: the second job's worker-0 held a node from 08:00:04
    while worker-1 waited until the first job's GPUs freed (08:00:40); both completed."""
    verdict, answer = judge(False, job("a", 3, 3), job("b", 4, 40))
    assert verdict == CONSISTENT and answer.endswith("no deadlock.")
    assert answer.startswith("all 2 tasks of a were bound; all 2 tasks of b were bound after a partial start: "
                             "worker-0 (hostname-carol, 08:00:04) held nodes while worker-1 waited until 08:00:40")
    assert "after a partial start" not in answer.split(";")[0]  # a's tasks were bound together


def test_under_a_gang_scheduler_a_job_that_completed_after_a_partial_start_contradicts_no_deadlock() -> None:
    """kube-batch's rule (`waits_whole`): one job runs whole, the other waits whole and runs afterwards. A
    default-scheduler run relabelled as kube-batch, where the second job started partially, is not that."""
    verdict, answer = judge(False, job("a", 3, 3), job("b", 4, 40), waits_whole=True)
    assert verdict == INCONSISTENT
    assert "all 2 tasks of b were bound after a partial start: worker-0 (hostname-carol, 08:00:04) held nodes" in answer
    assert answer.endswith(": no deadlock, but b started partially instead of waiting whole and running whole.")


def test_under_a_gang_scheduler_jobs_that_waited_whole_and_ran_whole_are_no_deadlock() -> None:
    verdict, answer = judge(False, job("a", 3, 3), job("b", 40, 40), waits_whole=True)
    assert verdict == CONSISTENT
    assert answer == ("all 2 tasks of a were bound in one round at 08:00:03; all 2 tasks of b waited whole, then "
                      "were bound in one round at 08:00:40: no deadlock.")
    assert judge(False, job("a", 3, 3), job("b", 40, 40))[1] == ("all 2 tasks of a were bound; all 2 tasks of b "
                                                                 "were bound: no deadlock.")  # the default's words


def test_waits_whole_is_for_no_deadlock_only() -> None:
    raw = copy.deepcopy(load_plan("kubeflow-gang").raw or {})
    rule = next(r for r in raw["rules"] if r["id"] == "no-deadlock")
    assert rule["waits_whole"] is True
    rule["expect"] = True
    with pytest.raises(HivedlabError, match="rules/3"):
        plan_from_dict(raw, EXPERIMENTS / "kubeflow-gang.yaml")


@pytest.mark.parametrize("expect", [True, False])
def test_a_starved_job_is_neither(expect: bool) -> None:
    verdict, answer = judge(expect, job("a", 3, 3, 3), job("b", None, None, None))
    assert verdict == INCONSISTENT
    assert "none of the 3 tasks of b was ever bound (starved)" in answer and "a job starved" in answer


@pytest.mark.parametrize("expect", [True, False])
def test_a_refused_job_is_neither(expect: bool) -> None:
    verdict, answer = judge(expect, job("a", 3, 3), job("b", status=403))
    assert verdict == INCONSISTENT
    assert "b's submission was refused (HTTP 403)" in answer and "a job was refused" in answer


def test_a_partial_start_beside_a_finished_job_is_neither() -> None:
    verdict, answer = judge(False, job("a", 3, 3), job("b", 4, None))
    assert verdict == INCONSISTENT
    assert "b held nodes for only 1/2 tasks" in answer and "a partial start that never completed" in answer


@pytest.mark.parametrize("late, said", [(7, "worker-1 waited until 08:00:07:"),
                                        (None, "worker-1 was still waiting at the end:")])
def test_a_partial_start_says_a_wait_ended_or_goes_on_never_both(late: int | None, said: str) -> None:
    timeline = Timeline("gang", "sim", "sim", None, {}, (job("a", 3, late),), scheduler="default")
    outcome = gang_start(Context(timeline, "sim", True), GangStart("a", "partial"))
    assert outcome.verdict == CONSISTENT
    assert said in outcome.answer.en and "still waited" not in outcome.answer.en
    assert ("等到 08:00:07 才被调度" if late else "到结束仍在等待") in outcome.answer.zh
    assert not ("等到" in outcome.answer.zh and "仍在等待" in outcome.answer.zh)


def _held_carol(scheduler: str) -> Timeline:
    cells = (LeafCell("hostname-carol", 0), LeafCell("hostname-dan", 0))
    running = Attempt(pod_name="c-0", uid="c-0", task_role="train", task_index=0, created=mark(1), bound=mark(2),
                      node="hostname-carol", gpu_request=0)
    holder = JobTimeline("c", "c", None, "c", "default", attempts=(running,))
    return Timeline("gang", "sim", "sim", None, {"default": ("hostname-carol", "hostname-dan")}, (holder,),
                    vc_cells={"default": (VcShare("chain", 2, cells),)}, scheduler=scheduler)


def test_under_another_scheduler_a_gpu_on_a_node_a_pod_holds_is_not_free() -> None:
    _, free = free_cells(Context(_held_carol("kube-batch"), "sim", True), "default", 5)
    assert free == (LeafCell("hostname-dan", 0),)


@pytest.mark.parametrize("scheduler, said", [("kube-batch", "kube-batch"), ("default", "the default scheduler"),
                                             ("hived", "HiveD")])
def test_a_wait_reason_is_attributed_to_the_scheduler_of_the_run(scheduler: str, said: str) -> None:
    assert speaker(Context(_held_carol(scheduler), "sim", True)).en == said


def _k8s_gang(worker_1: Attempt) -> tuple[str, str]:
    first = Attempt(pod_name="a-worker-0", uid="a-0", task_role="worker", task_index=0, created=mark(1),
                    bound=mark(3), node="k8s-g3")
    timeline = Timeline("kubeflow-gang", "k8s", "k8s", None, {}, (JobTimeline("a", "a", None, "a", None,
                        attempts=(first, worker_1)),), scheduler="default")
    outcome = gang_start(Context(timeline, "k8s", True), GangStart("a", "partial"))
    return outcome.verdict, outcome.answer.en


def test_on_a_cluster_a_short_partial_start_is_one_if_a_task_waited_while_a_sibling_held_a_node() -> None:
    """The rehearsal cluster's sped-up jobs free a GPU within the 30 s a real cluster's round may take: a task still
    reported waiting seconds after its sibling was bound is a partial start all the same."""
    waits = (Wait(mark(3), "", "0/5 nodes are available: 5 Insufficient nvidia.com/gpu."),
             Wait(mark(6), "", "0/5 nodes are available: 5 Insufficient nvidia.com/gpu."))
    late = Attempt(pod_name="a-worker-1", uid="a-1", task_role="worker", task_index=1, created=mark(1), waits=waits,
                   bound=mark(10), node="k8s-g4")
    verdict, answer = _k8s_gang(late)
    assert verdict == CONSISTENT and "worker-1 waited until 08:00:10" in answer
    same_round = Attempt(pod_name="a-worker-1", uid="a-1", task_role="worker", task_index=1, created=mark(1),
                         waits=waits[:1], bound=mark(4), node="k8s-g4")  # its event recorded with the first bind
    verdict, answer = _k8s_gang(same_round)
    assert verdict == INCONSISTENT and "bound in one round" in answer


def test_a_wait_counts_at_the_events_own_time_not_when_the_log_saw_it() -> None:
    """kube-batch's throttled recorder delivered a gang's last `Unschedulable` seconds after the session that bound the
    whole gang (seen on the rehearsal: recorded at :38, lastTimestamp :35, bound at :36-:37): not a partial start."""
    delayed = Wait(mark(6), "", "0/4 nodes are available, 4 insufficient GPU.", observed=T0 + 2)
    gang = Attempt(pod_name="a-worker-1", uid="a-1", task_role="worker", task_index=1, created=mark(1),
                   waits=(delayed,), bound=mark(4), node="k8s-g4")
    verdict, answer = _k8s_gang(gang)
    assert verdict == INCONSISTENT and "bound in one round" in answer  # the rule expected a partial start
    still = Wait(mark(6), "", "0/4 nodes are available, 4 insufficient GPU.", observed=T0 + 6)
    verdict, _ = _k8s_gang(Attempt(pod_name="a-worker-1", uid="a-1", task_role="worker", task_index=1,
                                   created=mark(1), waits=(still,), bound=mark(8), node="k8s-g4"))
    assert verdict == CONSISTENT
    assert delayed.t == T0 + 2 and Wait(mark(6), "", "", observed=T0 + 9).t == T0 + 6  # never after the record


# -- the `while` premise: the question is asked while another job runs ---------------------------------------------
def _pod(job: str, index: int, created: int, bound: int | None, ended: int | None = None) -> Attempt:
    return Attempt(pod_name=f"{job}-worker-{index}", uid=f"{job}-{index}", task_role="worker", task_index=index,
                   created=mark(created), bound=mark(bound) if bound is not None else None,
                   node=f"node-{job}-{index}" if bound is not None else None,
                   terminated=mark(ended) if ended is not None else None)


def _beside(holder: tuple[Attempt, ...], second: tuple[Attempt, ...], source: str = "sim") -> tuple[str, str, Any]:
    jobs = (JobTimeline("h", "h", None, "h", None, attempts=holder),
            JobTimeline("j", "j", None, "j", None, attempts=second))
    outcome = gang_start(Context(Timeline("kubeflow-gang", source, source, None, {}, jobs, scheduler="default"),
                                 source, True), GangStart("j", "partial", "h"))
    return outcome.verdict, outcome.answer.en, outcome


HOLDS = (_pod("h", 0, 1, 2, 20), _pod("h", 1, 1, 3, 21))  # h holds its nodes from record 3 until record 20
NEVER = "the run never had j wait beside a running h, so it cannot show whether the scheduler starts it partially"


def test_a_partial_start_beside_the_running_job_is_judged_as_before() -> None:
    verdict, answer, _ = _beside(HOLDS, (_pod("j", 0, 5, 6), replace(_pod("j", 1, 5, 22), waits=(
        Wait(mark(6), "", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."),))))
    assert verdict == CONSISTENT and "worker-1 waited until 08:00:22: a partial start" in answer


@pytest.mark.parametrize(("holder", "second", "said", "cited"), [
    (HOLDS, (_pod("j", 0, 21, 23), _pod("j", 1, 22, 23)),
     "j's pods were created at 08:00:21 (record 21), after h's tasks had ended (the first at record 20, 08:00:20); "
     "its tasks were all bound at 08:00:23 (record 23)", (3, 20, 21, 23)),
    ((HOLDS[0], _pod("h", 1, 1, None)), (_pod("j", 0, 5, 6), _pod("j", 1, 5, 6)),
     "tasks worker-1 of h were never bound", (1,)),
    ((_pod("h", 0, 1, 2, 4), _pod("h", 1, 1, 5)), (_pod("j", 0, 3, 6), _pod("j", 1, 3, 7)),
     "h never held all its tasks' nodes at once: its tasks began to end at 08:00:04 (record 4), before its last task "
     "was bound at 08:00:05 (record 5)", (4, 5)),
    ((_pod("h", 0, 1, 8), _pod("h", 1, 1, 9)), (_pod("j", 0, 2, 3), _pod("j", 1, 2, 4)),
     "all tasks of j were bound at 08:00:04 (record 4), before h's tasks were all bound at 08:00:09 (record 9)",
     (4, 9)),
], ids=["created-after-its-end", "never-all-bound", "ended-before-all-bound", "bound-before-it"])
def test_without_the_job_running_beside_it_the_rule_cannot_tell(holder: tuple[Attempt, ...],
                                                                 second: tuple[Attempt, ...], said: str,
                                                                 cited: tuple[int, ...]) -> None:
    """The premise, in record order: max(h's last bind, j's first pod) < min(h's first end, j's last bind)."""
    verdict, answer, outcome = _beside(holder, second)
    assert verdict == INCONCLUSIVE
    assert answer == f"Cannot tell: {said}: {NEVER} while that job runs"  # no --speedup advice for the simulator
    assert outcome.evidence == cited and outcome.facts == {"premise": NEVER_BESIDE, "while": "h"}


def test_on_a_cluster_the_answer_says_a_smaller_speedup_gives_the_first_job_time() -> None:
    _, answer, outcome = _beside(HOLDS, (_pod("j", 0, 21, 23), _pod("j", 1, 22, 23)), source="k8s")
    assert answer.endswith("; a smaller --speedup on the rehearsal cluster gives that job time")
    assert outcome.answer.zh.endswith("；在演练集群上，更小的 --speedup 让该任务运行得更久")


def test_a_job_it_is_asked_beside_that_never_ran_is_named() -> None:
    timeline = Timeline("kubeflow-gang", "sim", "sim", None, {}, (job("j", 3, 3),), scheduler="default")
    outcome = gang_start(Context(timeline, "sim", True), GangStart("j", "partial", "h"))
    assert outcome.verdict == INCONCLUSIVE and "the plan's job 'h'" in outcome.answer.en
