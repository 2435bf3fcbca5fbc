"""Every backend offers the whole `hivedlab.backends.protocol.Backend`: each one opened as the runner opens it
(`hivedlab.runner.backends.backend_factory`), the real ones against the local fakes of their clusters, then driven
through a job's life: what it learnt (`run_info`), its time, a config switch (the config the cluster then answers
with), submit, status, wait, stop, and a close that ends what it started."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from hivedlab.backends.pai.backend import config_vcs
from hivedlab.backends.pai.hived_inspect import fetch_vcs
from hivedlab.backends.protocol import Backend, RunInfo
from hivedlab.backends.sim.cluster import SimCluster
from hivedlab.basics.errors import HivedlabError
from hivedlab.evidence import EMULATED_NODE_LABEL, EvidenceWriter
from hivedlab.lab_group.inventory import load_inventory
from hivedlab.lab_group.layouts import plan_layout
from hivedlab.models.kubeflow.manifests import for_run
from hivedlab.plans.loader import Plan, load_plan
from hivedlab.rehearsal.settings import ENV_HOME
from hivedlab.runner import k8s_plans
from hivedlab.runner.backends import Opening, backend_factory
from tests.support.fakecluster import FakeCluster
from tests.support.fakekubeflow import FakeKubeflow
from tests.support.fakepai import FakePai
from tests.support.k8s_crd_server import KUBE_BATCH_CRDS, FakeKubeApi
from tests.support.k8s_server import KUBECONFIG, FakeApiServer
from tests.support.open_sockets import connections_to
from tests.support.pai_world import StubHived, job
from tests.support.paths import ROOT

INVENTORY = load_inventory()
CONFIG = plan_layout("two-vc", INVENTORY).text
VCS = config_vcs(CONFIG)
TFJOB = (ROOT / "jobs" / "kubeflow" / "kube-batch" / "tfjob-gang-1.yaml").read_text(encoding="utf-8")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def _nothing(name: str) -> None:
    """What a switcher does on a cluster that does not use it."""


def _no_hived() -> set[str]:
    return set()


@dataclass
class Case:
    """One backend as the runner opened it, and what the test expects of it."""

    backend: Backend
    protocol: Callable[[str], tuple[str, str]]  # a job name -> (what to submit, the name on the cluster)
    learnt: RunInfo
    switches: bool | None  # takes a config switcher and uses it (True), ignores it (False), refuses it (None)
    virtual: bool  # waits on virtual time: `advance_until` moves `now` by exactly the time it waited
    threads: frozenset[threading.Thread]  # those alive before the backend opened: any other is the backend's
    servers: frozenset[int] = frozenset()  # the ports of the fake servers it talks to
    on_switch: Callable[[str], None] = _nothing  # what the switcher does to the cluster (the admin's part)
    hived_vcs: Callable[[], set[str]] = _no_hived  # the VCs the cluster's HiveD answers with now (its inspect API)
    switched: list[str] = field(default_factory=list)
    closed: bool = False

    def switcher(self, name: str) -> str | None:
        self.switched.append(name)
        self.on_switch(name)
        return None


@contextmanager
def _opened(cluster: str, opening: Opening, plan: Plan, out: Path
            ) -> Iterator[tuple[Backend, frozenset[threading.Thread]]]:
    """The backend the runner's factory gives for `plan`, writing the plan's log under `out`, and the threads alive
    before it opened."""
    with EvidenceWriter(out / "experiments" / plan.run_id / "evidence.jsonl",
                        "sim" if cluster == "sim" else "k8s") as writer:
        before = frozenset(threading.enumerate())
        yield backend_factory(cluster, opening)(plan, writer), before


def _ports(*urls: str) -> frozenset[int]:
    return frozenset(port for port in (urlsplit(url).port for url in urls) if port is not None)


def _protocol(name: str) -> tuple[str, str]:
    return job(name), name


@contextmanager
def _sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, serve: Any) -> Iterator[Case]:
    with _opened("sim", Opening(INVENTORY, seed=1), load_plan("gang"), tmp_path) as (backend, before):
        assert isinstance(backend, SimCluster)
        sim = backend
        yield Case(backend, _protocol, RunInfo(), switches=False, virtual=True, threads=before,
                   hived_vcs=lambda: set(sim.scheduler.listed_vcs()) if sim.scheduler else set())


@contextmanager
def _pai(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, serve: Any) -> Iterator[Case]:
    """The fake rest-server, HiveD showing only the default VC (the switcher puts the config's in place), the fake
    API server with one emulated node (a rehearsal cluster, though not one this machine runs) and the fake cluster
    behind them, in the environment `hivedlab run --cluster pai` reads."""
    pai, hived = FakePai(serve), StubHived(serve, vcs=("default",))
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice: {pai.token('alice')}\nbob: {pai.token('bob')}\n")
    tokens.chmod(0o600)
    with FakeApiServer() as api:
        api.add("nodes", "hostname-carol", labels={EMULATED_NODE_LABEL: "true"})
        api.add("nodes", "hostname-dan")
        cluster = FakeCluster(pai, api, run_ticks=10_000)
        (tmp_path / "kubeconfig").write_text(KUBECONFIG.format(url=api.url))
        for key, value in {"HIVEDLAB_PAI_URL": pai.url, "HIVEDLAB_HIVED_URL": hived.server.url,
                           "HIVEDLAB_PAI_TOKEN_FILE": str(tokens), "KUBECONFIG": str(tmp_path / "kubeconfig"),
                           "HIVEDLAB_PAI_POLL_S": "0.02", ENV_HOME: str(tmp_path / "no-rehearsal")}.items():
            monkeypatch.setenv(key, value)
        for key in ("HIVEDLAB_PAI_TOKEN", "HIVEDLAB_KUBE_CONTEXT"):
            monkeypatch.delenv(key, raising=False)

        def admin(name: str) -> None:  # what `hivedlab rehearsal switch NAME` does
            hived.vcs = sorted(config_vcs(plan_layout(name, INVENTORY).text))

        try:
            with _opened("pai", Opening(INVENTORY), load_plan("priority"), tmp_path / "out") as (backend, before):
                yield Case(backend, _protocol, RunInfo("v1.2.0", emulated_nodes=("hostname-carol",)), switches=True,
                           virtual=False, threads=before, servers=_ports(pai.url, hived.server.url, api.url),
                           on_switch=admin, hived_vcs=lambda: set(fetch_vcs(hived.server.url)))
        finally:
            cluster.close()


@contextmanager
def _k8s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, serve: Any) -> Iterator[Case]:
    """The fake API server with the kube-batch form's CRDs and four single-GPU nodes, the fake operator and
    scheduler ticking behind it."""
    monkeypatch.setenv("HIVEDLAB_K8S_POLL_S", "0.02")
    with FakeKubeApi(KUBE_BATCH_CRDS) as api:
        world = FakeKubeflow(api, run_ticks=10_000)
        world.run_in_background(0.02)
        (tmp_path / "kubeconfig").write_text(api.kubeconfig(), encoding="utf-8")
        plans, form = k8s_plans([load_plan("kubeflow-gang")], "kube-batch", None)
        opening = Opening(INVENTORY, form=form, run_tag="20261129t000000", kubeconfig=str(tmp_path / "kubeconfig"))
        try:
            with _opened("k8s", opening, plans[0], tmp_path / "out") as (backend, before):
                yield Case(backend, lambda name: for_run(TFJOB, name, gang=True),
                           RunInfo(gpu_nodes={f"k8s-g{i}": 1 for i in range(1, 5)}), switches=None, virtual=False,
                           threads=before, servers=_ports(api.url))
        finally:
            world.stop()


OPENERS = {"sim": _sim, "pai": _pai, "k8s": _k8s}


@pytest.fixture(params=sorted(OPENERS))
def case(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, serve: Any) -> Iterator[Case]:
    with OPENERS[request.param](tmp_path, monkeypatch, serve) as opened:
        assert opened.backend.cluster == request.param
        try:
            yield opened
        finally:
            if not opened.closed:  # the test failed before it closed the backend
                opened.backend.close()


def _elapsed(before: str, after: str) -> float:
    return (datetime.strptime(after, TIME_FORMAT) - datetime.strptime(before, TIME_FORMAT)).total_seconds()


def _left_open(case: Case, within_s: float = 10.0) -> list[str]:
    """What the backend opened and `close` left open: its threads (the watcher and its streams) and its connections
    to the fake servers, after `within_s` for a stream to notice. The fake servers' own request threads are not the
    backend's: a fake's watch handler notices a closed stream only when it next writes."""
    deadline = time.monotonic() + within_s
    while True:
        left = [t.name for t in threading.enumerate()
                if t not in case.threads and t.is_alive() and not t.name.endswith("(process_request_thread)")]
        left += [f"a connection to port {port}" for port in connections_to(case.servers)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def test_a_backend_offers_the_whole_protocol(case: Case) -> None:
    backend = case.backend
    assert isinstance(backend, Backend)
    assert backend.run_info == case.learnt

    if case.switches is None:
        with pytest.raises(HivedlabError, match="runs no HiveD"):
            backend.use_config_switcher(case.switcher)
    else:
        assert case.hived_vcs() != VCS
        backend.use_config_switcher(case.switcher)
        backend.switch_config("two-vc", CONFIG)
        assert case.switched == (["two-vc"] if case.switches else [])
        assert case.hived_vcs() == VCS  # the cluster now answers with the config's VCs

    protocol, name = case.protocol("conformance-alice")
    result = backend.submit("alice", "job", protocol)
    assert result.accepted and result.user == "alice" and result.job_name == name
    assert backend.job_status("alice", name).state != "UNKNOWN"
    assert backend.advance_until(lambda: backend.job_status("alice", name).ran, 120)
    assert backend.stop("alice", name).ok
    assert backend.advance_until(lambda: backend.job_status("alice", name).state == "STOPPED", 120)
    assert backend.job_status("bob", "never-submitted").state == "UNKNOWN"

    before = backend.now()
    assert backend.advance_until(lambda: False, 0.25) is False
    waited = _elapsed(before, backend.now())
    assert waited == 0.25 if case.virtual else waited >= 0.25
    backend.close()
    case.closed = True
    assert _left_open(case) == []
