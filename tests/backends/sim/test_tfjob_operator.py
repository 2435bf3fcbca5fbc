"""What the simulated tf-operator v0.5 does with a TFJob's pods (docs/other-schedulers.md, "The pods"): one worker
thread creates all the pods of one TFJob at one instant, so two TFJobs submitted a moment apart never interleave and
do not deadlock under the default scheduler; a parameter server runs until it is deleted; the operator's events on
the TFJob are the ones the real operator wrote on the rehearsal cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hivedlab.backends.sim.plain import PlainSimCluster, kubeflow_manifests
from hivedlab.backends.sim.settings import settings_from_mapping
from hivedlab.basics.resources import EXPERIMENTS
from hivedlab.evidence import EvidenceWriter
from hivedlab.lab_group.layouts import plan_layout
from tests.support.simkit import INVENTORY, IPS, OPEN_WRITERS, Seen, job_text, read_log, run_until_idle

NOT_ENOUGH_GPUS = "0/5 nodes are available: 5 Insufficient nvidia.com/gpu."


def _two_jobs(tmp_path: Path, scheduler: str, seed: int = 7) -> list[Seen]:
    """kubeflow-gang's two 3-worker jobs, the second submitted 0.3 s after the first, on the four GPU nodes and a
    master, as `hivedlab run` sets the simulator up."""
    plan = yaml.safe_load((EXPERIMENTS / "kubeflow-gang.yaml").read_text(encoding="utf-8"))
    log = tmp_path / f"{scheduler}.jsonl"
    writer = EvidenceWriter(log, "sim")
    OPEN_WRITERS.append(writer)
    manifests = kubeflow_manifests({key: job["file"] for key, job in plan["jobs"].items()})
    sim = PlainSimCluster(writer, seed, scheduler=scheduler, settings=settings_from_mapping(plan["sim"]),
                          node_ips=IPS, manifests=manifests, other_nodes=1)  # the master, as `hivedlab run` counts it
    sim.switch_config("four-gpu-nodes", plan_layout("four-gpu-nodes", INVENTORY).text)
    assert sim.submit("alice", "dl-a", job_text("kubeflow/tfjob-deadlock-a.yaml", "job-a")).accepted
    sim.advance_until(lambda: False, 0.3)
    assert sim.submit("alice", "dl-b", job_text("kubeflow/tfjob-deadlock-b.yaml", "job-b")).accepted
    run_until_idle(sim, 1200)
    return read_log(log)


def _pods(seen: list[Seen], watch: str) -> list[Seen]:
    return [s for s in seen if s.resource == "pods" and s.watch == watch]


def _operator_events(seen: list[Seen], job: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The last state of each event on the TFJob, by (type, reason, message)."""
    found = {}
    for s in seen:
        if s.resource == "events" and s.obj["involvedObject"]["kind"] == "TFJob" \
                and s.obj["involvedObject"]["name"] == job:
            found[(s.obj["type"], s.obj["reason"], s.obj["message"])] = s.obj
    return found


@pytest.mark.parametrize("seed", [0, 7, 11])
def test_one_operator_thread_creates_all_of_one_tfjobs_pods_at_once_before_the_next(tmp_path: Path,
                                                                                   seed: int) -> None:
    added = _pods(_two_jobs(tmp_path, "default", seed), "ADDED")
    owners = [s.obj["metadata"]["labels"]["tf-job-name"] for s in added]
    assert owners == ["job-a"] * 4 + ["job-b"] * 4
    assert len({s.time for s in added[:4]}) == 1 and len({s.time for s in added[4:]}) == 1
    for job in ("job-a", "job-b"):  # replica type by replica type, each by index
        types = [s.obj["metadata"]["labels"]["tf-replica-type"] for s in added if s.name.startswith(job)]
        assert types in (["ps", "worker", "worker", "worker"], ["worker", "worker", "worker", "ps"])


def test_two_3_worker_jobs_do_not_deadlock_under_the_default_scheduler(tmp_path: Path) -> None:
    """The first job's three workers get three GPUs; the second's PS and worker 0 hold the last one while its other
    workers wait (the master has no GPU: resources are checked before its taint), and bind as the first job's workers
    end, each freeing its GPU."""
    seen = _two_jobs(tmp_path, "default")
    first_bind: dict[str, str] = {}
    for s in seen:
        if s.resource == "pods" and s.obj["spec"].get("nodeName"):
            first_bind.setdefault(s.name, s.time)
    assert set(first_bind) == {f"job-{j}-{t}" for j in "ab" for t in ("ps-0", "worker-0", "worker-1", "worker-2")}
    waits = {s.obj["involvedObject"]["name"]: s.obj["message"] for s in seen
             if s.resource == "events" and s.obj["reason"] == "FailedScheduling"}
    assert sorted(waits) == ["job-b-worker-1", "job-b-worker-2"]
    assert set(waits.values()) == {NOT_ENOUGH_GPUS}
    succeeded = {s.obj["metadata"]["name"]: s.time for s in seen if s.resource == "tfjobs" and any(
        c["type"] == "Succeeded" and c["status"] == "True" for c in s.obj["status"].get("conditions", []))}
    assert sorted(succeeded) == ["job-a", "job-b"] and succeeded["job-a"] < succeeded["job-b"]
    freed = min(s.time for s in seen if s.resource == "pods" and s.name.startswith("job-a-worker")
                and s.obj["status"].get("phase") == "Succeeded")  # a worker's GPU is free once it ended
    assert first_bind["job-b-worker-0"] < freed <= min(first_bind["job-b-worker-1"], first_bind["job-b-worker-2"])


@pytest.mark.parametrize("scheduler", ["default", "kube-batch"])
def test_a_parameter_server_runs_until_the_operator_deletes_it(tmp_path: Path, scheduler: str) -> None:
    seen = _two_jobs(tmp_path, scheduler)
    for job in ("job-a", "job-b"):
        ps = [s for s in seen if s.resource == "pods" and s.name == f"{job}-ps-0"]
        assert not any(s.obj["status"].get("phase") == "Succeeded" for s in ps)
        gone = ps[-1]
        assert gone.watch == "DELETED" and gone.obj["status"]["phase"] == "Failed"
        assert gone.obj["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 143
        deleting = next(s for s in ps if s.obj["metadata"].get("deletionTimestamp"))
        marked = next(s for s in seen if s.resource == "tfjobs" and s.obj["metadata"]["name"] == job and any(
            c["type"] == "Succeeded" and c["status"] == "True" for c in s.obj["status"].get("conditions", [])))
        assert marked.seq < deleting.seq  # the operator deleted it once the TFJob succeeded (cleanPodPolicy Running)
        # replicaStatuses as the real tf-operator left them: the still active PS counted as succeeded at the end
        assert marked.obj["status"]["replicaStatuses"] == {"PS": {"succeeded": 1}, "Worker": {"succeeded": 3}}
        statuses = [s.obj["status"].get("replicaStatuses") for s in seen
                    if s.resource == "tfjobs" and s.obj["metadata"]["name"] == job]
        assert {"PS": {"active": 1}, "Worker": {"active": 3}} in statuses  # while the job trained


@pytest.mark.parametrize("scheduler", ["default", "kube-batch"])
def test_the_operator_records_its_events_on_the_tfjob(tmp_path: Path, scheduler: str) -> None:
    seen = _two_jobs(tmp_path, scheduler)
    events = _operator_events(seen, "job-a")
    pods = [f"job-a-{t}" for t in ("ps-0", "worker-0", "worker-1", "worker-2")]
    for pod in pods:
        assert events[("Normal", "SuccessfulCreatePod", f"Created pod: {pod}")]["count"] == 1
        assert ("Normal", "SuccessfulCreateService", f"Created service: {pod}") in events
    warning = ("Warning", "SettedPodTemplateSchedulerName",
               "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten")
    if scheduler == "default":  # one per pod created: the same event, its count bumped
        assert events[warning]["count"] == 4
    else:
        assert warning not in events
    assert events[("Normal", "ExitedWithCode", "Pod: default.job-a-worker-0 exited with code 0")]
    assert events[("Normal", "TFJobSucceeded", "TFJob job-a successfully completed.")]["count"] == 1
    assert ("Normal", "SuccessfulDeletePod", "Deleted pod: job-a-ps-0") in events
    assert ("Normal", "SuccessfulDeleteService", "Deleted service: job-a-ps-0") in events
    assert ("Normal", "SuccessfulDeletePodGroup", "Deleted PodGroup: job-a") in events
    assert not any(reason == "ExitedWithCode" and "ps-0" in message for _, reason, message in events)
    one = events[("Normal", "TFJobSucceeded", "TFJob job-a successfully completed.")]
    assert one["source"] == {"component": "tf-operator"}
    assert {k: one["involvedObject"][k] for k in ("apiVersion", "kind", "name")} == {
        "apiVersion": "kubeflow.org/v1beta2", "kind": "TFJob", "name": "job-a"}


def test_kube_batch_keeps_the_podgroups_status_and_records_its_event(tmp_path: Path) -> None:
    """kube-batch v0.4 on the PodGroup of the job that waits: the `Unschedulable` condition (`NotEnoughResources`),
    the phase Pending (Running only with more than minMember tasks allocated), and a Warning `Unschedulable` event
    "<pending>/<tasks> tasks in gang unschedulable: <FitError>" while it is Pending."""
    seen = _two_jobs(tmp_path, "kube-batch")
    groups = [s for s in seen if s.resource == "podgroups" and s.obj["metadata"]["name"] == "job-b"]
    waiting = next(s.obj["status"] for s in groups if s.obj.get("status", {}).get("conditions"))
    (condition,) = waiting["conditions"]
    assert waiting["phase"] == "Pending"
    assert {k: condition[k] for k in ("type", "status", "reason")} == {
        "type": "Unschedulable", "status": "True", "reason": "NotEnoughResources"}
    # one GPU is left: the session allocates job-b's tasks in creation order until a worker finds no node, and those
    # stay Allocated (not pending): the PS (if created first) and one worker
    created = [s.obj["metadata"]["name"] for s in _pods(seen, "ADDED") if s.obj["metadata"]["name"].startswith("job-b")]
    pending = 4 - (2 if created[0].endswith("-ps-0") else 1)
    assert condition["message"].startswith(f"{pending}/4 tasks in gang unschedulable: ")
    assert all(s.obj.get("status", {}).get("phase") in (None, "Pending") for s in groups)  # exactly minMember
    assert groups[-1].watch == "DELETED"
    events = [s.obj for s in seen if s.resource == "events" and s.obj["involvedObject"]["kind"] == "PodGroup"
              and s.obj["involvedObject"]["name"] == "job-b"]
    assert events and {(e["type"], e["reason"], e["source"]["component"]) for e in events} == {
        ("Warning", "Unschedulable", "kube-batch")}
    fit_error = condition["message"].split(": ", 1)[1]
    assert f"{pending}/4 tasks in gang unschedulable: {fit_error}" in {e["message"] for e in events}
    assert events[-1]["message"].startswith("0/4 tasks in gang unschedulable")  # still Pending once bound
