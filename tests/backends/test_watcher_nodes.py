"""The watcher's Node records (the OpenPAI backend's `PAI_RESOURCES`): each node when listed, then only a change of its
Ready condition or of `spec.unschedulable` (what HiveD reads to count it bad), never a heartbeat nor the taint the
node lifecycle controller keeps in step with a cordon; a cluster that serves the user no Nodes records none and says
so."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.backends.watcher import PAI_RESOURCES, Watcher, node_health
from hivedlab.checker.judging.timeline import build_timeline
from hivedlab.checker.judging.timeline.nodes import cordoned
from hivedlab.evidence import read_evidence
from tests.backends.test_watcher import _run, _wait, _watch_events
from tests.support import k8s_server
from tests.support.k8s_server import FakeApiServer
from tests.support.records import object_of


def _status(ready: str, heartbeat: str) -> dict:
    return {"conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady" if ready == "True" else
                            "KubeletNotReady", "lastHeartbeatTime": heartbeat, "lastTransitionTime": heartbeat}]}


def _node_records(log: Path) -> list[tuple[str, str | None, bool]]:
    return [(str(r.watch_type), *node_health(object_of(r))) for r in read_evidence(log).records
            if r.kind == "object" and r.resource == "nodes"]


@pytest.fixture
def server():
    with FakeApiServer() as api:
        yield api


def test_a_nodes_readiness_changes_are_recorded_and_its_heartbeats_are_not(server: FakeApiServer,
                                                                          tmp_path: Path) -> None:
    log = tmp_path / "watch.jsonl"
    dan = server.add("nodes", "hostname-dan", status=_status("True", "t0"))["metadata"]["uid"]

    def script(w: Watcher) -> None:
        _wait(lambda: _node_records(log))
        server.modify("nodes", dan, status=_status("True", "t1"))  # a heartbeat
        server.modify("nodes", dan, status=_status("False", "t2"))
        server.modify("nodes", dan, status=_status("False", "t3"))  # a heartbeat while NotReady
        server.modify("nodes", dan, spec={"unschedulable": True}, status=_status("False", "t3"))  # cordoned
        server.modify("nodes", dan, spec={"unschedulable": True}, status=_status("True", "t4"))
        _wait(lambda: len(_node_records(log)) == 4)

    _run(server, log, script, resources=PAI_RESOURCES)
    assert _node_records(log) == [("LISTED", "True", False), ("MODIFIED", "False", False),
                                  ("MODIFIED", "False", True), ("MODIFIED", "True", True)]


def test_a_cordon_is_recorded_as_kubectl_sets_and_clears_it_and_the_checker_folds_those_records(
        server: FakeApiServer, tmp_path: Path) -> None:
    """`kubectl cordon` sets `spec.unschedulable`; the node lifecycle controller then adds the
    `node.kubernetes.io/unschedulable` taint (nothing the watcher follows: not recorded); `kubectl uncordon` removes the
    field (recorded, the taint still there), then the controller the taint (not recorded). The checker reads the
    cordon from the two recorded changes, the field the watcher compares (`node_health`)."""
    log = tmp_path / "watch.jsonl"
    taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-11-29T05:01:26Z"}
    dan = server.add("nodes", "hostname-dan", spec={}, status=_status("True", "t0"))["metadata"]["uid"]

    def script(w: Watcher) -> None:
        _wait(lambda: _node_records(log))
        server.modify("nodes", dan, spec={"unschedulable": True})  # kubectl cordon
        server.modify("nodes", dan, spec={"unschedulable": True, "taints": [taint]})  # the controller's taint
        server.modify("nodes", dan, spec={"taints": [taint]})  # kubectl uncordon: the field removed
        server.modify("nodes", dan, spec={})  # the controller removes the taint
        _wait(lambda: len(_node_records(log)) == 3)

    _run(server, log, script, resources=PAI_RESOURCES)
    assert _node_records(log) == [("LISTED", "True", False), ("MODIFIED", "True", True), ("MODIFIED", "True", False)]
    nodes = [r for r in read_evidence(log).records if r.kind == "object" and r.resource == "nodes"]
    assert [cordoned(object_of(r)) for r in nodes] == [node_health(object_of(r))[1] for r in nodes]
    assert "taints" not in object_of(nodes[1])["spec"] and object_of(nodes[2])["spec"] == {"taints": [taint]}
    (cordon,) = build_timeline(read_evidence(log).records).node_cordons
    assert cordon.node == "hostname-dan" and cordon.start is not None and cordon.end is not None
    assert (cordon.start.seq, cordon.end.seq) == (nodes[1].seq, nodes[2].seq)


def test_without_nodes_in_its_resources_the_watcher_records_none(server: FakeApiServer, tmp_path: Path) -> None:
    log = tmp_path / "watch.jsonl"
    server.add("nodes", "hostname-dan", status=_status("True", "t0"))
    _run(server, log, lambda w: _wait(lambda: w.wait_ready(5) and _watch_events(log, "listed", "frameworks")))
    assert _node_records(log) == []


def test_a_cluster_that_serves_no_nodes_records_none_and_warns(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    log = tmp_path / "watch.jsonl"
    monkeypatch.setattr(k8s_server, "PATHS", {p: r for p, r in k8s_server.PATHS.items() if r != "nodes"})
    warnings: list[str] = []
    with FakeApiServer() as server:
        def script(w: Watcher) -> None:
            assert w.wait_ready(5)  # the nodes do not hold the run up
            _wait(lambda: _watch_events(log, "unavailable", "nodes"))

        _run(server, log, script, resources=PAI_RESOURCES, on_warning=warnings.append)
    assert any("does not serve this account its nodes (HTTP 404)" in w for w in warnings)
    assert _node_records(log) == []
