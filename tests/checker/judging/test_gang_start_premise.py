"""kubeflow-gang's question 0 is asked while the first job runs (`while: job1` on both gang-start rules,
src/hivedlab/checker/judging/rules/contrast.py). Judged on the recorded rehearsal logs, edited and re-sealed
(tests/support/gang_premise.py): when the second job's pods appear only after the first job's workers ended and then
bind in one round, as on a rehearsal cluster sped up so far that the first job's training was over (seen live), the
run says nothing about gang scheduling: both rules are inconclusive, saying so and citing the records, where before
the default scheduler was called inconsistent ("all or nothing") and kube-batch consistent. Beside a running first
job the same round is judged as before: all or nothing, consistent for kube-batch, inconsistent for the default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hivedlab.checker.judging.judge import judge_file
from hivedlab.checker.judging.rules.contrast import NEVER_BESIDE
from hivedlab.checker.judging.verdicts import Answer
from tests.checker.judging.wrong_logs import relabel
from tests.support import forge
from tests.support.gang_premise import JOB1, JOB2, recorded, second_job

RULE = {"default": "partial-start", "kube-batch": "all-or-nothing"}
TAG = "alice-kubeflow-gang-20261129t044425"
FIRST, SECOND = f"alice's tfjob-gang-1-{TAG}", f"alice's tfjob-gang-2-{TAG}"
FIRST_ZH, SECOND_ZH = f"alice 的 tfjob-gang-1-{TAG}", f"alice 的 tfjob-gang-2-{TAG}"
PREMISE = {
    "en": f": the run never had {SECOND} wait beside a running {FIRST}, so it cannot show whether the scheduler starts "
          "it partially while that job runs; a smaller --speedup on the rehearsal cluster gives that job time",
    "zh": f"：这次运行中 {SECOND_ZH} 从未在 {FIRST_ZH} 运行时等待，无法说明调度器在该任务运行期间是否部分启动它；"
          "在演练集群上，更小的 --speedup 让该任务运行得更久",
}


def _judged(tmp_path: Path, scheduler: str, how: str | None, judged_as: str | None = None) -> tuple[Answer, Path]:
    """The gang-start answer on the recorded log of `scheduler` (edited as `how` says; relabelled `judged_as`)."""
    records = recorded(scheduler) if how is None else second_job(recorded(scheduler), how)
    if judged_as is not None:
        records = relabel(judged_as)(records)
    log = forge.write(tmp_path / "evidence.jsonl", records)
    verdict = judge_file(log)
    assert verdict.log.chain_ok, verdict.log.warnings
    return next(a for a in verdict.answers if a.rule == RULE[judged_as or scheduler]), log


def _records(log: Path) -> dict[int, forge.Rec]:
    return {r["seq"]: r for r in map(json.loads, log.read_text(encoding="utf-8").splitlines())}


def _pod(record: forge.Rec) -> tuple[str, str, str]:
    """(pod name, phase, node) of a pod record."""
    obj = forge.pod_of(record)
    return obj["metadata"]["name"], obj["status"].get("phase", ""), obj["spec"].get("nodeName") or ""


@pytest.mark.parametrize("scheduler", ["default", "kube-batch"])
def test_a_second_job_placed_only_after_the_first_ended_cannot_tell(tmp_path: Path, scheduler: str) -> None:
    answer, log = _judged(tmp_path, scheduler, "after")
    assert answer.verdict == "inconclusive", answer.answer.en
    assert answer.facts == {"premise": NEVER_BESIDE, "while": "job1"}
    records = _records(log)
    bound1, ended1, created2, bound2 = (records[seq] for seq in answer.evidence)  # the four records it cites
    assert _pod(bound1)[0].startswith(JOB1) and _pod(bound1)[2]  # the first job's last bind
    assert _pod(ended1)[0].startswith(JOB1 + TAG + "-worker-") and _pod(ended1)[1] == "Succeeded"
    assert created2["watch"]["type"] == "ADDED" and _pod(created2)[0].startswith(JOB2) and not _pod(created2)[2]
    assert _pod(bound2)[0].startswith(JOB2) and _pod(bound2)[2]
    clock = {seq: records[seq]["time"][11:19] for seq in answer.evidence}
    c, e, b = answer.evidence[2], answer.evidence[1], answer.evidence[3]
    assert answer.answer.en == (
        f"Cannot tell: {SECOND}'s pods were created at {clock[c]} (record {c}), after {FIRST}'s tasks had ended (the "
        f"first at record {e}, {clock[e]}); its tasks were all bound at {clock[b]} (record {b})" + PREMISE["en"])
    assert answer.answer.zh == (
        f"无法判断：{SECOND_ZH} 的 Pod 在 {clock[c]}（第 {c} 条记录）才被创建，此时 {FIRST_ZH} 的子任务已经结束"
        f"（最早在第 {e} 条记录，{clock[e]}）；其子任务在 {clock[b]}（第 {b} 条记录）全部被调度" + PREMISE["zh"])
    assert [m.en for m in answer.missing] == [answer.answer.en.removeprefix("Cannot tell: ")]


@pytest.mark.parametrize(("scheduler", "how", "judged_as", "verdict"), [
    ("kube-batch", None, None, "consistent"),  # as recorded: job2 waited whole beside job1, then bound in one round
    ("kube-batch", "beside", None, "consistent"),
    ("default", "beside", "kube-batch", "consistent"),  # the default's log, every pod waiting beside job1
    ("default", "beside", None, "inconsistent"),  # a default scheduler acting as a gang beside a running job1
])
def test_a_second_job_bound_whole_after_waiting_beside_the_first_is_all_or_nothing(
        tmp_path: Path, scheduler: str, how: str | None, judged_as: str | None, verdict: str) -> None:
    answer, _ = _judged(tmp_path, scheduler, how, judged_as)
    assert answer.verdict == verdict, answer.answer.en
    assert answer.answer.en.endswith(", all waiting before: all or nothing.") and not answer.facts


def test_the_recorded_default_run_is_a_partial_start_beside_the_first_job(tmp_path: Path) -> None:
    answer, _ = _judged(tmp_path, "default", None)
    assert answer.verdict == "consistent" and "worker-1 waited until 04:44:37: a partial start" in answer.answer.en
