"""tf-operator v0.5's defaults, pods and conditions (`hivedlab.models.kubeflow.operator`), each case from its source
function in kubeflow/tf-operator v0.5.0 (named in the model)."""

from __future__ import annotations

import json
from typing import Any

from hivedlab.models.kubeflow.operator import (
    defaulted,
    operator_pod,
    operator_podgroup,
    pod_name,
    replicas,
    tf_config,
    with_condition,
)


def _tfjob(**replica_specs: Any) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1beta1", "kind": "TFJob", "metadata": {"name": "mnist"},
            "spec": {"tfReplicaSpecs": replica_specs}}


def _replica(replicas: int | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}], **spec}}}
    if replicas is not None:
        body["replicas"] = replicas
    return body


def test_defaults_fix_case_replicas_restart_policy_and_port() -> None:
    job = defaulted(_tfjob(worker=_replica(), ps=_replica(2)))
    specs = job["spec"]["tfReplicaSpecs"]
    assert list(specs) == ["Worker", "PS"]
    assert specs["Worker"]["replicas"] == 1 and specs["PS"]["replicas"] == 2
    assert specs["Worker"]["restartPolicy"] == "Never"
    assert specs["Worker"]["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "tfjob-port", "containerPort": 2222}]
    assert job["spec"]["cleanPodPolicy"] == "Running"
    assert replicas(job) == [("Worker", 0), ("PS", 0), ("PS", 1)]


def test_tf_config_lists_every_replica_but_the_evaluator() -> None:
    job = defaulted(_tfjob(Worker=_replica(2), PS=_replica(1), Evaluator=_replica(1)))
    config = json.loads(tf_config(job, "Worker", 1, "ns"))
    assert config == {"cluster": {"ps": ["mnist-ps-0.ns.svc:2222"],
                                  "worker": ["mnist-worker-0.ns.svc:2222", "mnist-worker-1.ns.svc:2222"]},
                      "task": {"type": "worker", "index": 1}, "environment": "cloud"}
    assert tf_config(job, "PS", 0, "ns").startswith('{"cluster":{"ps":')  # Go's encoding: sorted keys, no spaces


def test_worker_zero_is_the_master_without_a_chief() -> None:
    job = _tfjob(Worker=_replica(2))
    first = operator_pod(job, "Worker", 0, namespace="ns", job_uid="u")
    second = operator_pod(job, "Worker", 1, namespace="ns", job_uid="u")
    assert first["metadata"]["labels"] == {"group-name": "kubeflow.org", "tf-job-name": "mnist",
                                           "tf-replica-type": "worker", "tf-replica-index": "0",
                                           "tf-job-role": "master"}
    assert "tf-job-role" not in second["metadata"]["labels"]
    chief = _tfjob(Chief=_replica(1), Worker=_replica(1))
    assert operator_pod(chief, "Chief", 0, namespace="ns", job_uid="u")["metadata"]["labels"]["tf-job-role"] == "master"
    assert "tf-job-role" not in operator_pod(chief, "Worker", 0, namespace="ns", job_uid="u")["metadata"]["labels"]


def test_the_pod_is_owned_by_the_tfjob_and_named_after_it() -> None:
    pod = operator_pod(_tfjob(PS=_replica(1)), "PS", 0, namespace="ns", job_uid="u-1")
    assert pod["metadata"]["name"] == pod_name("mnist", "PS", 0) == "mnist-ps-0"
    assert pod["metadata"]["ownerReferences"] == [{"apiVersion": "kubeflow.org/v1beta2", "kind": "TFJob",
                                                   "name": "mnist", "uid": "u-1", "controller": True,
                                                   "blockOwnerDeletion": True}]


def test_gang_scheduling_names_kube_batch_unless_a_template_names_another() -> None:
    plain = operator_pod(_tfjob(Worker=_replica(1)), "Worker", 0, namespace="ns", job_uid="u")
    assert plain["spec"]["schedulerName"] == "kube-batch"
    other = _tfjob(Worker=_replica(1), PS=_replica(1, schedulerName="default-scheduler"))
    assert operator_pod(other, "Worker", 0, namespace="ns", job_uid="u")["spec"]["schedulerName"] == \
        "default-scheduler"
    off = operator_pod(_tfjob(Worker=_replica(1)), "Worker", 0, namespace="ns", job_uid="u", gang_scheduling=False)
    assert off["spec"]["schedulerName"] == "default-scheduler"


def test_restart_policy_comes_from_the_replica_and_requests_from_limits() -> None:
    replica = _replica(1)
    replica["restartPolicy"] = "ExitCode"
    replica["template"]["spec"]["restartPolicy"] = "Always"  # overwritten, with a warning event on the TFJob
    replica["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    pod = operator_pod(_tfjob(Worker=replica), "Worker", 0, namespace="ns", job_uid="u")
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": 1}
    assert pod["spec"]["containers"][0]["env"][-1]["name"] == "TF_CONFIG"


def test_conditions_follow_set_condition() -> None:
    conditions = with_condition([], "Created", "j", "t0")
    assert with_condition(conditions, "Created", "j", "t1") == conditions
    conditions = with_condition(conditions, "Running", "j", "t1")
    conditions = with_condition(conditions, "Succeeded", "j", "t2")
    assert [(c["type"], c["status"]) for c in conditions] == [("Created", "True"), ("Running", "False"),
                                                               ("Succeeded", "True")]
    assert conditions[-1]["message"] == "TFJob j successfully completed."
    failed = with_condition(with_condition([], "Created", "j", "t0"), "Failed", "j", "t1", failed=(1, "worker"))
    assert failed[-1]["message"] == "TFJob j has failed because 1 worker replica(s) failed."
    assert with_condition(failed, "Running", "j", "t2") == failed  # nothing changes once failed


def test_the_operators_podgroup_counts_every_replica() -> None:
    job = _tfjob(PS=_replica(1), Worker=_replica(2))
    job["metadata"]["namespace"] = "ns"
    group = operator_podgroup(job, "u")
    assert group["metadata"]["name"] == "mnist" and group["metadata"]["namespace"] == "ns"
    assert group["spec"] == {"minMember": 3}
    assert group["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
