"""The Framework states the simulator writes, one status update per state FrameworkController v0.8.0 writes
(pkg/controller/controller.go `syncFrameworkState`), as the rehearsal cluster's FrameworkController showed them
(docs/simulator-vs-rehearsal.md): the ConfigMap's creation and deletion requests, AttemptCompleted before Completed,
and Completed once."""

from __future__ import annotations

from pathlib import Path

from hivedlab.models.openpai import naming
from tests.support.simkit import framework_states, job_text, new_cluster, read_log


def _states(log: Path, user: str, name: str) -> list[str]:
    out: list[str] = []
    for state, _ in framework_states(read_log(log), naming.framework_name(user, name)):
        if not out or out[-1] != state:
            out.append(state)
    return out


def test_a_job_that_succeeds(tmp_path: Path) -> None:
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "two-vc")
    assert sim.submit("alice", "one", job_text("job-config-1.yaml", "one")).accepted
    assert sim.advance_until(lambda: sim.job_status("alice", "one").finished, 3600)
    assert _states(log, "alice", "one") == [
        "AttemptCreationPending", "AttemptCreationRequested", "AttemptPreparing", "AttemptRunning",
        "AttemptDeletionPending", "AttemptDeletionRequested", "AttemptCompleted", "Completed"]
    completed = [s for s, _ in framework_states(read_log(log), naming.framework_name("alice", "one"))
                 if s == "Completed"]
    assert completed == ["Completed"]  # written once


def test_a_preempted_job_retries_through_the_same_states(tmp_path: Path) -> None:
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "two-vc")
    assert sim.submit("alice", "low", job_text("job-config-1.yaml", "low")).accepted
    assert sim.advance_until(lambda: sim.job_status("alice", "low").ran, 60)
    assert sim.submit("alice", "high", job_text("job-config-2.yaml", "high")).accepted
    assert sim.advance_until(lambda: sim.job_status("alice", "low").finished, 3600)
    once = ["AttemptCreationPending", "AttemptCreationRequested", "AttemptPreparing", "AttemptRunning",
            "AttemptDeletionPending", "AttemptDeletionRequested", "AttemptCompleted"]
    assert _states(log, "alice", "low") == [*once, *once, "Completed"]


def test_a_stopped_job(tmp_path: Path) -> None:
    sim, _ = new_cluster(tmp_path / "e.jsonl", "two-vc")
    sim.submit("alice", "a", job_text("job-config-3.yaml", "long"))
    assert sim.advance_until(lambda: sim.job_status("alice", "long").ran, 60)
    sim.stop("alice", "long")
    assert sim.advance_until(lambda: sim.job_status("alice", "long").finished, 60)
    assert _states(tmp_path / "e.jsonl", "alice", "long")[-4:] == [
        "AttemptDeletionPending", "AttemptDeletionRequested", "AttemptCompleted", "Completed"]
    assert sim.job_status("alice", "long").state == "STOPPED"
