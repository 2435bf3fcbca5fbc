"""HiveD restarts on the simulated cluster: crash recovery and work-preserving reconfiguration re-add the bound
pods (docs/hived-model.md, "Restart and recovery")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hivedlab.backends.sim.settings import SimSettings
from hivedlab.lab_group.layouts import render_hived_config
from hivedlab.models.openpai import naming
from tests.support.simkit import INVENTORY, binds, events, job_text, new_cluster, read_log

FW = naming.framework_name


def _groups(sim: Any) -> dict[str, dict[str, Any]]:
    return {g["metadata"]["name"]: g["status"] for g in sim.scheduler.affinity_groups()["items"] or []}


def test_restart_re_adds_bound_pods_and_forgets_the_preemption(tmp_path: Path) -> None:
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "two-vc", settings=SimSettings(grace_s=30.0))
    assert sim.submit("alice", "low", job_text("job-config-1.yaml", "low")).accepted
    assert sim.advance_until(lambda: sim.job_status("alice", "low").ran, 60)
    assert sim.submit("alice", "high", job_text("job-config-2.yaml", "high")).accepted
    assert sim.advance_until(lambda: bool(events(read_log(log), "Preempted")), 60)
    low_group, high_group = "alice~low/default", "alice~high/default"
    assert _groups(sim)[low_group]["state"] == "BeingPreempted" and _groups(sim)[high_group]["state"] == "Preempting"
    sim.restart_hived()
    groups = _groups(sim)
    assert set(groups) == {low_group} and groups[low_group]["state"] == "Allocated"  # the victim is still bound
    assert groups[low_group]["physicalPlacement"] == {"hostname-dan": [0]}
    assert sim.advance_until(lambda: sim.job_status("alice", "high").ran, 120)
    assert [node for _, name, node in binds(read_log(log)) if name.startswith(FW("alice", "high"))] == ["hostname-dan"]


def test_reconfiguration_keeps_a_running_job_and_demotes_it_when_its_vc_is_gone(tmp_path: Path) -> None:
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "two-vc")
    assert sim.submit("alice", "low", job_text("job-config-1.yaml", "low")).accepted
    assert sim.advance_until(lambda: sim.job_status("alice", "low").ran, 60)
    sim.switch_config("one-vc", render_hived_config("one-vc", INVENTORY))  # vc1 no longer exists
    low_group = "alice~low/default"
    status = _groups(sim)[low_group]
    assert status["state"] == "Allocated" and status["physicalPlacement"] == {"hostname-dan": [0]}
    assert "virtualPlacement" not in status and status["lazyPreemptionStatus"]["preemptor"] == low_group
    assert sim.job_status("alice", "low").state == "RUNNING"
    # the demoted job runs as an opportunistic one: the default VC's first job avoids it, the second preempts it
    assert sim.submit("bob", "first", job_text("job-config-5.yaml", "first")).accepted
    assert sim.advance_until(lambda: sim.job_status("bob", "first").ran, 60)
    assert sim.submit("bob", "second", job_text("job-config-5.yaml", "second")).accepted
    assert sim.advance_until(lambda: sim.job_status("bob", "second").ran, 120)
    seen = read_log(log)
    placed = {name[:32]: node for _, name, node in binds(seen)}
    assert placed[FW("bob", "first")] == "hostname-carol" and placed[FW("bob", "second")] == "hostname-dan"
    assert [e.name for e in events(seen, "Preempted")] == [f"{FW('alice', 'low')}-train-0"]
