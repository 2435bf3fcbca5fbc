"""The watcher against a local Kubernetes API server over real HTTP: every change lands in the log exactly once,
whatever the server does (drops, 410, bookmarks, expired versions, stalls, garbage)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import kubernetes
import pytest

from hivedlab.backends.watcher import Watcher
from hivedlab.evidence import EvidenceWriter, read_evidence
from tests.support.k8s_server import KUBECONFIG, FakeApiServer, Fault
from tests.support.open_sockets import connections_to
from tests.support.records import action_of, object_of


def _client_for(url: str) -> kubernetes.client.ApiClient:
    config = kubernetes.client.Configuration()
    config.host = url
    return kubernetes.client.ApiClient(config)


def _client(server: FakeApiServer) -> kubernetes.client.ApiClient:
    return _client_for(server.url)


def _watcher(server: FakeApiServer, writer: EvidenceWriter, **kwargs) -> Watcher:
    options = {"server_timeout_s": 1, "read_timeout_s": 2, "connect_timeout_s": 1, "backoff": (0.01, 0.05)}
    return Watcher(_client(server), "default", writer, **{**options, **kwargs})


def _recorded(path: Path, resource: str = "pods") -> Counter:
    records = read_evidence(path).records
    return Counter((object_of(r)["metadata"]["uid"], object_of(r)["metadata"]["resourceVersion"]) for r in records
                   if r.kind == "object" and r.resource == resource and r.watch_type != "BOOKMARK" and not r.synthetic)


def _wait(predicate: Callable[[], object], timeout: float = 10.0) -> None:
    """Until `predicate()` is truthy (a condition, or a list that must not be empty)."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for the watcher"
        pause.wait(0.01)


def _exactly_once(path: Path, server: FakeApiServer, resource: str = "pods") -> None:
    got = _recorded(path, resource)
    assert all(count == 1 for count in got.values()), [k for k, c in got.items() if c > 1]
    assert set(got) == server.changes(resource)


def _watch_events(path: Path, event: str, resource: str = "pods") -> list[dict]:
    return [action_of(r) for r in read_evidence(path).records
            if r.action_type == "watch" and action_of(r)["event"] == event and action_of(r).get("resource") == resource]


@pytest.fixture
def server():
    with FakeApiServer() as api:
        yield api


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "watch.jsonl"


def _run(server: FakeApiServer, log: Path, script: Callable[[Watcher], None], **kwargs) -> None:
    with EvidenceWriter(log, "k8s") as writer:
        watcher = _watcher(server, writer, **kwargs)
        watcher.start()
        try:
            script(watcher)
        finally:
            watcher.stop(timeout=5)
    assert read_evidence(log).chain_ok


def test_list_then_watch(server: FakeApiServer, log: Path) -> None:
    pod = server.add("pods", "p0")
    server.add("pods", "not-openpai", labels={"app": "other"})

    def script(w: Watcher) -> None:
        _wait(lambda: len(_recorded(log)) == 1)
        server.modify("pods", pod["metadata"]["uid"], status={"phase": "Running"})
        server.add("events", "e0", involvedObject={"kind": "Pod", "uid": pod["metadata"]["uid"]}, reason="Scheduled")
        server.add("frameworks", "fw0", status={"state": "AttemptRunning"})
        _wait(lambda: len(_recorded(log)) == 2 and len(_recorded(log, "frameworks")) == 1
              and len(_recorded(log, "events")) == 1)

    _run(server, log, script)
    records = read_evidence(log).records
    kinds = [r.watch_type for r in records if r.resource == "pods" and r.kind == "object"]
    assert kinds == ["LISTED", "MODIFIED"]
    assert all(object_of(r)["metadata"]["labels"].get("type") == "kube-launcher-task"
               for r in records if r.resource == "pods")
    assert _watch_events(log, "stopped")


def test_dropped_connection_mid_stream(server: FakeApiServer, log: Path) -> None:
    server.fault("pods", Fault(drop_after=2))

    def script(w: Watcher) -> None:
        _wait(lambda: _watch_events(log, "listed"))
        for i in range(5):
            server.add("pods", f"p{i}")
        _wait(lambda: len(_recorded(log)) == 5)

    _run(server, log, script)
    _exactly_once(log, server)
    assert _watch_events(log, "reconnect")


def test_410_as_error_event_relists(server: FakeApiServer, log: Path) -> None:
    first = server.add("pods", "p0")
    gone = server.add("pods", "p1")

    def script(w: Watcher) -> None:
        _wait(lambda: len(_recorded(log)) == 2)
        with server.cond:  # while the watch is away, p1 is deleted, p0 changes, and that history is compacted
            server.fault("pods", Fault(gone=True))
            server.drop_watches()
            server.delete("pods", gone["metadata"]["uid"])
            server.modify("pods", first["metadata"]["uid"], status={"phase": "Running"})
            server.compact("pods")
        _wait(lambda: _watch_events(log, "gone") and len(_watch_events(log, "listed")) == 2)
        server.add("pods", "p2")
        _wait(lambda: len(_recorded(log)) == 4)

    _run(server, log, script)
    got = _recorded(log)
    assert all(c == 1 for c in got.values())
    deleted = [r for r in read_evidence(log).records if r.watch_type == "DELETED"]
    assert (len(deleted) == 1 and deleted[0].synthetic
            and object_of(deleted[0])["metadata"]["uid"] == gone["metadata"]["uid"])


def test_410_as_http_status_relists(server: FakeApiServer, log: Path) -> None:
    server.add("pods", "p0")

    def script(w: Watcher) -> None:
        _wait(lambda: len(_recorded(log)) == 1)
        with server.cond:
            server.fault("pods", Fault(http_410=True))
            server.drop_watches()
            server.add("pods", "p1")
        _wait(lambda: len(_recorded(log)) == 2 and _watch_events(log, "gone"))

    _run(server, log, script)
    _exactly_once(log, server)


def test_bookmark_recorded_and_used(server: FakeApiServer, log: Path) -> None:
    server.fault("pods", Fault(bookmark=True))

    def script(w: Watcher) -> None:
        _wait(lambda: any(r.watch_type == "BOOKMARK" for r in read_evidence(log).records))
        server.add("pods", "p0")
        _wait(lambda: len(_recorded(log)) == 1)

    _run(server, log, script)
    _exactly_once(log, server)
    assert "allowwatchbookmarks=true" in "".join(server.requests).lower()


def test_expired_resource_version_on_resume(server: FakeApiServer, log: Path) -> None:
    pod = server.add("pods", "p0")
    _run(server, log, lambda w: _wait(lambda: len(_recorded(log)) == 1))
    server.modify("pods", pod["metadata"]["uid"], status={"phase": "Running"})
    server.compact("pods")
    _run(server, log, lambda w: _wait(lambda: len(_recorded(log)) == 2))
    _exactly_once(log, server)
    assert _watch_events(log, "gone")


def test_resume_from_last_resource_version(server: FakeApiServer, log: Path) -> None:
    pod = server.add("pods", "p0")
    _run(server, log, lambda w: _wait(lambda: len(_recorded(log)) == 1))
    server.modify("pods", pod["metadata"]["uid"], status={"phase": "Running"})
    server.delete("pods", pod["metadata"]["uid"])
    _run(server, log, lambda w: _wait(lambda: len(_recorded(log)) == 3))
    _exactly_once(log, server)
    types = [r.watch_type for r in read_evidence(log).records if r.resource == "pods" and r.kind == "object"]
    assert types == ["LISTED", "MODIFIED", "DELETED"]  # replayed from the resume point, not re-listed
    assert [a.get("detail") for a in _watch_events(log, "started")] == [None, "resumed"]


def test_slow_server_read_timeout(server: FakeApiServer, log: Path) -> None:
    server.fault("pods", Fault(stall=1.5))

    def script(w: Watcher) -> None:
        _wait(lambda: _watch_events(log, "listed"))
        server.add("pods", "p0")
        _wait(lambda: len(_recorded(log)) == 1 and _watch_events(log, "reconnect"))
        server.add("pods", "p1")
        _wait(lambda: len(_recorded(log)) == 2)

    _run(server, log, script, read_timeout_s=0.5, server_timeout_s=5)
    _exactly_once(log, server)


def test_garbage_line(server: FakeApiServer, log: Path) -> None:
    server.fault("pods", Fault(garbage_after=1))

    def script(w: Watcher) -> None:
        _wait(lambda: _watch_events(log, "listed"))
        for i in range(3):
            server.add("pods", f"p{i}")
        _wait(lambda: len(_recorded(log)) == 3)

    _run(server, log, script)
    _exactly_once(log, server)
    assert any("garbage" in a.get("detail", "") for a in _watch_events(log, "reconnect"))


def test_cluster_without_frameworks_warns(log: Path) -> None:
    warnings: list[str] = []
    with FakeApiServer(frameworks=False) as server:
        def script(w: Watcher) -> None:
            _wait(lambda: _watch_events(log, "unavailable", "frameworks") and _watch_events(log, "listed"))
            server.add("pods", "p0")
            _wait(lambda: len(_recorded(log)) == 1)

        _run(server, log, script, on_warning=warnings.append)
    assert warnings and "frameworks.frameworkcontroller.microsoft.com" in warnings[0]


def test_user_filter(server: FakeApiServer, log: Path) -> None:
    server.add("pods", "mine", labels={"type": "kube-launcher-task", "userName": "alice"})
    server.add("pods", "theirs", labels={"type": "kube-launcher-task", "userName": "bob"})
    _run(server, log, lambda w: _wait(lambda: len(_recorded(log)) == 1), user="alice")
    names = {object_of(r)["metadata"]["name"] for r in read_evidence(log).records if r.resource == "pods"}
    assert names == {"mine"}


def test_ready_once_listed_then_no_change_is_missed(server: FakeApiServer, log: Path) -> None:
    """A run creates its objects only after `wait_ready`: from then on every change is recorded, none folded into a
    later list (a change made before the first list is seen only as the listed state)."""

    def script(w: Watcher) -> None:
        assert w.wait_ready(10)
        pod = server.add("pods", "p0")
        server.modify("pods", pod["metadata"]["uid"], status={"phase": "Running"})
        _wait(lambda: len(_recorded(log)) == 2)

    _run(server, log, script)
    _exactly_once(log, server)
    kinds = [r.watch_type for r in read_evidence(log).records if r.resource == "pods" and r.kind == "object"]
    assert kinds == ["ADDED", "MODIFIED"]


def test_not_ready_while_the_server_cannot_list(log: Path) -> None:
    with EvidenceWriter(log, "k8s") as writer:
        watcher = Watcher(_client_for("http://127.0.0.1:9"), "default", writer, server_timeout_s=1, read_timeout_s=1,
                          connect_timeout_s=0.2, backoff=(0.05, 0.1))
        try:
            late = watcher.start_listed(0.5)
            assert "had not listed pods, events, frameworks within 0 s" in late and "记录器未能及时列出" in late
            assert not watcher.wait_ready(0.1)
        finally:
            watcher.stop(timeout=5)


def test_no_kubeconfig_outside_a_cluster_says_what_to_pass(monkeypatch, tmp_path):
    """kubernetes itself says only "Service host/port is not set." (its in-cluster fallback)."""
    from hivedlab.backends.watcher import make_api_client
    from hivedlab.basics.errors import HivedlabError

    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(HivedlabError) as caught:
        make_api_client()
    message = str(caught.value)
    assert "Service host/port" not in message and "\n" not in message
    assert "no kubeconfig (~/.kube/config is missing or unusable) and not inside a cluster" in message
    assert "--kubeconfig FILE" in message and "--context NAME" in message and "KUBECONFIG" in message


def _left_connected(port: int, within_s: float = 10.0) -> list[int]:
    """This process's connections to `port`, after `within_s` for a stream the watcher closed to go."""
    deadline = time.monotonic() + within_s
    while (left := connections_to(frozenset({port}))) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def test_a_watcher_leaves_no_connection_open_when_it_stops(server: FakeApiServer, log: Path, tmp_path: Path) -> None:
    """The watcher's client, made from a kubeconfig, holds only the watch streams, which `stop` closes: a run's
    watcher leaves nothing connected to the API server (a leak would grow with each run of a long lab session)."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG.format(url=server.url))
    port = urlsplit(server.url).port or 0
    with EvidenceWriter(log, "k8s") as writer:
        watcher = Watcher(namespace="default", writer=writer, kubeconfig=str(kubeconfig), server_timeout_s=1,
                          read_timeout_s=2, connect_timeout_s=1, backoff=(0.01, 0.05))
        assert watcher.start_listed(10) == ""
        assert connections_to(frozenset({port}))  # it is watching
        watcher.stop(timeout=10)
    assert _left_connected(port) == []
