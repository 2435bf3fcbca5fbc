"""The emulated kubelets over real HTTP against the fake API server with a kubelet's writes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hivedlab.backends.watcher import make_api_client
from hivedlab.lab_group.inventory import load_inventory
from hivedlab.rehearsal.kubelet import NOT_READY_TAINT, Worker
from hivedlab.rehearsal.kubelet_loop import Api, Kubelets, read_faults, update_faults, workers_of
from tests.support.k8s_server import KUBECONFIG
from tests.support.k8s_writes import WritableApiServer


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[WritableApiServer, Api]]:
    with WritableApiServer() as server:
        config = tmp_path / "kubeconfig"
        config.write_text(KUBECONFIG.format(url=server.url), encoding="utf-8")
        yield server, Api(make_api_client(str(config)))


def bound_pod(server: WritableApiServer, name: str, node: str, command: str) -> dict[str, Any]:
    return server.add("pods", name, spec={
        "nodeName": node, "initContainers": [{"name": "init", "env": [{"name": "USER_CMD", "value": command}]}],
        "containers": [{"name": "app", "image": "ubuntu"}]}, status={"phase": "Pending"})


def test_register_creates_each_node_and_lifts_the_not_ready_taint(api: tuple[WritableApiServer, Api],
                                                                  tmp_path: Path) -> None:
    server, client = api
    kubelets = Kubelets(client, {"w1": Worker("w1", "10.0.0.1", 2)}, faults=tmp_path / "faults.json", clock=Clock())
    kubelets.register()
    kubelets.register()  # a second time: 409, still fine
    node = server.find("nodes", "w1")
    assert node is not None and node["status"]["capacity"]["nvidia.com/gpu"] == "2"
    uid = node["metadata"]["uid"]
    server.modify("nodes", uid, spec={"taints": [{"key": NOT_READY_TAINT, "effect": "NoSchedule"}]})
    kubelets.run_once()
    node = server.find("nodes", "w1")
    assert node is not None and node["spec"]["taints"] == []
    assert node["status"]["conditions"][0]["status"] == "True"


def test_a_pod_runs_its_sleep_divided_by_the_speedup_then_succeeds(api: tuple[WritableApiServer, Api]) -> None:
    server, client = api
    clock = Clock()
    kubelets = Kubelets(client, {"w1": Worker("w1", "10.0.0.1", 1)}, speedup=10, clock=clock)
    bound_pod(server, "job-a-0", "w1", "sleep 100")
    assert kubelets.run_once() == ["start job-a-0"]
    pod = server.find("pods", "job-a-0")
    assert pod is not None and pod["status"]["phase"] == "Running"
    assert pod["status"]["containerStatuses"][0]["containerID"].startswith("emulated://")
    clock.now += 9
    assert kubelets.run_once() == []
    clock.now += 1
    assert kubelets.run_once() == ["finish job-a-0 0"]
    pod = server.find("pods", "job-a-0")
    assert pod is not None and pod["status"]["phase"] == "Succeeded"


def test_graceful_deletion_ends_with_143_and_the_pod_goes(api: tuple[WritableApiServer, Api]) -> None:
    server, client = api
    kubelets = Kubelets(client, {"w1": Worker("w1", "10.0.0.1", 1)}, clock=Clock())
    bound_pod(server, "job-b-0", "w1", "sleep 1000")
    kubelets.run_once()
    status, _ = client.call("DELETE", "/api/v1/namespaces/default/pods/job-b-0", {"gracePeriodSeconds": 30})
    assert status == 200
    assert kubelets.run_once() == ["finish job-b-0 143"]
    pod = server.find("pods", "job-b-0")
    assert pod is not None
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 143
    assert kubelets.run_once() == ["delete job-b-0"]
    assert server.find("pods", "job-b-0") is None
    assert server.deletes[-1][1]["gracePeriodSeconds"] == 0


def test_injected_failures_reach_the_running_emulator(api: tuple[WritableApiServer, Api], tmp_path: Path) -> None:
    server, client = api
    faults = tmp_path / "faults.json"
    clock = Clock()
    kubelets = Kubelets(client, {"w1": Worker("w1", "10.0.0.1", 1), "w2": Worker("w2", "10.0.0.2", 1)},
                        faults=faults, clock=clock)
    update_faults(faults, ["w2"], [], {"job-c": 7})
    bound_pod(server, "job-c-0", "w1", "sleep 1")
    bound_pod(server, "job-d-0", "w2", "sleep 1")
    assert kubelets.run_once() == ["start job-c-0"]
    node = server.find("nodes", "w2")
    assert node is None  # never registered here: the readiness patch found no node
    clock.now += 1
    assert kubelets.run_once() == ["finish job-c-0 7"]
    assert read_faults(faults).not_ready == frozenset({"w2"})
    assert update_faults(faults, [], ["w2"], {}).not_ready == frozenset()
    assert update_faults(faults, [], [], {}, clear=True).exit_codes == {}


def test_the_example_groups_workers_and_master_become_nodes() -> None:
    nodes = workers_of(load_inventory(None))
    assert {n: (w.gpus, w.master) for n, w in nodes.items()} == {
        "hostname-carol": (1, False), "hostname-dan": (1, False), "hostname-bob": (0, True)}


class RecordingApi:
    """An `Api` that answers the pod list with pods of two namespaces and records every other call."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.calls: list[tuple[str, str]] = []

    def call(self, method: str, path: str, body: Any = None, content_type: str = "", query: Any = None) -> Any:
        if method == "GET" and path == "/api/v1/pods":
            return 200, {"items": self.pods}
        self.calls.append((method, path))
        return (404, None) if method == "GET" else (200, {})


def test_pods_of_every_namespace_are_run_where_they_live() -> None:
    """OpenPAI's pods live in `default`, a Kubeflow run's in a namespace of its own (hivedlab-kubeflow-gang-...)."""
    pods = [{"metadata": {"name": name, "namespace": namespace, "uid": name},
             "spec": {"nodeName": "w1", "containers": [{"name": "tensorflow", "args": ["sleep", "5"]}]},
             "status": {"phase": "Pending"}}
            for name, namespace in (("fw-train-0", "default"), ("tfjob-worker-0", "hivedlab-kubeflow-gang-x"))]
    api = RecordingApi(pods)
    kubelets = Kubelets(api, {"w1": Worker("w1", "10.0.0.1", 1)}, clock=Clock())  # type: ignore[arg-type]
    assert kubelets.run_once() == ["start fw-train-0", "start tfjob-worker-0"]
    patched = [path for method, path in api.calls if method == "PATCH" and "/pods/" in path]
    assert patched == ["/api/v1/namespaces/default/pods/fw-train-0/status",
                       "/api/v1/namespaces/hivedlab-kubeflow-gang-x/pods/tfjob-worker-0/status"]
