"""Timelines from hand-made real-cluster logs: attempts, re-created pods, early events, duplicates, skew."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from hivedlab.basics.text import Text
from hivedlab.checker.judging.timeline import build_timeline, framework_name, hived_reason, vc_nodes_from_config
from hivedlab.checker.judging.timeline.builder import _changed
from hivedlab.checker.judging.timeline.facts import Attempt, Mark
from hivedlab.evidence import read_evidence
from tests.support.paths import FIXTURES
from tests.support.records import object_of

LOGS = FIXTURES / "logs"


def _timeline(name: str, **kwargs):
    return build_timeline(read_evidence(LOGS / name).records, **kwargs)


def test_framework_name_is_md5_of_user_job() -> None:
    assert framework_name("admin", "job-config-0") == "13c3e7e8cfac2009119395723466e92a"
    assert framework_name("unknownuser", "x") == "unknownuserx"


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("0/3 nodes are available: 1 Pod is waiting for preemptible or free resource to appear: insufficient capacity "
         "when scheduling in VC vc1, 2 node(s) didn't match node selector.",
         "insufficient capacity when scheduling in VC vc1"),
        ("0/2 nodes are available: 2 Pod is waiting for preemptible or free resource to appear: have to use at least "
         "one bad node 1/10.151.41.26 when scheduling in VC vc1.",
         "have to use at least one bad node 1/10.151.41.26 when scheduling in VC vc1"),
        ("hivedscheduler: User Error: VC vc9 does not exists!", "hivedscheduler: User Error: VC vc9 does not exists!"),
    ],
    ids=["aggregated", "dotted-address", "user-error"],
)
def test_hived_reason(message: str, reason: str) -> None:
    assert hived_reason(message) == reason


def test_vc_nodes_of_the_lab_configs() -> None:
    two = (LOGS / "two-vc.yaml").read_text(encoding="utf-8")
    one = (LOGS / "one-vc.yaml").read_text(encoding="utf-8")
    assert vc_nodes_from_config(two) == {"default": ("hostname-carol",), "vc1": ("hostname-dan",)}
    assert vc_nodes_from_config(one) == {"default": ("hostname-carol", "hostname-dan")}
    assert vc_nodes_from_config("- not: [a config") == {}


def test_preempted_pod_recreated_with_same_name_new_uid() -> None:
    timeline = _timeline("priority-consistent.jsonl")
    low = timeline.jobs_for("low")[0]
    first, retry = low.attempts
    assert first.pod_name == retry.pod_name and first.uid != retry.uid
    assert first.outcome == "preempted" and first.fc_exit_code == -101
    assert (first.preempted_by and first.preempted_by.startswith("by default/")
            and first.preempted_by.endswith("hostname-dan"))
    assert retry.outcome == "succeeded" and retry.node == "hostname-dan" and retry.gpus == (0,)
    assert low.state == "SUCCEEDED" and low.framework_attempt_codes == ((0, -101), (1, 0))


def test_event_before_its_pod_is_attached() -> None:
    retry = _timeline("priority-consistent.jsonl").jobs_for("low")[0].attempts[1]
    # the first FailedScheduling record precedes the pod's ADDED record
    assert retry.waits and retry.waits[0].mark.seq < retry.created.seq
    assert retry.waits[0].reason == "insufficient capacity when scheduling in VC vc1"


def test_a_wait_keeps_the_events_own_time(tmp_path: Path) -> None:
    """lastTimestamp (or an events.k8s.io series' lastObservedTime): what a rule compares with the binds, since a
    throttled scheduler's event may reach the log later than it happened."""
    from tests.support.scenario import Scenario

    retry = _timeline("priority-consistent.jsonl").jobs_for("low")[0].attempts[1]
    assert retry.waits[0].observed == retry.waits[0].mark.t == retry.waits[0].t  # this log's events are on time
    sc = Scenario(tmp_path / "late.jsonl")
    sc.plan("gang")
    job = sc.submit("alice", "gang", "job-config-6", "default", "test")
    pod = sc.pod_add(job, 0)
    said = sc.event(pod, "FailedScheduling", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.", "Warning")
    late = dict(said, metadata=dict(said["metadata"], resourceVersion="late"), count=2)
    late["series"] = {"count": 1, "lastObservedTime": said["lastTimestamp"]}
    sc.at(3).raw_object("MODIFIED", "events", late)  # the repeat reaches the log 3 s after it was observed
    sc.close()
    (attempt,) = build_timeline(read_evidence(tmp_path / "late.jsonl").records).jobs[0].attempts
    first, repeat = attempt.waits
    assert repeat.mark.t - repeat.t == pytest.approx(3.0, abs=1.0) and repeat.t == first.t


def test_only_events_of_this_logs_time_count_as_pods_never_seen(tmp_path: Path) -> None:
    """A watch's first list replays the events of earlier experiments' pods (e.g. the smoke test's): they happened
    before the log began and are no pod of this log; an event during the log for a pod it never shows is noted."""
    from tests.support.scenario import Scenario

    sc = Scenario(tmp_path / "replayed.jsonl")
    sc.plan("gang")
    job = sc.submit("alice", "gang", "job-config-6", "default", "test")
    pod = sc.pod_add(job, 0)
    said = sc.event(pod, "FailedScheduling", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.", "Warning")
    old = dict(said, metadata=dict(said["metadata"], uid="old-event", resourceVersion="1"),
               involvedObject=dict(said["involvedObject"], uid="smoke-pod-uid", name="smoke-pod"),
               lastTimestamp="2020-01-01T00:00:00Z")
    sc.raw_object("ADDED", "events", old)
    sc.close()
    assert build_timeline(read_evidence(sc.writer.path).records).notes == ()

    sc = Scenario(tmp_path / "stranger.jsonl")
    sc.plan("gang")
    job = sc.submit("alice", "gang", "job-config-6", "default", "test")
    pod = sc.pod_add(job, 0)
    said = sc.event(pod, "FailedScheduling", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.", "Warning")
    now = dict(said, metadata=dict(said["metadata"], uid="new-event", resourceVersion="9"),
               involvedObject=dict(said["involvedObject"], uid="stranger-uid", name="stranger"))
    sc.raw_object("ADDED", "events", now)
    sc.close()
    notes = build_timeline(read_evidence(sc.writer.path).records).notes
    assert notes == (Text("1 个 Pod 有事件，却从未出现在日志中", "1 pod(s) had events but never appeared in the log"),)


def test_watch_restart_redelivery_changes_nothing() -> None:
    timeline = _timeline("vc-safety-consistent.jsonl")
    assert [len(job.attempts) for job in timeline.jobs] == [1, 1]
    bob = timeline.jobs[1]
    assert bob.user == "bob" and len(bob.attempts[0].waits) == 2


def test_clock_skew_does_not_reorder() -> None:
    alice = _timeline("vc-safety-consistent.jsonl").jobs[0].attempts[0]
    # kubelet on Dan's node reports 3 s ahead; the record time is the watcher's
    assert alice.started.time == "2026-03-02T08:00:20.000000Z" and alice.started_at == "2026-03-02T08:00:23Z"


def test_rejected_submission_leaves_no_pod() -> None:
    over = _timeline("incremental-consistent.jsonl").jobs_for("over-gang")[0]
    assert over.state == "REJECTED" and over.attempts == ()
    assert over.submissions[0].status == 400 and "exceeds maximum 2 SKUs" in over.submissions[0].message


def test_second_task_never_ran_because_job_succeeded() -> None:
    job = _timeline("incremental-consistent.jsonl").jobs_for("elastic")[0]
    task0, task1 = job.attempts
    assert task0.outcome == "succeeded" and task1.outcome == "deleted" and task1.started is None
    assert job.state == "SUCCEEDED" and job.exit_code == 0


def test_watch_only_log_maps_jobs_by_protocol_name() -> None:
    timeline = _timeline("watch-only-priority.jsonl", job_names={"job-config-1": "low", "job-config-2": "high"})
    assert {job.job_key for job in timeline.jobs} == {"low", "high"}
    assert timeline.experiment is None and timeline.jobs_for("high")[0].submitted is not None


def test_attempt_fields_for_charts() -> None:
    job = _timeline("gang-consistent.jsonl").jobs_for("gang")[0]
    rows = [(a.task_index, a.node, a.gpus, a.outcome, a.started.time, a.ended.time) for a in job.attempts]
    assert rows == [
        (0, "hostname-carol", (0,), "succeeded", "2026-03-02T08:06:50.000000Z", "2026-03-02T08:07:50.000000Z"),
        (1, "hostname-dan", (0,), "deleted", "2026-03-02T08:06:52.000000Z", "2026-03-02T08:07:51.000000Z"),
    ]


def test_redelivered_event_counts_once(tmp_path: Path) -> None:
    from hivedlab.evidence import EvidenceWriter

    lines = (LOGS / "gang-consistent.jsonl").read_text(encoding="utf-8").splitlines()
    records = read_evidence(LOGS / "gang-consistent.jsonl").records
    event = next(r for r in records if r.resource == "events")
    path = tmp_path / "e.jsonl"
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # drop the end record
    with EvidenceWriter(path, "k8s") as writer:
        writer.write_object("LISTED", "events", object_of(event))
    before = build_timeline(records)
    after = build_timeline(read_evidence(path).records)
    count = lambda t: sum(len(a.waits) for j in t.jobs for a in j.attempts)  # noqa: E731
    assert count(after) == count(before)


def test_committed_fixtures_match_their_generator(tmp_path: Path) -> None:
    from tests.support.make_log_fixtures import write_all

    write_all(tmp_path)
    generated = sorted(p.name for p in tmp_path.glob("*.jsonl"))
    assert len(generated) >= 19
    for name in generated:
        assert (tmp_path / name).read_bytes() == (LOGS / name).read_bytes(), name


@pytest.mark.parametrize(("fc_state", "code", "delay", "rest"), [
    ("AttemptDeleting", -210, None, "STOPPING"),  # a user's stop: the rest-server shows STOPPING
    ("AttemptDeletionRequested", -220, None, "STOPPING"),
    ("AttemptDeleting", -101, None, "RUNNING"),  # a preempted task: the job is still running for OpenPAI
    ("AttemptCompleted", 1, None, "RUNNING"),  # no retry delay recorded yet
    ("AttemptCompleted", 1, 0, "WAITING"),  # to be retried
    ("AttemptPreparing", None, None, "WAITING"),
])
def test_a_frameworks_state_reads_as_the_rest_server_shows_it(tmp_path: Path, fc_state: str, code: int | None,
                                                               delay: int | None, rest: str) -> None:
    """OpenPAI v1.2.0's own mapping (rest-server models/v2/job/k8s.js convertState, database-controller
    common/framework.js convertFrameworkState), the one `models.openpai.jobstate.rest_state` owns."""
    from tests.support.scenario import Scenario

    sc = Scenario(tmp_path / "e.jsonl")
    job = sc.submit("alice", "low", "job-config-1", "vc1", "test")
    sc.framework(job, fc_state, code, retry_delay_s=delay)
    sc.close()
    timeline = build_timeline(read_evidence(tmp_path / "e.jsonl").records)
    assert [j.state for j in timeline.jobs] == [rest]


def test_a_pod_records_changes_make_the_attempt_replace_would() -> None:
    """The builder's copy of an attempt with changed fields equals dataclasses.replace's, and leaves the old one."""
    assert not hasattr(Attempt, "__post_init__")  # the copy skips __init__: it must have nothing to run
    old = Attempt("p", "u1", "worker", 0, created=Mark(1, "t1", 1.0), gpus=(0,))
    changes: dict[str, Any] = {"bound": Mark(2, "t2", 2.0), "node": "n1", "exit_code": 3, "gpus": (1, 2)}
    new = _changed(old, changes)
    assert new == replace(old, **changes) and new is not old and old.node is None
    assert [getattr(new, f.name) for f in fields(Attempt)] == [getattr(replace(old, **changes), f.name)
                                                                  for f in fields(Attempt)]
