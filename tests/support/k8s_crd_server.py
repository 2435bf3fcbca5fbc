"""A small Kubernetes API server on 127.0.0.1 for the plain-Kubernetes backend: namespaces, pods and core/v1 events,
and the custom resources it serves (TFJobs, PodGroups) with API discovery, create, get, delete, list and watch
(chunked JSON lines from a resourceVersion, as the real one streams them). Which custom resources exist is the
test's choice (`crds`), so a cluster without the TFJob or PodGroup CRD can be served too.

What it answers, and where the real one says so (Kubernetes v1.14 unless named):
- errors are `Status` objects (k8s.io/apimachinery/pkg/api/errors): `NewAlreadyExists` 409 and `NewNotFound` 404
  name the resource with its group (`tfjobs.kubeflow.org "x" already exists`; a core resource bare: `pods "x"`);
  an unknown path is 404 "the server could not find the requested resource" (`NewGenericServerResponse`);
- `KUBE_BATCH_CRDS` are what Kubeflow v0.5's tf-training package and kube-batch v0.4 install: the TFJob CRD serves
  `kubeflow.org/v1beta1` and `v1beta2` (kubeflow/kubeflow, kubeflow/tf-training/tf-job-operator.libsonnet), with
  its openAPIV3Schema (the same as tf-operator v0.5.0's examples/crd/crd-v1beta1.yaml): Worker, PS and Chief
  replicas at least 1, a Chief at most 1; a TFJob against it is refused 422 `Invalid` as the CRD validator words
  it (k8s.io/apiextensions-apiserver pkg/registry/customresource/validator.go; go-openapi's "in body should be"
  texts). The object's Go dump in the real message is shown as `{...}`.

It stores objects; what makes pods of a TFJob and places them is `tests.support.fakekubeflow`.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlparse

from tests.support.k8s_server import KUBECONFIG as KUBECONFIG
from tests.support.k8s_server import ApiHandler, ServedApi

KUBE_BATCH_CRDS = frozenset({"kubeflow.org/v1beta1/tfjobs", "kubeflow.org/v1beta2/tfjobs",
                             "scheduling.incubator.k8s.io/v1alpha1/podgroups"})
VALIDATED = ("kubeflow.org/v1beta1", "kubeflow.org/v1beta2")  # the TFJob CRD with Kubeflow v0.5's schema
REPLICA_BOUNDS = {"Worker": (1, None), "PS": (1, None), "Chief": (1, 1)}  # replicas: (minimum, maximum)
VOLCANO_CRDS = frozenset({"kubeflow.org/v1/tfjobs", "scheduling.volcano.sh/v1beta1/podgroups"})
KINDS = {"pods": "Pod", "events": "Event", "tfjobs": "TFJob", "podgroups": "PodGroup", "namespaces": "Namespace"}
_CORE = re.compile(r"^/api/v1/namespaces(?:/(?P<ns>[^/]+)(?:/(?P<res>pods|events)(?:/(?P<name>[^/]+))?)?)?$")
_CUSTOM = re.compile(r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)(?:/namespaces/(?P<ns>[^/]+)/(?P<res>[^/]+)"
                     r"(?:/(?P<name>[^/]+))?)?$")


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code,
            "message": message}


def qualified(resource: str, group: str) -> str:
    """A resource as the apiserver's errors name it: `<plural>.<group>`, or the plural alone for the core group."""
    return f"{resource}.{group}" if group else resource


def invalid_tfjob(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The 422 the TFJob CRD's schema gives, or None when the object passes it."""
    if obj.get("apiVersion") not in VALIDATED or obj.get("kind") != "TFJob":
        return None
    specs = (obj.get("spec") or {}).get("tfReplicaSpecs") or {}
    failures = []
    for role, (low, high) in REPLICA_BOUNDS.items():
        count = (specs.get(role) or {}).get("replicas")
        if not isinstance(count, int):
            continue
        where = f"spec.tfReplicaSpecs.{role}.replicas"
        if count < low:
            failures.append(f"{where} in body should be greater than or equal to {low}")
        if high is not None and count > high:
            failures.append(f"{where} in body should be less than or equal to {high}")
    if not failures:
        return None
    name = (obj.get("metadata") or {}).get("name", "")
    message = (f'TFJob.kubeflow.org "{name}" is invalid: []: Invalid value: map[string]interface {{}}{{...}}: '
               "validation failure list:\n" + "\n".join(failures))
    reply = _status(422, "Invalid", message)
    reply["details"] = {"name": name, "group": "kubeflow.org", "kind": "TFJob",
                        "causes": [{"reason": "FieldValueInvalid", "message": message, "field": "[]"}]}
    return reply


class FakeKubeApi(ServedApi):
    """Objects by resource and `namespace/name`; every change goes to one history the watches read."""

    def __init__(self, crds: frozenset[str] = KUBE_BATCH_CRDS, gpus: tuple[int, ...] = (1, 1, 1, 1)) -> None:
        self.crds = crds
        self.nodes: list[dict[str, Any]] = [{"metadata": {"name": f"k8s-g{i + 1}"}, "status": {"allocatable": {
            "cpu": "4", "memory": "16Gi", **({"nvidia.com/gpu": str(n)} if n else {})}}} for i, n in enumerate(gpus)]
        self.rv = 1000
        self.objects: dict[str, dict[str, dict[str, Any]]] = {r: {} for r in KINDS}
        self.history: list[tuple[int, str, str, dict[str, Any]]] = []  # (rv, resource, watch type, object)
        self.requests: list[tuple[str, str]] = []
        self.on_change: list[Callable[[str, str, dict[str, Any]], None]] = []  # (resource, type, object), lock held
        super().__init__(self._handler())

    def kubeconfig(self) -> str:
        return KUBECONFIG.format(url=self.url)

    # -- state (callers hold no lock; each method takes it) ---------------------------------------------------------
    def _change(self, resource: str, watch_type: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        snapshot = json.loads(json.dumps(obj))
        self.history.append((self.rv, resource, watch_type, snapshot))
        for hook in self.on_change:
            hook(resource, watch_type, snapshot)
        self.cond.notify_all()
        return snapshot

    def put(self, resource: str, obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        meta = obj.setdefault("metadata", {})
        key = f"{meta.get('namespace', '')}/{meta['name']}"
        refused = invalid_tfjob(obj)
        if refused is not None:
            return 422, refused
        with self.cond:
            if key in self.objects[resource]:
                what = qualified(resource, self.group_of(resource))
                return 409, _status(409, "AlreadyExists", f'{what} "{meta["name"]}" already exists')
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            self.objects[resource][key] = obj
            return 201, self._change(resource, "ADDED", obj)

    def update(self, resource: str, key: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any] | None:
        with self.cond:
            obj = self.objects[resource].get(key)
            if obj is None:
                return None
            change(obj)
            return self._change(resource, "MODIFIED", obj)

    def remove(self, resource: str, key: str) -> dict[str, Any] | None:
        with self.cond:
            obj = self.objects[resource].pop(key, None)
            return None if obj is None else self._change(resource, "DELETED", obj)

    def items(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        with self.cond:
            return [json.loads(json.dumps(o)) for k, o in self.objects[resource].items()
                    if namespace is None or k.split("/", 1)[0] == namespace]

    def group_of(self, resource: str) -> str:
        """The API group a resource is served in ("" for the core group)."""
        return next((crd.split("/")[0] for crd in sorted(self.crds) if crd.endswith(f"/{resource}")), "")

    def served(self, group: str, version: str) -> list[str]:
        return sorted(c.rsplit("/", 1)[1] for c in self.crds if c.startswith(f"{group}/{version}/"))

    # -- HTTP --------------------------------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        """A handler class of this server's own: `CrdHandler` bound to it."""
        return type("Handler", (CrdHandler,), {"api": self})


class CrdHandler(ApiHandler):
    """The HTTP side of a `FakeKubeApi`: routes a request to its resource, then creates, deletes, gets, lists or
    watches."""

    api: ClassVar[FakeKubeApi]

    def _route(self) -> tuple[str | None, str | None, str | None, dict[str, str]]:
        """(resource, namespace, name, query); resource None: not served (a 404 was sent)."""
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.api.requests.append((self.command, url.path))
        if url.path == "/api/v1/nodes" and self.command == "GET":
            self._json(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": self.api.nodes})
            return None, None, None, query
        core = _CORE.match(url.path)
        if core:
            if core["res"]:
                return core["res"], core["ns"], core["name"], query
            return "namespaces", None, core["ns"], query
        custom = _CUSTOM.match(url.path)
        if custom and custom["res"] is None and self.command == "GET":
            served = self.api.served(custom["group"], custom["version"])
            if served:
                self._json(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                 "groupVersion": f"{custom['group']}/{custom['version']}",
                                 "resources": [{"name": r, "namespaced": True, "kind": KINDS[r]}
                                               for r in served]})
                return None, None, None, query
        if custom and custom["res"] and custom["res"] in self.api.served(custom["group"], custom["version"]):
            return custom["res"], custom["ns"], custom["name"], query
        self._json(404, _status(404, "NotFound", "the server could not find the requested resource"))
        return None, None, None, query

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        data = json.loads(self.rfile.read(length) or b"{}")
        return data if isinstance(data, dict) else {}

    def do_POST(self) -> None:  # http.server's name
        resource, namespace, _, _ = self._route()
        if resource is None:
            return
        body = self._body()
        if namespace is not None:
            body.setdefault("metadata", {})["namespace"] = namespace
            with self.api.cond:
                known = f"/{namespace}" in self.api.objects["namespaces"]
            if not known:
                self._json(404, _status(404, "NotFound", f'namespaces "{namespace}" not found'))
                return
        status, reply = self.api.put(resource, body)
        self._json(status, reply)

    def do_DELETE(self) -> None:  # http.server's name
        resource, namespace, name, _ = self._route()
        if resource is None:
            return
        gone = self.api.remove(resource, f"{namespace or ''}/{name}")
        if gone is not None and resource == "namespaces":  # everything in it goes with it
            for inner in ("tfjobs", "podgroups", "pods", "events"):
                for obj in self.api.items(inner, name):
                    self.api.remove(inner, f"{name}/{obj['metadata']['name']}")
        if gone is None:
            what = qualified(resource, self.api.group_of(resource))
            self._json(404, _status(404, "NotFound", f'{what} "{name}" not found'))
        else:
            self._json(200, gone)

    def do_GET(self) -> None:  # http.server's name
        resource, namespace, name, query = self._route()
        if resource is None:
            return
        if name is not None:
            with self.api.cond:
                found = self.api.objects[resource].get(f"{namespace or ''}/{name}")
            if found is None:
                what = qualified(resource, self.api.group_of(resource))
                self._json(404, _status(404, "NotFound", f'{what} "{name}" not found'))
            else:
                self._json(200, found)
        elif query.get("watch") in ("true", "True", "1"):
            self._watch(resource, namespace, query)
        else:
            with self.api.cond:
                version = str(self.api.rv)
            self._json(200, {"kind": f"{KINDS[resource]}List", "apiVersion": "v1",
                             "metadata": {"resourceVersion": version},
                             "items": self.api.items(resource, namespace)})

    def _watch(self, resource: str, namespace: str | None, query: dict[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 30)
        cursor = int(query.get("resourceVersion") or self.api.rv)
        while True:
            with self.api.cond:
                pending = [(rv, kind, obj) for rv, res, kind, obj in self.api.history
                           if rv > cursor and res == resource]
                if not pending:
                    cursor = self.api.rv
                    left = deadline - time.monotonic()
                    if left <= 0 or self.api.closing:
                        break
                    self.api.cond.wait(min(left, 0.05))
                    continue
            for rv, kind, obj in pending:
                cursor = rv
                if namespace is None or obj["metadata"].get("namespace") == namespace:
                    self._chunk(json.dumps({"type": kind, "object": obj}).encode() + b"\n")
        self._chunk(b"")

