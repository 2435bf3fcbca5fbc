"""The simulated kube-scheduler v1.14 with HiveD as its extender: filter first, preempt only without a bind, no
second preemption while victims terminate, victims gone before the preemptor binds, FailedScheduling repeats
counted on one event (docs/kubernetes-scheduling.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hivedlab.backends.sim import SimCluster
from hivedlab.backends.sim.settings import SimSettings
from hivedlab.models import hived
from hivedlab.models.openpai import naming
from tests.support.simkit import binds, event_counts, events, job_text, new_cluster, read_log

FW = naming.framework_name


class _Spy:
    """Wraps the HiveD model and records (pod, phase, result kind) for every schedule call."""

    def __init__(self, scheduler: Any) -> None:
        self.inner = scheduler
        self.calls: list[tuple[str, str, str]] = []

    def schedule(self, pod: Any, spec: Any, nodes: Any, phase: str) -> Any:
        result = self.inner.schedule(pod, spec, nodes, phase)
        self.calls.append((pod.name, phase, type(result).__name__))
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _preemption(tmp_path: Path, grace_s: float = 2.0) -> tuple[SimCluster, _Spy, Path]:
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "two-vc", settings=SimSettings(grace_s=grace_s))
    spy = _Spy(sim.scheduler)
    sim.scheduler = spy
    assert sim.submit("alice", "low", job_text("job-config-1.yaml", "low")).accepted
    assert sim.advance_until(lambda: sim.job_status("alice", "low").ran, 60)
    assert sim.submit("alice", "high", job_text("job-config-2.yaml", "high")).accepted
    return sim, spy, log


def test_filter_first_and_preempt_only_without_a_bind(tmp_path: Path) -> None:
    sim, spy, _ = _preemption(tmp_path)
    assert sim.advance_until(lambda: sim.job_status("alice", "high").finished, 3600)
    assert any(phase == hived.PHASE_PREEMPTING for _, phase, _ in spy.calls)
    for pod in {name for name, _, _ in spy.calls}:
        calls = [(phase, kind) for name, phase, kind in spy.calls if name == pod]
        assert calls[0][0] == hived.PHASE_FILTERING
        for before, (phase, _) in zip(calls, calls[1:], strict=False):
            if phase == hived.PHASE_PREEMPTING:
                assert before[0] == hived.PHASE_FILTERING and before[1] != "Bind"
        assert calls[-1] == (hived.PHASE_FILTERING, "Bind")


def test_victims_are_deleted_before_the_preemptor_binds(tmp_path: Path) -> None:
    sim, _, log = _preemption(tmp_path)
    assert sim.advance_until(lambda: sim.job_status("alice", "high").ran, 600)
    seen = read_log(log)
    low_pod, high_pod = f"{FW('alice', 'low')}-train-0", f"{FW('alice', 'high')}-train-0"
    deleting = next(s.seq for s in seen if s.resource == "pods" and s.name == low_pod
                    and s.obj["metadata"].get("deletionTimestamp"))
    preempted = events(seen, "Preempted", low_pod)[0].seq
    gone = next(s.seq for s in seen if s.resource == "pods" and s.name == low_pod and s.watch == "DELETED")
    nominated = next(s.seq for s in seen if s.resource == "pods" and s.name == high_pod
                     and s.obj["status"].get("nominatedNodeName") == "hostname-dan")
    bound = next(s.seq for s in seen if s.resource == "pods" and s.name == high_pod and s.obj["spec"].get("nodeName"))
    assert nominated < deleting < preempted < gone < bound
    assert [name for _, name, _ in binds(seen)][:2] == [low_pod, high_pod]


def test_no_second_preemption_while_victims_terminate_and_repeats_bump_the_count(tmp_path: Path) -> None:
    sim, spy, log = _preemption(tmp_path, grace_s=30.0)
    high_pod = f"{FW('alice', 'high')}-train-0"
    assert sim.advance_until(lambda: any(kind == "Preempt" and phase == hived.PHASE_PREEMPTING
                                         for _, phase, kind in spy.calls), 60)
    before = len(spy.calls)
    for _ in range(3):  # scheduling attempts while the victim is still terminating
        sim._schedule_round()
    during = [(phase, kind) for name, phase, kind in spy.calls[before:] if name == high_pod]
    assert during == [(hived.PHASE_FILTERING, "Preempt")] * 3  # HiveD's preempt is not asked again
    seen = read_log(log)
    counts = event_counts(seen, "FailedScheduling", high_pod)
    assert len(events(seen, "FailedScheduling", high_pod)) == 1 and list(counts.values()) == [4]
    assert [s.watch for s in seen if s.resource == "events" and s.name == high_pod] == ["ADDED"] + ["MODIFIED"] * 3
    assert sim.advance_until(lambda: sim.job_status("alice", "high").ran, 600)
