"""The four rules that expect a wait reason (`rule_base.waited_for`): a wait the scheduler explained with another
known reason is inconsistent; the expected reason inside the scheduler's longer message is what it said."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.checker.judging.rules.rule_base import waited_for
from tests.support import forge

EXPECTED = "insufficient capacity when scheduling in "
CASES = [  # log, rule id, where the honest log's waits say they ran out of capacity, what the answer then says
    ("from-simulator-gang.jsonl", "gang-waits", "VC default", ", not 'insufficient capacity"),
    ("from-simulator-incremental.jsonl", "tasks-one-after-another", "VC default", ", not for 'insufficient capacity"),
    ("from-simulator-priority.jsonl", "low-retried-after-high", "VC vc1", "It did not wait for 'insufficient"),
    ("from-simulator-opportunistic.jsonl", "oppo-waits-for-any-gpu", "physical cluster",
     "It did not wait for 'insufficient"),
    ("from-simulator-vc-safety.jsonl", "waits-not-borrowing", "VC vc1", "did not wait for 'insufficient"),
]


def _elsewhere(records: list[forge.Rec], where: str) -> list[forge.Rec]:
    """Every FailedScheduling event says the pod ran out of capacity in a VC no plan has."""
    edited = 0
    for record in records:
        watch = record.get("watch") or {}
        event = watch.get("object") or {}
        if watch.get("resource") == "events" and event.get("reason") == "FailedScheduling":
            event["message"] = event["message"].replace(EXPECTED + where, EXPECTED + "VC nowhere")
            edited += 1
    assert edited
    return records


@pytest.mark.parametrize(("log", "rule", "where", "says"), CASES)
def test_a_wait_for_another_reason_is_inconsistent(cli, tmp_path: Path, log: str, rule: str, where: str,
                                                   says: str) -> None:
    honest = forge.answer(forge.check(cli, forge.write(tmp_path / "honest.jsonl", forge.load(log))), rule)
    assert honest["verdict"] == "consistent", honest["answer"]["en"]
    edited = forge.write(tmp_path / "elsewhere.jsonl", _elsewhere(forge.load(log), where))
    answer = forge.answer(forge.check(cli, edited), rule)
    assert answer["verdict"] == "inconsistent", answer["answer"]["en"]
    assert says in answer["answer"]["en"] and EXPECTED + where in answer["answer"]["en"]


def test_waited_for() -> None:
    message = "0/3 nodes are available: 1 Pod is waiting: insufficient capacity when scheduling in VC vc1."
    assert waited_for("", []) and waited_for("", ["anything"])
    assert waited_for(EXPECTED + "VC vc1", ["other", message])
    assert not waited_for(EXPECTED + "VC vc1", [message.replace("vc1", "vc2")])
    assert not waited_for(EXPECTED + "VC vc1", [])
