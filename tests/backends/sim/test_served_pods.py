"""The pods the simulated cluster shows without HiveD (docs/other-schedulers.md, "The pods"), held to the real
programs: a Kubeflow job's pods are tf-operator v0.5's (`hivedlab.models.kubeflow.operator`), and the fake operator
of tests/support/fakekubeflow.py makes the very same pods from the same manifests and records the same events; an
OpenPAI job's pods are the rest-server's without HiveD."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from hivedlab.backends.sim.plain import PlainSimCluster, kubeflow_manifests
from hivedlab.backends.sim.settings import settings_from_mapping
from hivedlab.basics.resources import EXPERIMENTS, JOBS
from hivedlab.evidence import EvidenceWriter
from hivedlab.lab_group.layouts import plan_layout, render_hived_config
from hivedlab.models.kubeflow.manifests import for_run, parse_manifests
from hivedlab.models.kubeflow.operator import operator_pod, replicas, with_condition
from tests.support.fakekubeflow import FakeKubeflow
from tests.support.k8s_crd_server import FakeKubeApi
from tests.support.simkit import INVENTORY, IPS, OPEN_WRITERS, job_text, read_log, run_until_idle

MANIFESTS = sorted(path.name for path in (JOBS / "kubeflow" / "kube-batch").iterdir() if path.suffix == ".yaml")
SCHEDULERS = ("default", "kube-batch")
# what the operator decides about a pod; the rest (uid, versions, node, status) is the cluster's state
_OPERATOR_FIELDS = ("name", "namespace", "labels", "annotations")


def _tfjob(file: str, name: str, scheduler: str, namespace: str = "default") -> dict[str, Any]:
    text, _ = for_run((JOBS / "kubeflow" / "kube-batch" / file).read_text(encoding="utf-8"), name,
                      gang=scheduler != "default")
    tfjob = next(d for d in parse_manifests(text).documents if d["kind"] == "TFJob")
    tfjob["metadata"]["namespace"] = namespace
    return tfjob


def _decided(pod: dict[str, Any]) -> dict[str, Any]:
    """The part of a pod the operator (and the API server's defaults) decide."""
    meta = pod["metadata"]
    owners = [{k: v for k, v in owner.items() if k != "uid"} for owner in meta["ownerReferences"]]
    spec = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
    return {**{key: meta.get(key) for key in _OPERATOR_FIELDS}, "owners": owners, "spec": spec}


def _model_pods(tfjob: dict[str, Any], uid: str) -> dict[str, dict[str, Any]]:
    namespace = tfjob["metadata"]["namespace"]
    pods = [operator_pod(tfjob, role, index, namespace=namespace, job_uid=uid) for role, index in replicas(tfjob)]
    return {pod["metadata"]["name"]: pod for pod in pods}


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("file", MANIFESTS)
def test_the_fake_operator_makes_the_models_pods(file: str, scheduler: str) -> None:
    """The fake tf-operator, fed the manifest as a run sends it, creates exactly the pods the model says."""
    tfjob = _tfjob(file, "job-x", scheduler, namespace="run-ns")
    with FakeKubeApi() as api:
        world = FakeKubeflow(api)
        _, stored = api.put("tfjobs", json.loads(json.dumps(tfjob)))
        for _ in replicas(tfjob):
            world.tick()
        made = {pod["metadata"]["name"]: pod for pod in api.items("pods", "run-ns")}
    expected = _model_pods(tfjob, stored["metadata"]["uid"])
    assert sorted(made) == sorted(expected)
    for name, pod in made.items():
        assert pod["metadata"]["ownerReferences"][0]["uid"] == stored["metadata"]["uid"]
        assert _decided(pod) == _decided(expected[name]), name


def test_the_fake_operators_conditions_are_the_models() -> None:
    tfjob = _tfjob("tfjob-gang-2.yaml", "job-x", "kube-batch", namespace="run-ns")
    with FakeKubeApi() as api:
        world = FakeKubeflow(api, run_ticks=2)
        api.put("tfjobs", json.loads(json.dumps(tfjob)))
        for _ in range(8):
            world.tick()
        (stored,) = api.items("tfjobs", "run-ns")
    expected: list[dict[str, Any]] = []
    for kind in ("Created", "Running", "Succeeded"):
        expected = with_condition(expected, kind, "job-x", "t")
    fields = ("type", "status", "reason", "message")
    assert [{k: c[k] for k in fields} for c in stored["status"]["conditions"]] == \
        [{k: c[k] for k in fields} for c in expected]


def _simulated(tmp_path: Path, scheduler: str) -> tuple[list[Any], dict[str, str]]:
    """kubeflow-gang's second job alone on the four-node cluster, as `hivedlab run` sets the simulator up."""
    plan = yaml.safe_load((EXPERIMENTS / "kubeflow-gang.yaml").read_text(encoding="utf-8"))
    log = tmp_path / f"{scheduler}.jsonl"
    writer = EvidenceWriter(log, "sim")
    OPEN_WRITERS.append(writer)
    manifests = kubeflow_manifests({key: job["file"] for key, job in plan["jobs"].items()})
    sim = PlainSimCluster(writer, 7, scheduler=scheduler, settings=settings_from_mapping(plan["sim"]),
                          node_ips=IPS, manifests=manifests)
    sim.switch_config("four-gpu-nodes", plan_layout("four-gpu-nodes", INVENTORY).text)
    result = sim.submit("alice", "job2", job_text("kubeflow/tfjob-gang-2.yaml", "job-x"))
    assert result.accepted and result.framework_name == "job-x"
    run_until_idle(sim, 600)
    return read_log(log), manifests


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_the_simulator_shows_the_operators_pods(tmp_path: Path, scheduler: str) -> None:
    seen, _ = _simulated(tmp_path, scheduler)
    tfjobs = [s.obj for s in seen if s.resource == "tfjobs"]
    assert tfjobs and not [s for s in seen if s.resource == "frameworks"]
    uid = tfjobs[0]["metadata"]["uid"]
    expected = _model_pods(_tfjob("tfjob-gang-2.yaml", "job-x", scheduler), uid)
    pods = {s.obj["metadata"]["name"]: s.obj for s in seen if s.resource == "pods" and s.watch == "ADDED"}
    assert sorted(pods) == ["job-x-ps-0", "job-x-worker-0", "job-x-worker-1"]
    for name, pod in pods.items():
        assert _decided(pod) == _decided(expected[name]), name
        assert "hivedscheduler" not in json.dumps(pod)
    worker = pods["job-x-worker-0"]
    assert worker["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert worker["metadata"]["labels"]["tf-job-role"] == "master"
    assert worker["spec"]["schedulerName"] == ("kube-batch" if scheduler == "kube-batch" else "default-scheduler")
    assert ("scheduling.k8s.io/group-name" in worker["metadata"]["annotations"]) == (scheduler == "kube-batch")
    conditions = [c["type"] for c in tfjobs[-1]["status"]["conditions"] if c["status"] == "True"]
    assert conditions == ["Created", "Succeeded"]
    groups = [(s.watch, s.obj) for s in seen if s.resource == "podgroups"]
    watches = [watch for watch, _ in groups]  # kube-batch writes its status; the operator deletes it at the end
    assert watches[0] == "ADDED" and watches[-1] == "DELETED" and set(watches[1:-1]) <= {"MODIFIED"}
    assert (len(watches) > 2) == (scheduler == "kube-batch")
    group = groups[0][1]
    assert group["metadata"]["name"] == "job-x" and group["spec"]["minMember"] == 3
    owned = group["metadata"].get("ownerReferences") or []
    # kube-batch: the manifest's PodGroup, created before the TFJob; default: the one the operator makes for it
    assert [o["kind"] for o in owned] == ([] if scheduler == "kube-batch" else ["TFJob"])
    first = [s.resource for s in seen if s.resource in ("podgroups", "tfjobs")][:2]
    assert first == (["podgroups", "tfjobs"] if scheduler == "kube-batch" else ["tfjobs", "podgroups"])
    scheduled = [s.obj for s in seen if s.resource == "events" and s.obj["reason"] == "Scheduled"]
    # both record each bind (v1.14 scheduler.go `bind`; kube-batch v0.4.2 cache.go `Bind`, seen on the rehearsal)
    assert {e["involvedObject"]["name"] for e in scheduled} == set(pods)
    assert all(e["message"] == f"Successfully assigned default/{e['involvedObject']['name']} to "
               f"{e['message'].rsplit(' ', 1)[1]}" for e in scheduled)


def _operator_events(events: list[dict[str, Any]]) -> dict[tuple[str, str, str], int]:
    """tf-operator's events on a TFJob, (type, reason, message) -> the last count."""
    found = {}
    for event in events:
        if event["involvedObject"]["kind"] == "TFJob":
            assert event["source"] == {"component": "tf-operator"}
            assert event["involvedObject"]["apiVersion"] == "kubeflow.org/v1beta2"
            found[(event["type"], event["reason"], event["message"])] = event["count"]
    return found


# what the two write alike for one job; which other pods exit or are deleted, and how often a pass sees a pod
# terminated, depends on the moment each task ends (the simulator's jitter, the fake's one tick)
_ALIKE = ("SettedPodTemplateSchedulerName", "SuccessfulCreatePod", "SuccessfulCreateService", "TFJobSucceeded",
          "SuccessfulDeletePodGroup")


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_the_fake_operator_and_the_simulator_record_the_same_events(tmp_path: Path, scheduler: str) -> None:
    seen, _ = _simulated(tmp_path, scheduler)
    simulated = _operator_events([s.obj for s in seen if s.resource == "events"])
    text, _ = for_run((JOBS / "kubeflow" / "kube-batch" / "tfjob-gang-2.yaml").read_text(encoding="utf-8"), "job-x",
                      gang=scheduler != "default")
    with FakeKubeApi() as api:
        world = FakeKubeflow(api, run_ticks=2)
        for document in sorted(parse_manifests(text).documents, key=lambda d: d["kind"] != "PodGroup"):
            document["metadata"]["namespace"] = "default"
            api.put("podgroups" if document["kind"] == "PodGroup" else "tfjobs", document)
        for _ in range(8):
            world.tick()
        faked = _operator_events(api.items("events", "default"))
    assert {k: v for k, v in simulated.items() if k[1] in _ALIKE} == {k: v for k, v in faked.items() if k[1] in _ALIKE}
    for events in (simulated, faked):
        assert ("Normal", "ExitedWithCode", "Pod: default.job-x-worker-0 exited with code 0") in events
        assert ("Normal", "SuccessfulDeletePod", "Deleted pod: job-x-ps-0") in events
        assert ("Normal", "SuccessfulDeleteService", "Deleted service: job-x-ps-0") in events
        assert ("Normal", "SuccessfulDeletePodGroup", "Deleted PodGroup: job-x") in events
        assert (("Warning", "SettedPodTemplateSchedulerName", "Another scheduler is specified when gang-scheduling "
                 "is enabled and it will not be overwritten") in events) == (scheduler == "default")


def test_an_openpai_job_asks_for_gpus_without_hived(tmp_path: Path) -> None:
    """OpenPAI v1.2.0's rest-server without HiveD: `nvidia.com/gpu`, no HiveD annotation or device variable."""
    log = tmp_path / "e.jsonl"
    writer = EvidenceWriter(log, "sim")
    OPEN_WRITERS.append(writer)
    sim = PlainSimCluster(writer, 1, scheduler="kube-batch", node_ips=IPS)
    sim.switch_config("one-vc", render_hived_config("one-vc", INVENTORY))
    assert sim.submit("alice", "gang", job_text("job-config-6.yaml", "gang")).accepted
    run_until_idle(sim, 600)
    pods = [s.obj for s in read_log(log) if s.resource == "pods"]
    assert pods and all("hivedscheduler" not in json.dumps(pod) for pod in pods)
    app = pods[0]["spec"]["containers"][0]
    assert app["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert "NVIDIA_VISIBLE_DEVICES" not in {e["name"] for e in app["env"]}
    assert pods[0]["spec"]["schedulerName"] == "kube-batch"
    assert pods[0]["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == pods[0]["metadata"]["labels"][
        "FC_FRAMEWORK_NAME"]
    waits = [s.obj for s in read_log(log) if s.resource == "events" and s.obj["reason"] != "Scheduled"]
    assert all(e["reason"] == "Unschedulable" and e["type"] == "Warning" for e in waits)
