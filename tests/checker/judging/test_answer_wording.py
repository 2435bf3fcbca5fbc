"""How the verdicts word what the evidence shows: whichever way the incremental job's second task went, the answer
says that; a consistent answer carries a one-sentence summary for the report's results table."""

from __future__ import annotations

import json

import pytest

from tests.support.paths import FIXTURES

LOGS = FIXTURES / "logs"


def _answers(cli, log: str) -> dict[str, dict]:
    result = cli("check", str(LOGS / log), "--format", "json")
    return {a["rule"]: a for a in json.loads(result.out)["answers"]}


def test_the_second_task_that_ran_on_the_freed_gpu_is_said_to_have_run_after_waiting(cli):
    answer = _answers(cli, "incremental-second-task-later.jsonl")["tasks-one-after-another"]
    assert "Task 0 did not wait for the whole job" in answer["answer"]["en"]
    assert "task 1 waited for a free GPU" in answer["answer"]["en"]
    assert "the one alice's job-config-5-alice-1 freed" in answer["answer"]["en"]  # the holder's own node
    assert "The tasks ran one after the other" in answer["answer"]["en"] and "never ran" not in answer["answer"]["en"]
    assert "1 号子任务等待空闲的 GPU" in answer["answer"]["zh"] and "子任务先后运行" in answer["answer"]["zh"]


def test_the_second_task_that_never_ran_is_not_said_to_have_run_one_after_the_other(cli):
    answer = _answers(cli, "incremental-consistent.jsonl")["tasks-one-after-another"]
    assert "never ran" in answer["answer"]["en"] and "minSucceededInstances: 1" in answer["answer"]["en"]
    assert "one after the other" not in answer["answer"]["en"]
    assert "子任务先后运行" not in answer["answer"]["zh"] and "从未运行" in answer["answer"]["zh"]
    assert "never ran" in answer["summary"]["en"] and "从未运行" in answer["summary"]["zh"]


@pytest.mark.parametrize("log", ["from-simulator-priority.jsonl", "from-simulator-opportunistic.jsonl",
                                 "from-simulator-gang.jsonl", "from-simulator-incremental.jsonl"])
def test_consistent_answers_of_the_reworded_rules_have_one_sentence_summaries(cli, log):
    for rule, answer in _answers(cli, log).items():
        if answer["kind"] == "placement" or answer["kind"].startswith(("waits", "sequential")):
            continue  # rules/vc.py: the report takes the answer's first statement
        summary = answer["summary"]
        assert summary["zh"].count("。") == 1 and summary["zh"].endswith("。"), (rule, summary["zh"])
        assert summary["en"].endswith(".") and len(summary["en"]) < len(answer["answer"]["en"]), rule


@pytest.mark.parametrize("layout", ["manual", "mixed"])
def test_a_second_task_that_took_the_gpu_its_sibling_freed_ran_after_it_not_with_it(cli, tmp_path, layout):
    """The rehearsal cluster's records: task 1 waited, took the GPU task 0 freed while job-config-5 still ran, and
    was stopped when the job succeeded. The answer said "all tasks started at once". In the mixed layout's record it
    was started and stopped in the same second (the job succeeded when task 0 ended): the answer said it "ran" and
    that the tasks ran "one after the other", which the timeline does not show."""
    import gzip

    log = tmp_path / "evidence.jsonl"
    log.write_bytes(gzip.decompress((FIXTURES / "stream-pairs" / layout / "incremental" / "rehearsal.jsonl.gz")
                                    .read_bytes()))
    result = cli("check", str(log), "--experiment", "incremental", "--format", "json")
    answer = {a["rule"]: a for a in json.loads(result.out)["answers"]}["tasks-one-after-another"]
    en, zh = answer["answer"]["en"], answer["answer"]["zh"]
    assert answer["verdict"] == "consistent"
    assert "which task 0 freed when it ended" in en and "at once" not in en
    assert "FrameworkController stopped it because" in en
    if layout == "manual":  # task 1 ran for a while before the stop
        assert "and ran from 00:34:00" in en and "The tasks ran one after the other" in en
        assert "ran on the one the first freed" in answer["summary"]["en"] and "先后运行" in answer["summary"]["zh"]
        return
    assert "was started at 01:00:42 on hostname-dan (GPU 0), which task 0 freed when it ended at 01:00:42, and " \
        "stopped in the same second: FrameworkController stopped it because" in en
    assert "ran from" not in en and "one after the other" not in en + answer["summary"]["en"]
    assert "于 01:00:42 在它释放的 hostname-dan (GPU 0) 上启动，并在同一秒停止" in zh and "先后运行" not in zh
    assert answer["summary"]["en"].endswith("was started on the one the first freed and stopped in the same second: "
                                            "the tasks did not run together.")
    assert "同一秒就停止了" in answer["summary"]["zh"] and "先后运行" not in answer["summary"]["zh"]
