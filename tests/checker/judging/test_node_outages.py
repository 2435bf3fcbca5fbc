"""Node faults in the timeline: a node's Ready condition changing during the log (the Node records the OpenPAI
backend's watcher writes) becomes an outage, and the pods it touched are those the evidence shows on the node
meanwhile or waiting with HiveD's reason naming it bad; nothing else."""

from __future__ import annotations

from pathlib import Path

from hivedlab.checker.judging.timeline import Timeline, bad_marks, build_timeline, on_node, touched
from hivedlab.evidence import read_evidence
from tests.support.paths import FIXTURES
from tests.support.scenario import Scenario

LOGS = FIXTURES / "logs"


def _timeline(name: str) -> Timeline:
    return build_timeline(read_evidence(LOGS / f"{name}.jsonl").records)


def _seq_of_node_record(name: str, ready: str) -> list[int]:
    return [r.seq for r in read_evidence(LOGS / f"{name}.jsonl").records if r.resource == "nodes"
            and r.object is not None and r.object["status"]["conditions"][0]["status"] == ready]


def test_a_node_not_ready_while_a_pod_runs_on_it_is_an_outage_that_touched_that_pod() -> None:
    timeline = _timeline("node-fault-pod-running")
    (outage,) = timeline.node_outages
    assert outage.node == "hostname-dan" and outage.status == "False" and outage.reason == "KubeletNotReady"
    assert outage.start is not None and outage.end is not None
    assert outage.start.seq == _seq_of_node_record("node-fault-pod-running", "False")[0]
    assert outage.end.seq == _seq_of_node_record("node-fault-pod-running", "True")[-1]  # after both nodes' lists
    assert outage.end.t - outage.start.t == 78.0
    pods = touched(outage, timeline.jobs)
    assert [(job.user, attempt.node) for job, attempt in pods] == [("bob", "hostname-dan")]
    assert on_node(outage, pods[0][1]) and not bad_marks(outage, (pods[0][1],))


def test_a_pod_bound_elsewhere_meanwhile_is_touched_only_by_hiveds_bad_node_reason() -> None:
    timeline = _timeline("node-fault-pod-elsewhere")
    (outage,) = timeline.node_outages
    pods = touched(outage, timeline.jobs)
    assert [(job.user, attempt.node) for job, attempt in pods] == [("bob", "hostname-carol")]
    attempt = pods[0][1]
    assert not on_node(outage, attempt)
    marks = bad_marks(outage, (attempt,))
    assert [wait.reason for _, wait in marks] == \
        ["have to use at least one bad node hostname-dan when scheduling in VC default"] * 2
    alice = next(job for job in timeline.jobs if job.user == "alice")
    assert not touched(outage, (alice,))


def test_nodes_that_stay_ready_make_no_outage() -> None:
    timeline = _timeline("node-fault-none")
    assert timeline.node_outages == ()
    assert [job.user for job in timeline.jobs] == ["alice", "bob"]


def test_a_node_not_ready_before_the_log_counts_only_once_it_turns_ready(tmp_path: Path) -> None:
    sc = Scenario(tmp_path / "log.jsonl")
    sc.at(0).plan("smoke")
    sc.node("hostname-carol", False, "LISTED")  # not Ready from the start: no change, no fault of this log
    sc.node("hostname-dan", False, "LISTED")
    sc.at(30).node("hostname-dan", True)
    sc.at(40).end()
    sc.close()
    timeline = build_timeline(read_evidence(tmp_path / "log.jsonl").records)
    (outage,) = timeline.node_outages
    assert outage.node == "hostname-dan" and outage.start is None and outage.end is not None


def test_a_node_still_not_ready_when_the_log_ends_has_an_open_outage(tmp_path: Path) -> None:
    sc = Scenario(tmp_path / "log.jsonl")
    sc.at(0).plan("smoke")
    sc.node("hostname-dan", True, "LISTED")
    sc.at(5).node("hostname-dan", False)
    sc.at(6).node("hostname-dan", False)  # the same state again (a re-list): still the one outage
    sc.at(9).end()
    sc.close()
    timeline = build_timeline(read_evidence(tmp_path / "log.jsonl").records)
    (outage,) = timeline.node_outages
    assert timeline.first is not None and outage.start is not None
    assert outage.start.t - timeline.first.t == 5.0 and outage.end is None
