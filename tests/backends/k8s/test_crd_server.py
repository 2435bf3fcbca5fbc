"""The fake Kubernetes API of tests/support/k8s_crd_server.py held to the real apiserver with Kubeflow v0.5's TFJob
CRD, over real HTTP: the CRD's schema refuses a Chief of 2 replicas (422 Invalid, the validator's words), both TFJob
versions are served, and errors name the resource with its group."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import yaml

from tests.support.k8s_crd_server import FakeKubeApi
from tests.support.paths import FIXTURES

UPSTREAM = FIXTURES / "validate" / "kubeflow-upstream"


def _call(api: FakeKubeApi, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(api.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _manifest(stem: str) -> dict[str, Any]:
    return dict(yaml.safe_load((UPSTREAM / f"{stem}.yaml").read_text(encoding="utf-8")))


def test_the_crd_schema_refuses_two_chief_replicas() -> None:
    with FakeKubeApi() as api:
        assert _call(api, "POST", "/api/v1/namespaces", {"metadata": {"name": "ns"}})[0] == 201
        status, reply = _call(api, "POST", "/apis/kubeflow.org/v1beta1/namespaces/ns/tfjobs",
                              _manifest("two-chief-replicas"))
        assert status == 422 and reply["reason"] == "Invalid" and reply["kind"] == "Status"
        assert reply["message"].startswith('TFJob.kubeflow.org "multi-worker" is invalid: ')
        assert reply["message"].endswith("spec.tfReplicaSpecs.Chief.replicas in body should be less than or equal to 1")
        assert api.items("tfjobs") == []


def test_a_valid_tfjob_is_created_once_in_either_version() -> None:
    with FakeKubeApi() as api:
        _call(api, "POST", "/api/v1/namespaces", {"metadata": {"name": "ns"}})
        tfjob = _manifest("dist-mnist")
        assert _call(api, "POST", "/apis/kubeflow.org/v1beta1/namespaces/ns/tfjobs", tfjob)[0] == 201
        status, reply = _call(api, "POST", "/apis/kubeflow.org/v1beta2/namespaces/ns/tfjobs", tfjob)
        assert (status, reply["reason"]) == (409, "AlreadyExists")
        assert reply["message"] == 'tfjobs.kubeflow.org "dist-mnist-for-e2e-test" already exists'
        status, reply = _call(api, "GET", "/apis/kubeflow.org/v1beta1/namespaces/ns/tfjobs/missing")
        assert (status, reply["message"]) == (404, 'tfjobs.kubeflow.org "missing" not found')
        status, reply = _call(api, "GET", "/api/v1/namespaces/ns/pods/missing")
        assert (status, reply["message"]) == (404, 'pods "missing" not found')
        _, discovery = _call(api, "GET", "/apis/kubeflow.org/v1beta2")
        assert [r["name"] for r in discovery["resources"]] == ["tfjobs"]
