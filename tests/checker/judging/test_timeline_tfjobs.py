"""Timelines of a plain Kubernetes cluster's log: a TFJob's pods are its tasks (the operator's labels), a gang
scheduler's Unschedulable event is a wait, and a TFJob deleted before it finished was stopped."""

from __future__ import annotations

from pathlib import Path

from hivedlab.checker.judging.timeline import build_timeline
from hivedlab.evidence import EvidenceWriter, read_evidence

JOB = "tfjob-gang-2-alice-kubeflow-gang-t1"


def _pod(name: str, role: str, index: int, node: str | None = None) -> dict:
    return {"metadata": {"name": name, "uid": f"uid-{name}", "namespace": "ns",
                         "labels": {"tf-job-name": JOB, "tf-replica-type": role, "tf-replica-index": str(index)}},
            "spec": {"nodeName": node} if node else {}, "status": {"phase": "Running" if node else "Pending"}}


def _log(tmp_path: Path) -> Path:
    path = tmp_path / "evidence.jsonl"
    with EvidenceWriter(path, "k8s") as writer:
        writer.write_action("plan", {"experiment": "kubeflow-gang", "cluster": "k8s", "scheduler": "kube-batch"},
                            time="2026-11-26T09:00:00.000000Z")
        writer.write_action("submit", {"user": "alice", "job": "job2", "job_name": JOB, "framework_name": JOB,
                                       "reply": {"status": 201}}, time="2026-11-26T09:00:01.000000Z")
        writer.write_object("ADDED", "tfjobs", {"kind": "TFJob", "metadata": {"name": JOB, "uid": "tf"}},
                            time="2026-11-26T09:00:01.500000Z")
        writer.write_object("ADDED", "pods", _pod(f"{JOB}-worker-1", "Worker", 1), time="2026-11-26T09:00:02.000000Z")
        writer.write_object("ADDED", "events", {
            "metadata": {"uid": "e1", "resourceVersion": "1"}, "reason": "Unschedulable",
            "message": "3/3 tasks in gang unschedulable", "involvedObject": {"kind": "Pod", "name": f"{JOB}-worker-1",
                                                                            "uid": f"uid-{JOB}-worker-1"}},
            time="2026-11-26T09:00:03.000000Z")
        writer.write_object("MODIFIED", "pods", _pod(f"{JOB}-worker-1", "Worker", 1, "k8s-g2"),
                            time="2026-11-26T09:02:00.000000Z")
        writer.write_object("DELETED", "tfjobs", {"kind": "TFJob", "metadata": {"name": JOB, "uid": "tf"}},
                            time="2026-11-26T09:03:00.000000Z")
    return path


def test_a_tfjobs_pod_is_a_task_that_waited_and_was_bound(tmp_path):
    timeline = build_timeline(read_evidence(_log(tmp_path)).records)
    (job,) = timeline.jobs_for("job2")
    (attempt,) = job.attempts
    assert (attempt.task_role, attempt.task_index, attempt.node) == ("worker", 1, "k8s-g2")
    assert [w.message for w in attempt.waits] == ["3/3 tasks in gang unschedulable"]
    assert attempt.bound is not None and attempt.bound.seq == 5
    assert job.state == "STOPPED" and job.end is not None and job.end.seq == 6
