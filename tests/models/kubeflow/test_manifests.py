"""TFJob + PodGroup manifests as a run uses them: told apart from OpenPAI protocols, named per run (TFJob, PodGroup
and every group-name annotation alike), stripped of the gang for the default scheduler; a TFJob's pods and state."""

from __future__ import annotations

import pytest
import yaml

from hivedlab.models.kubeflow.manifests import (
    GROUP_ANNOTATION,
    ManifestError,
    TfPod,
    for_run,
    k8s_name,
    looks_like_manifests,
    manifest_file,
    parse_manifests,
    tf_pod,
    tfjob_state,
)
from tests.support.paths import ROOT

KUBE_BATCH = ROOT / "jobs" / "kubeflow" / "kube-batch" / "tfjob-gang-2.yaml"


def test_manifests_are_told_apart_from_protocols_and_hived_configs():
    assert looks_like_manifests(KUBE_BATCH.read_text(encoding="utf-8"))
    assert not looks_like_manifests((ROOT / "jobs" / "kubeflow" / "tfjob-gang-2.yaml").read_text(encoding="utf-8"))
    assert not looks_like_manifests((ROOT / "configs" / "hived" / "two-vc.yaml").read_text(encoding="utf-8"))


def test_a_run_names_the_tfjob_its_podgroup_and_every_annotation():
    text, name = for_run(KUBE_BATCH.read_text(encoding="utf-8"), "tfjob-gang-2-Alice_B-kubeflow-gang-20261126t090000")
    assert name == "tfjob-gang-2-alice-b-kubeflow-gang-20261126t090000"
    group, tfjob = yaml.safe_load_all(text)
    assert group["kind"] == "PodGroup" and group["metadata"]["name"] == name and group["spec"]["minMember"] == 3
    assert tfjob["metadata"]["name"] == name
    for spec in tfjob["spec"]["tfReplicaSpecs"].values():
        assert spec["template"]["metadata"]["annotations"][GROUP_ANNOTATION] == name
        assert spec["template"]["spec"]["schedulerName"] == "kube-batch"


def test_without_the_gang_the_default_scheduler_places_the_pods():
    text, _ = for_run(KUBE_BATCH.read_text(encoding="utf-8"), "job", gang=False)
    (tfjob,) = yaml.safe_load_all(text)
    for spec in tfjob["spec"]["tfReplicaSpecs"].values():
        assert GROUP_ANNOTATION not in spec["template"]["metadata"].get("annotations", {})
        assert spec["template"]["spec"]["schedulerName"] == "default-scheduler"


def test_names_are_dns_labels():
    assert k8s_name("A" * 70 + "_x") == "a" * 63
    assert k8s_name("--Job--Name--") == "job-name"
    assert manifest_file("kubeflow/tfjob-gang-1.yaml", "volcano") == "kubeflow/volcano/tfjob-gang-1.yaml"


def test_positions_point_at_the_key_of_each_document():
    manifests = parse_manifests(KUBE_BATCH.read_text(encoding="utf-8"))
    line, _ = manifests.positions["/1/spec/tfReplicaSpecs/Worker/replicas"]
    assert KUBE_BATCH.read_text(encoding="utf-8").splitlines()[line - 1].strip() == "replicas: 2"
    with pytest.raises(ManifestError) as caught:
        parse_manifests("apiVersion: v1\nkind: [x\n")
    assert caught.value.line == 3


@pytest.mark.parametrize(("labels", "pod"), [
    ({"tf-job-name": "j", "tf-replica-type": "Worker", "tf-replica-index": "2"}, TfPod("j", "worker", 2)),
    ({"training.kubeflow.org/job-name": "j", "training.kubeflow.org/replica-type": "ps",
      "training.kubeflow.org/replica-index": "0"}, TfPod("j", "ps", 0)),
    ({"job-name": "j", "replica-type": "chief"}, TfPod("j", "chief", None)),
    ({"type": "kube-launcher-task", "FC_FRAMEWORK_NAME": "abc"}, None),
], ids=["tf-operator-v0.4", "training-operator-v1", "older-v1-labels", "openpai"])
def test_a_tfjobs_pods_are_known_by_the_operators_labels(labels, pod):
    assert tf_pod(labels) == pod


def test_a_tfjobs_state_is_its_last_true_condition():
    conditions = [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"},
                  {"type": "Succeeded", "status": "False"}]
    assert tfjob_state({"status": {"conditions": conditions}}) == "RUNNING"
    conditions[2]["status"] = "True"
    assert tfjob_state({"status": {"conditions": conditions}}) == "SUCCEEDED"
    assert tfjob_state({}) == "WAITING"
