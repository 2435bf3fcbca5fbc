"""Tamper checks: each forgery a hand-made log easily gets wrong is caught, a genuine log passes."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from hivedlab.checker.grading.integrity import check_log
from hivedlab.evidence import read_evidence
from tests.support.grade_builders import HIGH, LOW, PRIORITY, pod, priority_records, protocol, write_log

NODES = frozenset({"hostname-carol", "hostname-dan"})


def _check(tmp_path: Path, steps, source: str = "sim", nodes=NODES, step_s: float = 1.0):
    log = read_evidence(write_log(tmp_path / "evidence.jsonl", steps, source, step_s))
    assert log.chain_ok  # every forgery below keeps a valid chain: only these checks can catch it
    return check_log(log.records, "experiments/priority/evidence.jsonl", PRIORITY, nodes)


def _codes(findings) -> set[str]:
    return {f.code for f in findings}


def test_a_genuine_log_has_no_findings(tmp_path: Path) -> None:
    facts, findings = _check(tmp_path, priority_records())
    assert findings == ()
    assert facts.source == "sim"
    assert facts.nodes == {"hostname-dan"}
    assert facts.plan_experiment == "priority" and facts.ended == "finished"
    assert facts.submitted_keys == ("low", "high")


def test_a_real_cluster_log_says_so(tmp_path: Path) -> None:
    steps = priority_records()
    steps[0] = ("action", ("plan", {"experiment": "priority", "cluster": "pai"}))
    facts, findings = _check(tmp_path, steps, source="k8s")
    assert facts.source == "k8s" and findings == ()


def test_plan_on_the_simulator_but_records_claim_a_real_cluster(tmp_path: Path) -> None:
    _, findings = _check(tmp_path, priority_records(), source="k8s")
    assert _codes(findings) == {"source-mismatch"}


def test_resource_version_going_backwards_is_forgery(tmp_path: Path) -> None:
    steps = priority_records()
    steps[3] = ("object", ("MODIFIED", "pods", pod("alice", LOW, "u-low-1", 9, "hostname-dan")))
    _, findings = _check(tmp_path, steps)
    assert _codes(findings) == {"rv-backwards"}
    assert findings[0].seq == 3 and findings[0].kind == "forgery"


def test_a_uid_naming_two_pods_is_forgery(tmp_path: Path) -> None:
    steps = priority_records()
    steps[5] = ("object", ("ADDED", "pods", pod("alice", HIGH, "u-low-1", 12)))  # copy-pasted uid
    _, findings = _check(tmp_path, steps)
    assert "uid-reused" in _codes(findings)
    assert next(f for f in findings if f.code == "uid-reused").seq == 5


def test_a_pod_changed_after_its_deletion_is_forgery(tmp_path: Path) -> None:
    steps = priority_records()
    steps.insert(7, ("object", ("MODIFIED", "pods", pod("alice", LOW, "u-low-1", 20, "hostname-dan"))))
    assert "changed-after-delete" in _codes(_check(tmp_path, steps)[1])


def test_a_bound_pod_without_hived_annotations_is_forgery(tmp_path: Path) -> None:
    steps = priority_records()
    bound = pod("alice", LOW, "u-low-1", 11, "hostname-dan")
    del bound["metadata"]["annotations"]["hivedscheduler.microsoft.com/pod-bind-info"]
    steps[3] = ("object", ("MODIFIED", "pods", bound))
    _, findings = _check(tmp_path, steps)
    assert _codes(findings) == {"no-hived-annotations"}
    assert "pod-bind-info" in findings[0].en


def test_bind_info_naming_another_node_is_forgery(tmp_path: Path) -> None:
    steps = priority_records()
    moved = pod("alice", LOW, "u-low-1", 11, "hostname-dan")
    moved["spec"]["nodeName"] = "hostname-carol"
    steps[3] = ("object", ("MODIFIED", "pods", moved))
    assert _codes(_check(tmp_path, steps)[1]) == {"bind-node-mismatch"}


def test_a_node_outside_the_inventory_and_config_is_flagged(tmp_path: Path) -> None:
    _, findings = _check(tmp_path, priority_records("gpu-box-7"))
    assert _codes(findings) == {"unknown-node"}
    assert findings[0].kind == "foreign" and "gpu-box-7" in findings[0].en


def test_recorder_time_going_backwards_is_forgery_but_seconds_of_node_skew_are_not(tmp_path: Path) -> None:
    # container start times written by different nodes are never compared: only the recorder's `time`
    steps = priority_records()
    skewed = pod("alice", HIGH, "u-high-1", 14, "hostname-dan")
    skewed["status"]["containerStatuses"] = [{"state": {"running": {"startedAt": "2025-12-31T23:59:50Z"}}}]
    steps[7] = ("object", ("MODIFIED", "pods", skewed))
    assert _check(tmp_path, steps)[1] == ()

    log = read_evidence(write_log(tmp_path / "back.jsonl", priority_records(), step_s=-5.0))
    _, findings = check_log(log.records, "x", PRIORITY, NODES)
    assert "time-backwards" in _codes(findings)


def test_a_mixed_source_log_is_flagged(tmp_path: Path) -> None:
    path = write_log(tmp_path / "a.jsonl", priority_records()[:3])
    lines = path.read_text().splitlines()
    # rewrite one record's source and re-chain it, as a careful forger would
    import json

    from hivedlab.evidence import ZERO_HASH, record_hash

    prev = ZERO_HASH
    out = []
    for index, line in enumerate(lines):
        data = json.loads(line)
        data.pop("hash")
        if index == 2:
            data["source"] = "k8s"
        data["prev"] = prev
        data["hash"] = prev = record_hash(data)
        out.append(json.dumps(data))
    path.write_text("\n".join(out) + "\n")
    log = read_evidence(path)
    _, findings = check_log(log.records, "x", PRIORITY, NODES)
    assert "mixed-sources" in _codes(findings)


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("defaults", {"virtualCluster": "default"}, "foreign-vc"),
        ("extras", {"hivedScheduler": {"jobPriorityClass": "prod"}}, "foreign-priority"),
        ("taskRoles", {"train": {"instances": 2, "resourcePerInstance": {"gpu": 1}}}, "foreign-shape"),
    ],
)
def test_a_submission_that_is_not_the_labs_job_is_flagged(tmp_path: Path, field: str, value, code: str) -> None:
    steps = priority_records()
    steps[1] = ("action", ("submit", {"user": "alice", "job": "low", "protocol": protocol(LOW, **{field: value})}))
    findings = _check(tmp_path, steps)[1]
    assert code in _codes(findings)
    assert all(f.kind == "foreign" for f in findings)


def test_a_job_key_the_plan_lacks_and_a_pod_in_a_foreign_vc_are_flagged(tmp_path: Path) -> None:
    steps = priority_records()
    steps[1] = ("action", ("submit", {"user": "alice", "job": "mine", "protocol": protocol(LOW)}))
    other = copy.deepcopy(pod("alice", LOW, "u-low-1", 10))
    other["metadata"]["labels"]["virtualCluster"] = "default"
    steps[2] = ("object", ("ADDED", "pods", other))
    codes = _codes(_check(tmp_path, steps)[1])
    assert {"foreign-job", "foreign-vc"} <= codes


def test_a_log_of_another_plan_is_flagged(tmp_path: Path) -> None:
    steps = priority_records()
    steps[0] = ("action", ("plan", {"experiment": "gang", "cluster": "sim"}))
    assert "wrong-plan" in _codes(_check(tmp_path, steps)[1])


def test_a_flood_of_one_forgery_is_reported_a_few_times_only(tmp_path: Path) -> None:
    steps = priority_records()[:2]
    steps += [("object", ("MODIFIED", "pods", pod("alice", LOW, "u-low-1", 100 - i))) for i in range(40)]
    findings = _check(tmp_path, steps)[1]
    assert len([f for f in findings if f.code == "rv-backwards"]) == 5
