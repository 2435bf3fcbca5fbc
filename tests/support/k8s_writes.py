"""The fake Kubernetes API server (`tests.support.k8s_server.FakeApiServer`) with the writes a kubelet makes: node
create, get and merge-patch (spec and status), pod status merge-patch, pod delete.

Where each behaviour comes from (Kubernetes 1.20.2, the version the rehearsal cluster runs):
- Create answers 201 with the object, 409 AlreadyExists for a second one:
  `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go` `createHandler`, `.../api/errors/errors.go`
  `NewAlreadyExists`.
- `application/merge-patch+json` is RFC 7386 (a list is replaced whole, null removes a key):
  `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go` `jsonPatcher` with `types.MergePatchType`.
- `/status` subresources change only `status`; the main resource ignores `status`:
  `pkg/registry/core/pod/strategy.go` `podStatusStrategy.PrepareForUpdate`, `pkg/registry/core/node/strategy.go`.
- Deleting a pod bound to a node with a grace period sets `metadata.deletionTimestamp` and
  `deletionGracePeriodSeconds` and keeps the pod; gracePeriodSeconds 0, or an unbound pod, removes it:
  `pkg/registry/core/pod/strategy.go` `podStrategy.CheckGracefulDelete` (30 s default from
  `spec.terminationGracePeriodSeconds`) and `staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go`
  `BeforeDelete`.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlparse

from tests.support.k8s_server import FakeApiServer

NODES = "/api/v1/nodes"
PODS = "/api/v1/namespaces/default/pods"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class WritableApiServer(FakeApiServer):
    """Also answers POST/PATCH/DELETE on nodes and on pods in `default`; `deletes` lists each DELETE's body."""

    def __init__(self) -> None:
        self.deletes: list[tuple[str, dict[str, Any]]] = []
        super().__init__(frameworks=False)
        base = self.httpd.RequestHandlerClass
        server = self

        class Handler(base):  # type: ignore[misc,valid-type]
            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length) or b"null")

            def do_GET(self) -> None:
                path = urlparse(self.path).path
                if path.startswith(NODES + "/"):
                    found = server.find("nodes", path.split("/")[4])
                    self._json(200, found) if found else self._json(404, _status(404, "NotFound", "not found"))
                    return
                super().do_GET()

            def do_POST(self) -> None:
                body = self._body()  # read first, whatever the answer
                if urlparse(self.path).path != NODES:
                    self._json(404, _status(404, "NotFound", "the server could not find the requested resource"))
                    return
                name = body["metadata"]["name"]
                if server.find("nodes", name):
                    self._json(409, _status(409, "AlreadyExists", f'nodes "{name}" already exists'))
                    return
                metadata = body.pop("metadata")
                body.pop("kind", None)
                body.pop("apiVersion", None)
                obj = server.add("nodes", name, labels=metadata.get("labels") or {}, **body)
                self._json(201, obj)

            def do_PATCH(self) -> None:
                patch = self._body()  # read first: the connection is kept alive for the next request
                if self.headers.get("Content-Type") != "application/merge-patch+json":
                    self._json(415, _status(415, "UnsupportedMediaType", "unsupported patch type"))
                    return
                parts = urlparse(self.path).path.split("/")
                resource = "nodes" if parts[3] == "nodes" else "pods"
                name = parts[4] if resource == "nodes" else parts[6]
                subresource = parts[-1] == "status" and len(parts) == (6 if resource == "nodes" else 8)
                found = server.find(resource, name)
                if not found:
                    self._json(404, _status(404, "NotFound", f'{resource} "{name}" not found'))
                    return
                fields = {k: v for k, v in patch.items() if (k == "status") == subresource and k != "metadata"}
                merged = {k: merge_patch(found.get(k), v) for k, v in fields.items()}
                self._json(200, server.modify(resource, found["metadata"]["uid"], **merged))

            def do_DELETE(self) -> None:
                name = urlparse(self.path).path.split("/")[6]
                body = self._body() or {}
                server.deletes.append((name, body))
                found = server.find("pods", name)
                if not found:
                    self._json(404, _status(404, "NotFound", f'pods "{name}" not found'))
                    return
                grace = body.get("gracePeriodSeconds")
                if grace == 0 or not (found.get("spec") or {}).get("nodeName"):
                    self._json(200, server.delete("pods", found["metadata"]["uid"]))
                    return
                meta = dict(found["metadata"])
                meta["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                meta["deletionGracePeriodSeconds"] = 30 if grace is None else grace
                self._json(200, server.modify("pods", found["metadata"]["uid"], metadata=meta))

        self.httpd.RequestHandlerClass = Handler

    def find(self, resource: str, name: str) -> dict[str, Any] | None:
        with self.cond:
            found = next((o for o in self.objects[resource].values() if o["metadata"]["name"] == name), None)
            return json.loads(json.dumps(found)) if found else None
