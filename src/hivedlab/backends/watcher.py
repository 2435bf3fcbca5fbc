"""Record a real cluster's pods, core/v1 Events and custom resources (FrameworkController Frameworks on OpenPAI;
TFJobs and PodGroups on a plain Kubernetes cluster, `hivedlab.backends.k8s`) into an evidence log, losing
nothing: list, then watch from the list's resourceVersion; reconnect with backoff on a dropped connection, a read
timeout or a garbage line; re-list on 410 Gone; de-duplicate by (uid, resourceVersion); resume after a restart
from the log's last resourceVersion.

With `nodes` among its resources (the OpenPAI backend's `PAI_RESOURCES`) it also records the cluster's Nodes: each when
listed, then only a change of what makes HiveD count a node bad or healthy (its Ready condition's status,
`spec.unschedulable`) and a deletion; a kubelet's heartbeats change a Node every few seconds and are left out
(docs/evidence.md#nodes). A cluster that does not let the user list Nodes (HTTP 401, 403, 404) records none, with a
warning.

Written to work with Kubernetes 1.15 (OpenPAI v1.2.0): bookmarks are asked for and recorded when sent, never
relied on. Objects are recorded raw, exactly as the API served them (JSON parsed, never converted to models).

`Watcher(api_client, namespace, writer).run(stop_event)` blocks; `.start()` runs it in a background thread
(the real-cluster runner embeds it) and `.stop()` ends it.

Size: over 400 lines because listing, watching, reconnecting and de-duplicating share the one resourceVersion
bookkeeping.
"""

from __future__ import annotations

import json
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hivedlab.evidence import EvidenceError, iter_evidence

FRAMEWORK_GROUP, FRAMEWORK_VERSION = "frameworkcontroller.microsoft.com", "v1"
POD_SELECTOR = "type=kube-launcher-task"  # docs/openpai-model.md#pods
RESOURCES = ("pods", "events", "frameworks")
PAI_RESOURCES = (*RESOURCES, "nodes")  # what a run on an OpenPAI cluster records (docs/evidence.md#nodes)
# custom resources the watcher can follow: evidence resource name -> (API group, version, plural)
CustomResources = Mapping[str, tuple[str, str, str]]
OPENPAI_CUSTOM: CustomResources = {"frameworks": (FRAMEWORK_GROUP, FRAMEWORK_VERSION, "frameworks")}


LISTED_WITHIN_S = 30.0  # how long a backend lets the watcher list everything before it creates anything

class RecordSink(Protocol):
    """Where the watcher writes: an `EvidenceWriter`, or a backend's tap that also reads what is written."""

    @property
    def path(self) -> Path: ...

    def write_object(self, watch_type: str, resource: str, obj: dict[str, Any], time: str | None = None,
                     synthetic: bool = False) -> dict[str, Any]: ...

    def write_action(self, action_type: str, payload: dict[str, Any], time: str | None = None) -> dict[str, Any]: ...


class _Gone(Exception):
    """The resourceVersion is too old (HTTP 410 / ERROR 410): re-list."""


class _Reconnect(Exception):
    """The stream broke (dropped, timed out, garbage): watch again from the last resourceVersion."""


class _Unavailable(Exception):
    """The resource does not exist on this cluster (404), e.g. no FrameworkController CRD."""


@dataclass
class _State:
    """What the watcher knows of one resource: the resume point and the live objects (for dedupe and deletes)."""

    resource_version: str | None = None
    seen: dict[str, str] = field(default_factory=dict)  # uid -> last recorded resourceVersion
    alive: dict[str, dict[str, Any]] = field(default_factory=dict)  # uid -> last object (pods, frameworks)
    deleted: set[str] = field(default_factory=set)


def _meta(obj: dict[str, Any]) -> tuple[str | None, str | None]:
    meta = obj.get("metadata") or {}
    return meta.get("uid"), meta.get("resourceVersion")


def node_health(node: dict[str, Any]) -> tuple[str | None, bool]:
    """What HiveD reads of a Node to count it bad or healthy: its Ready condition's status ("True", "False",
    "Unknown"; None without one) and whether it is cordoned (`spec.unschedulable`)."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c.get("status") for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"), None)
    return (None if ready is None else str(ready)), bool((node.get("spec") or {}).get("unschedulable"))


def state_from_log(path: str | Path, resources: tuple[str, ...] = RESOURCES) -> dict[str, _State]:
    """Rebuild each resource's state from an existing log (resume after a restart)."""
    states = {resource: _State() for resource in resources}
    if not Path(path).exists():
        return states
    for record in iter_evidence(path):
        if record.kind == "action" and record.action_type == "watch" and record.action is not None:
            resource, version = record.action.get("resource"), record.action.get("resource_version")
            if resource in states and version and record.action.get("event") == "listed":
                states[resource].resource_version = str(version)
            continue
        if record.kind != "object" or record.resource not in states or record.object is None:
            continue
        state = states[record.resource]
        uid, version = _meta(record.object)
        if version and not record.synthetic:  # a synthetic delete carries an old object's version
            state.resource_version = version
        if record.watch_type == "BOOKMARK" or not uid:
            continue
        if record.watch_type == "DELETED":
            state.deleted.add(uid)
            state.alive.pop(uid, None)
        elif record.resource != "events":
            state.alive[uid] = record.object
        state.seen[uid] = version or ""
    return states


def make_api_client(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """A kubernetes ApiClient like kubectl makes one: the kubeconfig (default $KUBECONFIG, ~/.kube/config) and
    context, or, when there is no kubeconfig and none was named, the in-cluster service account.
    Raises HivedlabError (one line) when neither works."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    from hivedlab.basics.errors import HivedlabError

    try:
        if kubeconfig is not None and not Path(kubeconfig).expanduser().is_file():
            raise HivedlabError(f"no kubeconfig at {kubeconfig}")
        try:
            path = str(Path(kubeconfig).expanduser()) if kubeconfig else None
            return config.new_client_from_config(config_file=path, context=context)
        except ConfigException:
            if kubeconfig or context:
                raise
        configuration = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)
        except ConfigException:  # kubernetes says only "Service host/port is not set."
            where = os.environ.get("KUBECONFIG") or "~/.kube/config"
            raise HivedlabError(
                f"no kubeconfig ({where} is missing or unusable) and not inside a cluster: pass --kubeconfig FILE "
                f"(and --context NAME), or set KUBECONFIG, as for kubectl / 找不到可用的 kubeconfig（{where}），也不在"
                "集群内运行：请用 --kubeconfig 文件（及 --context 名称）或设置 KUBECONFIG，与 kubectl 相同") from None
        return client.ApiClient(configuration)
    except ConfigException as exc:
        raise HivedlabError(f"cannot configure the Kubernetes client: {str(exc).splitlines()[0]}") from exc


def close_api_client(api_client: Any) -> None:
    """Release what a kubernetes ApiClient holds: `ApiClient.close` ends only its thread pool, and its urllib3
    connection pools keep their keep-alive connections to the API server open as long as anything refers to them
    (the client's `last_response` does; urllib3 2's `PoolManager.clear` only forgets them)."""
    try:
        api_client.close()
    finally:
        manager = api_client.rest_client.pool_manager
        pools = [manager.pools[key] for key in manager.pools.keys()]
        manager.clear()
        for pool in pools:
            pool.close()


class Watcher:
    """List+watch of pods (OpenPAI task pods, optionally one user's), events and Frameworks in one namespace.

    `api_client` is a kubernetes ApiClient; without one, `kubeconfig`/`context` make one (`make_api_client`).
    Another cluster's objects: `resources` names them, `custom` says where each custom resource is served, and
    `pod_selector` ("" = every pod of the namespace) which pods are recorded.
    """

    def __init__(
        self,
        api_client: Any = None,
        namespace: str = "default",
        writer: RecordSink | None = None,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        user: str | None = None,
        resources: tuple[str, ...] = RESOURCES,
        custom: CustomResources = OPENPAI_CUSTOM,
        pod_selector: str = POD_SELECTOR,
        server_timeout_s: int = 55,
        read_timeout_s: float = 70.0,  # longer than the server's timeout: only a dead stream trips it
        connect_timeout_s: float = 10.0,
        backoff: tuple[float, float] = (0.2, 30.0),
        resume: bool = True,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        from kubernetes import client  # imported here: the kubernetes package is slow to import

        if writer is None:
            raise TypeError("Watcher needs an EvidenceWriter (writer=...)")
        if api_client is None:
            api_client = make_api_client(kubeconfig, context)
        self.core = client.CoreV1Api(api_client)
        self.custom_api = client.CustomObjectsApi(api_client)
        self.namespace = namespace
        self.writer = writer
        self.selector = ",".join(part for part in (pod_selector, f"userName={user}" if user else "") if part)
        self.resources = resources
        self.custom = dict(custom)
        self.server_timeout_s = server_timeout_s
        self.timeout = (connect_timeout_s, read_timeout_s)
        self.backoff = backoff
        self.on_warning = on_warning or (lambda message: None)
        self.states = state_from_log(writer.path, resources) if resume else {r: _State() for r in resources}
        self._lock = threading.Lock()
        self._responses: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = {r: threading.Event() for r in resources}  # set once a resource has a version to watch from
        self.errors: list[str] = []

    # -- public ----------------------------------------------------------------------------------------
    def run(self, stop_event: threading.Event | None = None) -> None:
        """Watch until `stop_event` (or `.stop()`) is set; one thread per resource; returns once all have ended."""
        if stop_event is not None:
            self._stop = stop_event
        threads = [threading.Thread(target=self._loop, args=(r,), name=f"watch-{r}", daemon=True)
                   for r in self.resources]
        for thread in threads:
            thread.start()
        while not self._stop.wait(0.2):  # wake up now and then: a Ctrl-C the kernel gave another thread runs its
            pass  # Python handler only when this (main) thread runs bytecode again
        self._close_streams()
        for thread in threads:
            thread.join(timeout=self.timeout[1] + 5)

    def start(self) -> threading.Thread:
        """Run in a background thread; `.stop()` ends it."""
        self._thread = threading.Thread(target=self.run, args=(self._stop,), name="watcher", daemon=True)
        self._thread.start()
        return self._thread

    def wait_ready(self, timeout: float) -> bool:
        """Wait until every resource has been listed (or resumed from the log): from then on no change is missed,
        while a change made before its first list is seen only as the object's state at the list."""
        deadline = time.monotonic() + timeout
        return all(event.wait(max(0.0, deadline - time.monotonic())) for event in self._ready.values())

    def start_listed(self, within_s: float) -> str:
        """Start in the background and wait until every resource is listed: a run creates nothing before that. Returns
        a warning (zh/en) when the lists took longer than `within_s`, else ""."""
        self.start()
        if self.wait_ready(within_s):
            return ""
        return (f"the watcher had not listed {', '.join(self.resources)} within {within_s:.0f} s; changes made before "
                "its first list are recorded only as the state it lists / 记录器未能及时列出全部对象，之前的变化只记录"
                "列出时的状态")

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        self._close_streams()
        if self._thread is not None:
            self._thread.join(timeout)

    # -- one resource ----------------------------------------------------------------------------------
    def _loop(self, resource: str) -> None:
        try:
            self._follow(resource)
        except EvidenceError as exc:  # the log is gone (closed, disk full): nothing more can be recorded
            if self._stop.is_set():
                return
            self.errors.append(str(exc))
            self.on_warning(f"{resource}: {exc}; watching stopped")

    def _follow(self, resource: str) -> None:
        state = self.states[resource]
        delay = self.backoff[0]
        need_list = state.resource_version is None
        self._note("started", resource, state.resource_version, "resumed" if not need_list else "")
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list(resource, state)
                    need_list = False
                self._ready[resource].set()
                self._watch(resource, state)
                delay = self.backoff[0]  # the server ended the watch normally: go on at once
            except _Gone as exc:
                self._note("gone", resource, state.resource_version, str(exc))
                need_list = True
            except _Unavailable as exc:
                self._ready[resource].set()  # nothing to wait for: it is not recorded at all
                self._note("unavailable", resource, None, str(exc))
                self.on_warning(f"{resource}: {exc}; not recorded")
                return
            except _Reconnect as exc:
                if self._stop.is_set():
                    break
                self._note("reconnect", resource, state.resource_version, str(exc))
                self._stop.wait(delay)
                delay = min(delay * 2, self.backoff[1])
            except EvidenceError:
                raise
            except Exception as exc:  # any client/server failure: back off and retry, never die
                if self._stop.is_set():
                    break
                text = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                self.errors.append(text)
                self._note("error", resource, state.resource_version, text)
                self._stop.wait(delay + random.uniform(0, delay / 2))
                delay = min(delay * 2, self.backoff[1])
        self._note("stopped", resource, state.resource_version, "")

    def _call(self, resource: str, **kwargs: Any) -> Any:
        common = {"_preload_content": False, "_request_timeout": self.timeout, **kwargs}
        if resource == "pods":
            return self.core.list_namespaced_pod(self.namespace, label_selector=self.selector, **common)
        if resource == "events":
            return self.core.list_namespaced_event(self.namespace, **common)
        if resource == "nodes":  # cluster-scoped
            return self.core.list_node(**common)
        group, version, plural = self.custom[resource]
        return self.custom_api.list_namespaced_custom_object(group, version, self.namespace, plural, **common)

    def _request(self, resource: str, **kwargs: Any) -> Any:
        from kubernetes.client.exceptions import ApiException

        try:
            return self._call(resource, **kwargs)
        except ApiException as exc:
            if exc.status == 410:
                raise _Gone(f"HTTP 410 {exc.reason}") from exc
            if exc.status == 404 and resource in self.custom:
                group, version, plural = self.custom[resource]
                raise _Unavailable(f"this cluster serves no {plural}.{group}/{version} (HTTP 404)") from exc
            if exc.status in (401, 403, 404) and resource == "nodes":
                raise _Unavailable(f"the cluster does not serve this account its nodes (HTTP {exc.status})") from exc
            raise

    def _list(self, resource: str, state: _State) -> None:
        response = self._request(resource)
        try:
            body = json.loads(response.data)
        finally:
            response.release_conn()
        items = body.get("items") or []
        listed: set[str] = set()
        for obj in items:
            uid, version = _meta(obj)
            if not uid:
                continue
            listed.add(uid)
            self._record("LISTED", resource, state, obj)
        if resource != "events":  # events expire by themselves; a vanished event is not a deletion
            for uid, obj in list(state.alive.items()):
                if uid not in listed:
                    self._record_deleted(resource, state, obj, synthetic=True)
        version = (body.get("metadata") or {}).get("resourceVersion")
        state.resource_version = version
        self._note("listed", resource, version, f"{len(items)} object(s)")

    def _watch(self, resource: str, state: _State) -> None:
        response = self._request(
            resource, watch=True, resource_version=state.resource_version, timeout_seconds=self.server_timeout_s,
            allow_watch_bookmarks=True,
        )
        with self._lock:
            self._responses[resource] = response
        try:
            if self._stop.is_set():  # stop() came between the request and the registration above
                return
            for line in self._lines(response):
                if self._stop.is_set():
                    return
                self._event(resource, state, line)
        finally:
            with self._lock:
                self._responses.pop(resource, None)
            response.release_conn()

    def _lines(self, response: Any) -> Iterator[bytes]:
        import urllib3

        buffer = b""
        try:
            for chunk in response.stream(amt=1 << 16, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield line
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as exc:
            if self._stop.is_set():
                return
            raise _Reconnect(f"stream broke: {type(exc).__name__}") from exc
        if buffer.strip():
            raise _Reconnect("stream ended inside an event")

    def _event(self, resource: str, state: _State, line: bytes) -> None:
        try:
            event = json.loads(line)
            kind, obj = event["type"], event["object"]
            if not isinstance(obj, dict):
                raise TypeError("object is not a JSON object")
        except (ValueError, KeyError, TypeError) as exc:
            raise _Reconnect(f"garbage line from the server ({type(exc).__name__}): {line[:80]!r}") from exc
        if kind == "ERROR":
            code = obj.get("code")
            if code == 410:
                raise _Gone(f"ERROR 410 {obj.get('reason', '')}: {obj.get('message', '')}"[:300])
            raise _Reconnect(f"ERROR {code} {obj.get('reason', '')}: {obj.get('message', '')}"[:300])
        if kind == "BOOKMARK":
            _, version = _meta(obj)
            if version:
                state.resource_version = version
            self.writer.write_object("BOOKMARK", resource, obj)
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            raise _Reconnect(f"unknown watch event type {kind!r}")
        if kind == "DELETED":
            self._record_deleted(resource, state, obj, synthetic=False)
        else:
            self._record(kind, resource, state, obj)
        _, version = _meta(obj)
        if version:
            state.resource_version = version

    # -- recording (dedupe by uid + resourceVersion) ---------------------------------------------------
    def _record(self, kind: str, resource: str, state: _State, obj: dict[str, Any]) -> None:
        uid, version = _meta(obj)
        if not uid or state.seen.get(uid) == version or uid in state.deleted:
            return
        if resource == "nodes" and kind == "MODIFIED" and uid in state.alive \
                and node_health(state.alive[uid]) == node_health(obj):
            state.seen[uid] = version or ""  # a heartbeat: nothing HiveD reads changed; compared with the last recorded
            return
        self.writer.write_object(kind, resource, obj)
        state.seen[uid] = version or ""
        if resource != "events":
            state.alive[uid] = obj

    def _record_deleted(self, resource: str, state: _State, obj: dict[str, Any], synthetic: bool) -> None:
        uid, version = _meta(obj)
        if not uid or uid in state.deleted:
            return
        self.writer.write_object("DELETED", resource, obj, synthetic=synthetic)
        state.deleted.add(uid)
        state.alive.pop(uid, None)
        state.seen[uid] = version or ""

    def _note(self, event: str, resource: str, version: str | None, detail: str) -> None:
        payload: dict[str, Any] = {"event": event, "resource": resource, "resource_version": version}
        if detail:
            payload["detail"] = detail
        try:
            self.writer.write_action("watch", payload)
        except EvidenceError:
            if not self._stop.is_set():  # the log was closed under a running watcher: that is a bug, say so
                raise

    def _close_streams(self) -> None:
        with self._lock:
            responses = list(self._responses.values())
        for response in responses:
            try:
                sock = getattr(getattr(response, "connection", None), "sock", None)
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked reading the stream
                response.close()
            except Exception:  # closing a half-dead socket may fail any way it likes
                pass
