"""Cordons in the timeline: a node's `spec.unschedulable` set or cleared during the log (the Node records the OpenPAI
backend's watcher writes) becomes a `Cordon`, by the rule of the Ready outages: a node cordoned from its first record
to the end of the log is none of the log's. A cordon and a NotReady outage are separate facts, and the pods a cordon
touched are found as an outage's are."""

from __future__ import annotations

from pathlib import Path

from hivedlab.checker.judging.timeline import Timeline, bad_marks, build_timeline, on_node, touched
from hivedlab.evidence import read_evidence
from tests.support.scenario import Scenario

DAN, CAROL = "hostname-dan", "hostname-carol"
BAD_DAN = f"have to use at least one bad node {DAN} when scheduling in VC default"


def _timeline(sc: Scenario) -> Timeline:
    sc.close()
    return build_timeline(read_evidence(sc.writer.path).records)


def _started(tmp_path: Path) -> Scenario:
    sc = Scenario(tmp_path / "log.jsonl")
    sc.at(0).plan("smoke")
    sc.config("one-vc")
    sc.node(CAROL, True, "LISTED")
    sc.node(DAN, True, "LISTED")
    return sc


def test_a_node_cordoned_and_uncordoned_while_a_pod_runs_on_it_is_a_cordon_that_touched_that_pod(
        tmp_path: Path) -> None:
    sc = _started(tmp_path)
    bob = sc.at(1).submit("bob", "single", "job-smoke-test", "default", "prod")
    sc.pod_add(bob, 0)
    sc.at(2).pod_bind(bob, 0, DAN)
    sc.at(3).pod_run(bob, 0)
    sc.at(10).node(DAN, True, cordoned=True)
    sc.at(40).node(DAN, True)
    sc.at(50).pod_exit(bob, 0)
    sc.at(51).end()
    timeline = _timeline(sc)
    (cordon,) = timeline.node_cordons
    assert timeline.node_outages == ()  # Ready throughout: a cordon is no NotReady
    assert cordon.node == DAN and cordon.start is not None and cordon.end is not None
    assert timeline.first is not None
    assert (cordon.start.t - timeline.first.t, cordon.end.t - timeline.first.t) == (10.0, 40.0)
    pods = touched(cordon, timeline.jobs)
    assert [(job.user, attempt.node) for job, attempt in pods] == [("bob", DAN)]
    assert on_node(cordon, pods[0][1]) and not bad_marks(cordon, (pods[0][1],))


def test_a_node_cordoned_from_its_first_record_on_is_no_cordon_of_the_log(tmp_path: Path) -> None:
    sc = Scenario(tmp_path / "log.jsonl")
    sc.at(0).plan("smoke")
    sc.node(DAN, True, "LISTED", cordoned=True)
    sc.at(5).node(DAN, False, cordoned=True)  # NotReady meanwhile: an outage, the cordon unchanged
    sc.at(9).node(DAN, True, cordoned=True)
    sc.at(12).end()
    timeline = _timeline(sc)
    assert timeline.node_cordons == ()
    (outage,) = timeline.node_outages
    assert outage.node == DAN and outage.start is not None and outage.end is not None


def test_a_node_cordoned_before_the_log_counts_once_it_is_uncordoned(tmp_path: Path) -> None:
    sc = Scenario(tmp_path / "log.jsonl")
    sc.at(0).plan("smoke")
    sc.node(DAN, True, "LISTED", cordoned=True)
    sc.at(30).node(DAN, True)
    sc.at(40).end()
    (cordon,) = _timeline(sc).node_cordons
    assert cordon.node == DAN and cordon.start is None and cordon.end is not None


def test_a_node_still_cordoned_when_the_log_ends_has_an_open_cordon(tmp_path: Path) -> None:
    sc = _started(tmp_path)
    sc.at(5).node(DAN, True, cordoned=True)
    sc.at(6).node(DAN, False, cordoned=True)  # NotReady too: the cordon goes on as one
    sc.at(7).node(DAN, True, cordoned=True)
    sc.at(9).end()
    timeline = _timeline(sc)
    (cordon,) = timeline.node_cordons
    assert timeline.first is not None and cordon.start is not None
    assert cordon.start.t - timeline.first.t == 5.0 and cordon.end is None
    (outage,) = timeline.node_outages
    assert outage.start is not None and outage.end is not None
    assert (outage.start.t - timeline.first.t, outage.end.t - timeline.first.t) == (6.0, 7.0)


def test_hiveds_bad_node_waits_during_a_cordon_are_marks_of_it_and_none_after(tmp_path: Path) -> None:
    sc = _started(tmp_path)
    sc.at(10).node(DAN, True, cordoned=True)
    bob = sc.at(12).submit("bob", "single", "job-smoke-test", "default", "prod")
    sc.pod_add(bob, 0)
    sc.at(13).pod_wait(bob, 0, BAD_DAN)
    sc.at(20).pod_wait(bob, 0, BAD_DAN)
    sc.at(30).node(DAN, True)
    sc.at(31).pod_wait(bob, 0, BAD_DAN)  # after the uncordon: not the cordon's
    sc.at(32).pod_bind(bob, 0, CAROL)
    sc.at(33).end()
    timeline = _timeline(sc)
    (cordon,) = timeline.node_cordons
    (attempt,) = next(job for job in timeline.jobs if job.user == "bob").attempts
    assert not on_node(cordon, attempt)
    assert timeline.first is not None
    assert [wait.mark.t - timeline.first.t for _, wait in bad_marks(cordon, (attempt,))] == [13.0, 20.0]
