"""The one table of scheduler messages (hivedlab.models.scheduler_messages): every text the schedulers' models
produce is classified from the models' own words, a transient HiveD error is never a wait, and an unknown message is
named instead of guessed (forged logs: honest simulator logs edited and re-sealed, tests/support/forge.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from hivedlab.models import scheduler_messages as table
from hivedlab.models.hived import messages as hived
from hivedlab.models.schedulers import default, kube_batch
from hivedlab.models.schedulers.resources import Resources
from tests.support import forge

TRANSIENT_ERROR = f"Code: 400, Message: {hived.POD_NOT_INFORMED}"


@pytest.mark.parametrize(("message", "kind"), [
    (f"0/3 nodes are available: 1 {hived.WAIT_PREFIX} "
     f"{hived.in_vc(hived.INSUFFICIENT_CAPACITY, 'vc1')}, 2 node(s) didn't match node selector.", table.VC_QUOTA),
    (f"1 {hived.WAIT_PREFIX} {hived.in_physical_cluster(hived.INSUFFICIENT_CAPACITY)}", table.CAPACITY),
    (hived.WAIT_WITHOUT_REASON, table.CAPACITY),
    (f"{hived.WAIT_PREFIX} {hived.in_vc(hived.bad_node('0/hostname-dan'), 'vc1')}", table.BAD_NODES),
    (f"{hived.WAIT_PREFIX} {hived.in_vc(hived.non_suggested_node('hostname-dan'), 'vc1')}", table.BAD_NODES),
    (f"{hived.WAIT_PREFIX} {hived.mapping_needs_bad_node(True, '{}')}", table.BAD_NODES),
    (f"0/3 nodes are available: 1 {hived.preemptible_pods('hostname-carol', 'u1(default/p)')}.", table.PREEMPTION),
    (TRANSIENT_ERROR, table.TRANSIENT),
    (f"Code: 400, Message: {hived.ALREADY_BOUND} hostname-dan", table.TRANSIENT),
    ("skip schedule deleting pod: default/u1-0", table.TRANSIENT),  # a stopped job's waiting pod: never a wait
    (hived.user_error("[u(default/p)]: filterRoutine: Failed: ", "Pod requesting leaf cell type X"), table.REFUSED),
    (default.fit_error(["Insufficient nvidia.com/gpu", "Insufficient nvidia.com/gpu"], 2), table.CAPACITY),
    (kube_batch.fit_error({"hostname-carol": Resources(0, 0, -1)}), table.CAPACITY),
    (kube_batch.fit_error({}), table.CAPACITY),
    ("Not enough valid tasks for gang-scheduling, valid: 1, min: 3", table.GANG),
    ("3/4 tasks in gang unschedulable: 0/2 nodes are available, 2 insufficient GPU.", table.GANG),
    ("0/3 nodes are available: 3 node(s) didn't match node selector.", table.UNKNOWN),
    ("something no scheduler says", table.UNKNOWN),
])
def test_each_class_from_the_schedulers_own_words(message: str, kind: str) -> None:
    assert table.classify(message) == kind


def _event_records(records: list[forge.Rec]) -> list[forge.Rec]:
    return [r for r in records if (r.get("watch") or {}).get("resource") == "events"
            and r["watch"]["object"].get("reason") == "FailedScheduling"]


def _first_bound_without_wait(records: list[forge.Rec]) -> tuple[int, forge.Rec]:
    """The index of the first record binding a pod that never waited, and that pod."""
    waited = {r["watch"]["object"]["involvedObject"]["uid"] for r in _event_records(records)}
    for index, record in enumerate(records):
        obj = forge.pod(record)
        if obj and obj["spec"].get("nodeName") and obj["metadata"]["uid"] not in waited:
            return index, obj
    raise AssertionError("every pod waited")


def _transient_event_for(records: list[forge.Rec], pod: forge.Rec) -> forge.Rec:
    """A FailedScheduling event for `pod` carrying HiveD's informer-lag error, shaped as the log's own events."""
    event = copy.deepcopy(_event_records(records)[0])
    obj = event["watch"]["object"]
    obj["involvedObject"].update(name=pod["metadata"]["name"], uid=pod["metadata"]["uid"])
    obj["metadata"].update(name=pod["metadata"]["name"] + ".transient", uid="transient-event-uid")
    obj["message"] = TRANSIENT_ERROR
    return event


def test_a_transient_hived_error_before_a_bind_is_not_a_wait(cli, tmp_path: Path) -> None:
    """Defect seen on the real stack: the first pod's filter call met HiveD's informer lag, then bound within the
    second; vc-safety called it a wait for the wrong reason and the run inconsistent."""
    records = forge.load("from-simulator-vc-safety.jsonl")
    before = forge.check(cli, forge.write(tmp_path / "honest.jsonl", records))
    assert before["verdict"] == "consistent"
    index, pod = _first_bound_without_wait(records)
    records.insert(index, _transient_event_for(records, pod))
    data = forge.check(cli, forge.write(tmp_path / "transient.jsonl", records))
    assert data["verdict"] == "consistent", json.dumps(data, ensure_ascii=False)
    answer = forge.answer(data, "waits-not-borrowing")
    assert answer["answer"] == forge.answer(before, "waits-not-borrowing")["answer"]
    assert hived.POD_NOT_INFORMED not in json.dumps(answer, ensure_ascii=False)


def test_a_real_wait_for_another_reason_is_still_inconsistent(cli, tmp_path: Path) -> None:
    records = forge.load("from-simulator-vc-safety.jsonl")
    wrong = hived.in_physical_cluster(hived.INSUFFICIENT_CAPACITY)
    for record in _event_records(records):
        message = record["watch"]["object"]["message"]
        record["watch"]["object"]["message"] = message.replace(hived.in_vc(hived.INSUFFICIENT_CAPACITY, "vc1"), wrong)
    data = forge.check(cli, forge.write(tmp_path / "log.jsonl", records))
    answer = forge.answer(data, "waits-not-borrowing")
    assert answer["verdict"] == "inconsistent"
    assert "did not wait for 'insufficient capacity when scheduling in VC vc1'" in answer["answer"]["en"]


def test_an_unknown_message_is_named_not_guessed(cli, tmp_path: Path) -> None:
    records = forge.load("from-simulator-vc-safety.jsonl")
    taints = "0/3 nodes are available: 3 node(s) had taints that the pod didn't tolerate."
    for record in _event_records(records):
        record["watch"]["object"]["message"] = taints
    data = forge.check(cli, forge.write(tmp_path / "log.jsonl", records))
    answer = forge.answer(data, "waits-not-borrowing")
    assert answer["verdict"] == "inconclusive"
    assert "a message hivedlab does not know: '0/3 nodes are available: 3 node(s) had taints" in answer["answer"]["en"]
    assert "hivedlab 不认识的消息" in answer["answer"]["zh"]


def _messages(folder: Path) -> set[str]:
    found = set()
    for log in folder.rglob("evidence.jsonl"):
        for line in log.read_text(encoding="utf-8").splitlines():
            obj = ((json.loads(line).get("watch") or {}).get("object")) or {}
            if obj.get("kind") == "Event" and obj.get("reason") in ("FailedScheduling", "Unschedulable"):
                found.add(obj["message"])
    return found


def test_every_message_of_the_simulated_lab_is_known(sim_lab) -> None:
    messages = _messages(sim_lab.out)
    assert messages
    assert {m: table.classify(m) for m in messages if table.classify(m) == table.UNKNOWN} == {}


def test_every_message_of_the_contrast_runs_is_known(cli, tmp_path: Path) -> None:
    for args in (("kubeflow-gang",), ("gang", "--scheduler", "kube-batch"), ("gang", "--scheduler", "default")):
        result = cli("run", *args, "--out", str(tmp_path / "out"), "--no-report", "--replace")
        assert result.code == 0, result.err
    messages = _messages(tmp_path / "out")
    assert any(table.classify(m) == table.GANG or "insufficient GPU" in m for m in messages)
    assert {m: table.classify(m) for m in messages if table.classify(m) == table.UNKNOWN} == {}


def _unknown_waits(name: str) -> list[forge.Rec]:
    records = forge.load(name)
    for record in _event_records(records):
        record["watch"]["object"]["message"] = "0/3 nodes are available: 3 node(s) had volume node affinity conflict."
    return records


def test_gang_and_incremental_rules_quote_an_unknown_message_too(cli, tmp_path: Path) -> None:
    """The rules that expect a wait reason say they cannot tell why, quoting the message, instead of judging it."""
    for name, rule in (("from-simulator-gang.jsonl", "gang-waits"),
                       ("from-simulator-incremental.jsonl", "tasks-one-after-another")):
        data = forge.check(cli, forge.write(tmp_path / name, _unknown_waits(name)))
        answer = forge.answer(data, rule)
        assert answer["verdict"] == "inconclusive", (rule, answer["answer"]["en"])
        assert "a message hivedlab does not know: '0/3 nodes are available: 3 node(s) had volume node affinity" \
               in answer["answer"]["en"]
        assert "hivedlab 不认识的消息" in answer["answer"]["zh"]
