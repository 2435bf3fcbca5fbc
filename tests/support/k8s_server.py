"""A small Kubernetes API server on 127.0.0.1 speaking the list/watch protocol (chunked JSON lines), with
scripted faults that real API servers produce: a connection dropped mid-stream, 410 Gone (as an HTTP status or
an ERROR event), bookmarks, an expired resourceVersion after compaction, a stalled (slow) stream, a garbage line.

Only what the watcher uses: pods, core/v1 events and FrameworkController frameworks in one namespace; and the
nodes, for `hivedlab doctor`.

Where each behaviour comes from (Kubernetes 1.15, the version quick-start installs; the API concepts page
"Efficient detection of changes" documents the same):
- A list is `{kind: <Kind>List, apiVersion, metadata: {resourceVersion}, items}`, the version a watch starts from:
  `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go` `ListMeta`.
- A watch answers `Transfer-Encoding: chunked`, one JSON `{type, object}` per line, types ADDED, MODIFIED, DELETED,
  BOOKMARK (when `allowWatchBookmarks`), ERROR: `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go`
  `WatchServer.ServeHTTP` and `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/watch.go` `WatchEvent`.
- A watch from a resourceVersion older than the watch cache keeps is code 410, "too old resource version: <rv>
  (<oldest>)", either as the HTTP status or as an ERROR event whose object is a `Status`:
  `staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go` `GetAllEventsSinceThreadUnsafe`. Its reason is
  `Gone` where the apiserver uses `errors.NewGone` and `Expired` where later versions use `NewResourceExpired`; the
  fake's ERROR event says `Expired` and its message leaves out the oldest version. The watcher reads only the code.
- Objects carry `metadata.selfLink`, `uid`, `resourceVersion`, `creationTimestamp` (`ObjectMeta`); nodes are
  cluster-scoped (no namespace); a path no resource serves is 404 with a `Status`, reason NotFound, "the server could
  not find the requested resource" (`staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go`
  `NewGenericServerResponse` for 404).
- The Framework resource: `frameworkcontroller.microsoft.com/v1`, `frameworks` (FrameworkController v0.8.0
  `pkg/apis/frameworkcontroller/v1/constants.go` `GroupName`, `Version`, `FrameworkPlural`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar, TypeVar
from urllib.parse import parse_qs, urlparse

from tests.support.local import QuietHandler, local_server

# A kubeconfig for the fake API server at `url` (the token is no secret: the fake accepts any).
KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {{server: "{url}"}}
contexts:
- name: lab
  context: {{cluster: local, user: student}}
current-context: lab
users:
- name: student
  user: {{token: not-a-secret}}
"""


PATHS = {
    "/api/v1/namespaces/default/pods": "pods",
    "/api/v1/pods": "pods",  # every namespace's (all of this fake's pods are in `default`)
    "/api/v1/namespaces/default/events": "events",
    "/apis/frameworkcontroller.microsoft.com/v1/namespaces/default/frameworks": "frameworks",
    "/api/v1/nodes": "nodes",
}
KINDS = {"pods": ("Pod", "v1"), "events": ("Event", "v1"),
         "frameworks": ("Framework", "frameworkcontroller.microsoft.com/v1"), "nodes": ("Node", "v1")}


@dataclass
class Fault:
    """What the next watch connection of a resource does wrong."""

    drop_after: int | None = None  # close the socket (no final chunk) after this many events
    garbage_after: int | None = None  # send a line that is not JSON after this many events
    bookmark: bool = False  # send a BOOKMARK first
    gone: bool = False  # send ERROR 410 at once
    http_410: bool = False  # answer the request with HTTP 410
    stall: float = 0.0  # after the backlog, go silent this long (longer than the client's read timeout)


class ApiHandler(QuietHandler):
    """What both fake API servers answer with: JSON bodies, and chunked watch streams."""

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


_Api = TypeVar("_Api", bound="ServedApi")


class ServedApi:
    """A fake API server's life: an HTTP server on 127.0.0.1 in a thread, and a condition its watches wait on;
    `__exit__` wakes them so that they end."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.cond = threading.Condition()
        self.closing = False
        self.httpd, self.thread, self.url = local_server(handler)

    def __enter__(self: _Api) -> _Api:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()


class FakeApiServer(ServedApi):
    def __init__(self, frameworks: bool = True) -> None:
        self.rv = 100
        self.objects: dict[str, dict[str, dict[str, Any]]] = {r: {} for r in KINDS}
        self.history: dict[str, list[tuple[int, str, dict[str, Any]]]] = {r: [] for r in KINDS}
        self.compacted: dict[str, int] = {r: 0 for r in KINDS}
        self.faults: dict[str, list[Fault]] = {r: [] for r in KINDS}
        self.frameworks = frameworks
        self.requests: list[str] = []
        self.kills = 0  # bumped by drop_watches(): every open watch connection dies
        super().__init__(self._handler())

    # -- state changes ---------------------------------------------------------------------------------
    def _bump(self, resource: str, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        snapshot = json.loads(json.dumps(obj))
        self.history[resource].append((self.rv, kind, snapshot))
        self.cond.notify_all()
        return snapshot

    def add(self, resource: str, name: str, labels: dict[str, str] | None = None,
            meta: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        """A new object as its writer makes it (`meta`: what the writer puts in its metadata besides the labels,
        e.g. annotations, ownerReferences); the server adds uid, resourceVersion, selfLink and creationTimestamp."""
        kind, api = KINDS[resource]
        labels = {"type": "kube-launcher-task"} if labels is None and resource == "pods" else (labels or {})
        path = next(p for p, r in PATHS.items() if r == resource)
        metadata: dict[str, Any] = {
            "name": name, "namespace": "default", "selfLink": f"{path}/{name}", "uid": str(uuid.uuid4()),
            "creationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "labels": labels}
        if resource == "nodes":  # cluster-scoped
            del metadata["namespace"]
        if resource == "frameworks":  # customresource/strategy.go `PrepareForCreate`: a new custom object's
            metadata["generation"] = 1  # generation is 1
        metadata.update(meta or {})
        obj = {"kind": kind, "apiVersion": api, "metadata": metadata, **fields}
        with self.cond:
            self.objects[resource][obj["metadata"]["uid"]] = obj
            return self._bump(resource, "ADDED", obj)

    def modify(self, resource: str, uid: str, **fields: Any) -> dict[str, Any]:
        with self.cond:
            obj = self.objects[resource][uid]
            obj.update(fields)
            return self._bump(resource, "MODIFIED", obj)

    def delete(self, resource: str, uid: str) -> dict[str, Any]:
        with self.cond:
            obj = self.objects[resource].pop(uid)
            return self._bump(resource, "DELETED", obj)

    def drop_watches(self) -> None:
        """Kill every open watch connection mid-stream (as a restarted API server or a proxy would)."""
        with self.cond:
            self.kills += 1
            self.cond.notify_all()

    def compact(self, resource: str) -> None:
        """Forget history: any watch from an older resourceVersion now gets 410."""
        with self.cond:
            self.compacted[resource] = self.rv

    def fault(self, resource: str, fault: Fault) -> None:
        with self.cond:
            self.faults[resource].append(fault)

    def changes(self, resource: str) -> set[tuple[str, str]]:
        with self.cond:
            return {(o["metadata"]["uid"], o["metadata"]["resourceVersion"]) for _, _, o in self.history[resource]}

    # -- HTTP ------------------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        """A handler class of this server's own: `WatchHandler` bound to it."""
        return type("Handler", (WatchHandler,), {"fake": self})


class WatchHandler(ApiHandler):
    """The HTTP side of a `FakeApiServer`: lists and watches, with the faults it was given."""

    fake: ClassVar[FakeApiServer]

    def do_GET(self) -> None:  # http.server's name
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        resource = PATHS.get(url.path)
        self.fake.requests.append(self.path)
        if resource is None or (resource == "frameworks" and not self.fake.frameworks):
            self._json(404, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                             "message": "the server could not find the requested resource",
                             "reason": "NotFound", "details": {}, "code": 404})
            return
        if query.get("watch") in ("true", "True", "1"):
            self._watch(resource, query)
        else:
            self._list(resource, query)

    def _match(self, obj: dict[str, Any], selector: str) -> bool:
        labels = obj["metadata"].get("labels") or {}
        pairs = [p.split("=", 1) for p in selector.split(",") if "=" in p]
        return all(labels.get(k) == v for k, v in pairs)

    def _list(self, resource: str, query: dict[str, str]) -> None:
        with self.fake.cond:
            items = [json.loads(json.dumps(o)) for o in self.fake.objects[resource].values()
                     if self._match(o, query.get("labelSelector", ""))]
            version = str(self.fake.rv)
        for item in items if resource != "frameworks" else ():
            # a built-in type's list items come without kind/apiVersion (the typed list drops their TypeMeta);
            # a custom resource's keep theirs: apiextensions-apiserver serves them as stored, unstructured
            # (staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/etcd.go)
            item.pop("kind", None)
            item.pop("apiVersion", None)
        kind, api = KINDS[resource]
        self._json(200, {"kind": f"{kind}List", "apiVersion": api,
                         "metadata": {"selfLink": urlparse(self.path).path, "resourceVersion": version},
                         "items": items})

    def _watch(self, resource: str, query: dict[str, str]) -> None:
        with self.fake.cond:
            fault = self.fake.faults[resource].pop(0) if self.fake.faults[resource] else Fault()
            kills = self.fake.kills
            start = int(query.get("resourceVersion") or self.fake.rv)
            too_old = start < self.fake.compacted[resource]
        if fault.http_410:
            self._json(410, {"kind": "Status", "status": "Failure", "reason": "Gone", "code": 410,
                             "message": "too old resource version"})
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        kind, api = KINDS[resource]
        if fault.gone or too_old:
            error = {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                                 "message": f"too old resource version: {start}",
                                                 "reason": "Expired", "code": 410}}
            self._chunk(json.dumps(error).encode() + b"\n")
            self._chunk(b"")
            return
        if fault.bookmark:
            with self.fake.cond:
                mark = {"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api,
                                                       "metadata": {"resourceVersion": str(self.fake.rv)}}}
            self._chunk(json.dumps(mark).encode() + b"\n")
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 30)
        sent, cursor = 0, start
        selector = query.get("labelSelector", "")
        stalled = False
        while True:
            with self.fake.cond:
                if self.fake.kills != kills:
                    self.wfile.write(b"5\r\n{\"ty")
                    self.wfile.flush()
                    self.close_connection = True
                    return
                pending = [(rv, t, o) for rv, t, o in self.fake.history[resource] if rv > cursor]
                if not pending:
                    left = deadline - time.monotonic()
                    if left <= 0 or self.fake.closing:
                        break
                    self.fake.cond.wait(min(left, 0.05))
                    continue
            for rv, event_type, obj in pending:
                cursor = rv
                if not self._match(obj, selector):
                    continue
                if fault.drop_after is not None and sent >= fault.drop_after:
                    self.wfile.write(b"5\r\n{\"ty")  # half a chunk, then the connection dies
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if fault.garbage_after is not None and sent == fault.garbage_after:
                    self._chunk(b"<html>502 Bad Gateway</html>\n")
                    fault.garbage_after = None
                self._chunk(json.dumps({"type": event_type, "object": obj}).encode() + b"\n")
                sent += 1
            if fault.stall and not stalled:
                stalled = True
                time.sleep(fault.stall)  # a slow server (the test's client read timeout is shorter)
        self._chunk(b"")

