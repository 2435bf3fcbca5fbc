"""The simulated cluster's Kubernetes + FrameworkController + rest-server mechanics (on the lab's 1-GPU nodes, where
the HiveD model's decisions are the lab's; its own fidelity is tested in tests/models/hived/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.backends.sim import SimCluster
from hivedlab.basics.errors import HivedlabError
from hivedlab.models.hived import UserError
from hivedlab.models.openpai import naming
from tests.support.simkit import binds, events, framework_states, job_text, new_cluster, read_log, run_until_idle, waits

FW = naming.framework_name


def _states(sim: SimCluster, user: str, name: str, seconds: float, step: float = 1.0) -> list[str]:
    """The REST state once per virtual `step` seconds (deduplicated), as a poller would see it."""
    seen: list[str] = []
    for _ in range(int(seconds / step)):
        state = sim.job_status(user, name).state
        if not seen or seen[-1] != state:
            seen.append(state)
        sim.advance_until(lambda: False, step)
    return seen


def test_gang_victim_gets_a_new_attempt(tmp_path: Path) -> None:
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "two-vc")
    assert sim.submit("alice", "low", job_text("job-config-1.yaml", "low")).accepted
    assert sim.advance_until(lambda: sim.job_status("alice", "low").ran, 60)
    assert sim.submit("alice", "high", job_text("job-config-2.yaml", "high")).accepted
    states = _states(sim, "alice", "low", 30)
    assert sim.advance_until(lambda: sim.job_status("alice", "low").finished, 3600)
    seen = read_log(log)
    low_pod, high_pod = f"{FW('alice', 'low')}-train-0", f"{FW('alice', 'high')}-train-0"

    preempted = events(seen, "Preempted", low_pod)
    assert len(preempted) == 1 and preempted[0].obj["message"] == f"by default/{high_pod} on node hostname-dan"
    assert binds(seen) == [
        (binds(seen)[0][0], low_pod, "hostname-dan"),
        (binds(seen)[1][0], high_pod, "hostname-dan"),
        (binds(seen)[2][0], low_pod, "hostname-dan"),  # the new attempt, after the prod job ended
    ]
    uids = {s.obj["metadata"]["uid"] for s in seen if s.resource == "pods" and s.name == low_pod}
    assert len(uids) == 2  # same pod name, new uid
    assert waits(seen, low_pod) == ["insufficient capacity when scheduling in VC vc1"]
    fw_states = framework_states(seen, FW("alice", "low"))
    assert (
        ("AttemptCompleted", 0) in fw_states
        and ("AttemptRunning", 1) in fw_states
        and fw_states[-1] == ("Completed", 1)
    )
    completion = next(
        s.obj["status"]["attemptStatus"]["completionStatus"]
        for s in seen
        if s.resource == "frameworks"
        and s.name == FW("alice", "low")
        and s.obj["status"]["state"] == "AttemptCompleted"
    )
    assert completion["code"] == -101 and completion["phrase"] == "PodExternalDeleted"
    assert states[0] == "RUNNING" and "WAITING" in states
    final = sim.job_status("alice", "low")
    assert final.state == "SUCCEEDED" and final.retries == 1
    # the preemptor's own FailedScheduling names the preemptible pod, not a wait reason
    assert waits(seen, high_pod) == []
    assert "has preemptible Pods" in events(seen, "FailedScheduling", high_pod)[0].obj["message"]


def test_non_gang_victim_retries_only_its_task(tmp_path: Path) -> None:
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "one-vc")
    elastic = job_text("job-config-7.yaml", "elastic", ("jobPriorityClass: prod", "jobPriorityClass: test"))
    assert sim.submit("bob", "elastic", elastic).accepted
    assert sim.advance_until(lambda: all(t.node for t in sim.job_status("bob", "elastic").tasks), 60)
    assert sim.submit("bob", "prod", job_text("job-config-5.yaml", "prod")).accepted
    assert sim.advance_until(lambda: sim.job_status("bob", "prod").finished, 3600)
    seen = read_log(log)
    victim = events(seen, "Preempted")[0].name
    fw_states = framework_states(seen, FW("bob", "elastic"))
    assert {attempt for _, attempt in fw_states} == {0}  # the framework attempt survives
    retried = [s for s in seen if s.resource == "pods" and s.name == victim and s.watch == "ADDED"]
    assert [s.obj["metadata"]["annotations"]["FC_TASK_ATTEMPT_ID"] for s in retried] == ["0", "1"]
    index = int(victim.rsplit("-", 1)[1])
    task = next(t for t in sim.job_status("bob", "elastic").tasks if t.index == index)
    assert task.retries == 1 and sim.job_status("bob", "elastic").retries == 0


def test_gang_binds_both_pods_in_one_round_and_first_success_ends_the_job(tmp_path: Path) -> None:
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "one-vc")
    sim.submit("carol", "holder", job_text("job-config-5.yaml", "holder"))
    assert sim.advance_until(lambda: sim.job_status("carol", "holder").ran, 60)
    sim.submit("carol", "gang", job_text("job-config-6.yaml", "gang"))
    assert sim.advance_until(lambda: sim.job_status("carol", "gang").waiting, 60)
    assert not sim.job_status("carol", "gang").ran
    assert sim.advance_until(lambda: sim.job_status("carol", "gang").finished, 3600)
    seen = read_log(log)
    gang = binds(seen, FW("carol", "gang"))
    assert len(gang) == 2 and gang[0][0] == gang[1][0]  # same virtual instant
    assert {node for _, _, node in gang} == {"hostname-carol", "hostname-dan"}
    status = sim.job_status("carol", "gang")
    assert status.state == "SUCCEEDED"
    codes = [t.exit_code for t in status.tasks]
    assert sorted(c for c in codes if c is not None) == [-220, 0] and len(codes) == 2  # the slower task was stopped


def test_rejected_submission_leaves_nothing(tmp_path: Path) -> None:
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "one-vc")
    text = job_text("job-config-6.yaml", "big", ("instances: 2", "instances: 4"))
    result = sim.submit("dan", "big", text)
    assert not result.accepted
    assert result.reply.status == 400
    assert result.reply.body == {
        "code": "InvalidProtocolError",
        "message": "Job requests 4 SKUs, exceeds maximum 2 SKUs in VC default.",
    }
    assert result.framework_name == FW("dan", "big")
    run_until_idle(sim)
    assert read_log(log) == [] and sim.job_status("dan", "big").state == "UNKNOWN"
    accepted = sim.submit("dan", "big", job_text("job-config-7.yaml", "big", ("instances: 2", "instances: 4")))
    assert accepted.reply.status == 202  # non-gang: no quota check (docs/openpai-model.md#quota-check)


def test_duplicate_name_is_a_conflict(tmp_path: Path) -> None:
    sim, _ = new_cluster(tmp_path / "e.jsonl", "two-vc")
    assert sim.submit("alice", "a", job_text("job-config-0.yaml", "same")).reply.status == 202
    again = sim.submit("alice", "a", job_text("job-config-0.yaml", "same"))
    assert again.reply.status == 409 and again.reply.body["message"] == "Job alice~same already exists."
    assert sim.submit("bob", "a", job_text("job-config-0.yaml", "same")).reply.status == 202


def test_stop(tmp_path: Path) -> None:
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "two-vc")
    sim.submit("alice", "a", job_text("job-config-3.yaml", "long"))
    assert sim.advance_until(lambda: sim.job_status("alice", "long").ran, 60)
    reply = sim.stop("alice", "long")
    assert reply.status == 202 and reply.body["message"] == "Execute job alice~long successfully."
    assert sim.job_status("alice", "long").state == "STOPPING"
    assert sim.advance_until(lambda: sim.job_status("alice", "long").finished, 60)
    status = sim.job_status("alice", "long")
    # a stopped task completes with -220 (FrameworkAttemptCompletion): FC v0.8.0 controller.go completeFrameworkAttempt
    assert status.state == "STOPPED" and status.tasks[0].exit_code == -220
    seen = read_log(log)
    assert [s.watch for s in seen if s.resource == "pods"][-1] == "DELETED"
    assert seen[-1].obj["spec"]["executionType"] == "Stop"
    assert sim.stop("alice", "nothing").status == 404


def test_stop_before_the_framework_exists(tmp_path: Path) -> None:
    sim, _ = new_cluster(tmp_path / "e.jsonl", "two-vc")
    sim.submit("alice", "a", job_text("job-config-0.yaml", "early"))
    assert sim.job_status("alice", "early").state == "WAITING"  # the DB's mock status
    sim.stop("alice", "early")
    run_until_idle(sim)
    assert sim.job_status("alice", "early").state == "STOPPED"
    assert not any(s.resource == "pods" for s in read_log(tmp_path / "e.jsonl"))


def _run_priority(log: Path, seed: int) -> list[tuple[str, str]]:
    sim, writer = new_cluster(log, "two-vc", seed=seed)
    sim.submit("alice", "low", job_text("job-config-1.yaml", "low"))
    sim.advance_until(lambda: sim.job_status("alice", "low").ran, 60)
    sim.submit("alice", "high", job_text("job-config-2.yaml", "high"))
    sim.advance_until(lambda: sim.job_status("alice", "low").finished, 3600)
    writer.close()
    return [(name, node) for _, name, node in binds(read_log(log))]


def test_same_seed_same_log_byte_for_byte(tmp_path: Path) -> None:
    first = _run_priority(tmp_path / "a.jsonl", 7)
    second = _run_priority(tmp_path / "b.jsonl", 7)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    other = _run_priority(tmp_path / "c.jsonl", 8)
    assert (tmp_path / "c.jsonl").read_bytes() != (tmp_path / "a.jsonl").read_bytes()
    assert first == second == other  # the seed never changes the decisions


def test_time_only_moves_forward_and_records_are_virtual(tmp_path: Path) -> None:
    _run_priority(tmp_path / "a.jsonl", 3)
    times = [s.time for s in read_log(tmp_path / "a.jsonl")]
    assert times == sorted(times) and times[0].startswith("2026-01-01T08:0")


def test_config_problems_are_one_line_errors(tmp_path: Path) -> None:
    sim = SimCluster(None)
    with pytest.raises(HivedlabError, match="switch_config first"):
        sim.submit("alice", "a", job_text("job-config-0.yaml", "x"))
    with pytest.raises(HivedlabError, match="not valid YAML"):
        sim.switch_config("two-vc", "a: [")
    with pytest.raises(HivedlabError, match="would not load"):
        sim.switch_config("two-vc", "virtualClusters: {vc1: {virtualCells: [{cellType: X.Y, cellNumber: 1}]}}\n")
    with pytest.raises(HivedlabError, match="not a mapping"):
        sim.switch_config("two-vc", "- a list\n")


def test_unknown_vc_pod_waits_with_hived_user_error(tmp_path: Path) -> None:
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "two-vc")

    def broken(*_: object) -> None:
        raise UserError("VC vc1 does not exists!")

    sim.submit("alice", "a", job_text("job-config-0.yaml", "x"))
    sim.scheduler.schedule = broken
    sim.advance_until(lambda: False, 10)
    message = events(read_log(log), "FailedScheduling")[0].obj["message"]
    assert message.startswith("Code: 400, Message: hivedscheduler: User Error: [")
    assert message.endswith("]: filterRoutine: Failed: VC vc1 does not exists!")
    assert sim.job_status("alice", "x").state == "WAITING"


def test_pending_pods_are_retried_in_k8s_priority_order(tmp_path: Path) -> None:
    """With the HiveD model: a later prod job overtakes an earlier waiting test job (K8s queue order,
    docs/openpai-model.md#pods)."""
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "two-vc")
    sim.submit("alice", "a", job_text("job-config-0.yaml", "first-prod"))
    assert sim.advance_until(lambda: sim.job_status("alice", "first-prod").ran, 60)
    sim.submit(
        "bob", "b", job_text("job-config-0.yaml", "early-test", ("jobPriorityClass: prod", "jobPriorityClass: test"))
    )
    sim.submit("carol", "c", job_text("job-config-0.yaml", "late-prod"))
    assert sim.advance_until(lambda: sim.job_status("carol", "late-prod").waiting, 60)
    assert sim.job_status("bob", "early-test").waiting  # equal or lower priority never preempts
    assert sim.advance_until(lambda: sim.job_status("bob", "early-test").finished, 3600)
    order = [name[:32] for _, name, _ in binds(read_log(log))]
    assert order == [FW("alice", "first-prod"), FW("carol", "late-prod"), FW("bob", "early-test")]
    assert events(read_log(log), "Preempted") == []


def test_durations_come_from_commands_or_the_plan(tmp_path: Path) -> None:
    from hivedlab.backends.sim.settings import SimSettings

    settings = SimSettings(container_start_s=(3.0, 3.0), submit_gap_s=(1.0, 1.0), durations={"fixed": 42.0})
    log = tmp_path / "e.jsonl"
    sim, _ = new_cluster(log, "one-vc", settings=settings)
    sim.submit("alice", "fixed", job_text("job-config-5.yaml", "fixed"))
    sim.submit("alice", "commands", job_text("job-config-2.yaml", "by-commands", ("vc1", "default")))
    run_until_idle(sim)
    seen = read_log(log)

    def run_time(framework: str) -> tuple[str, str]:
        phases = {
            s.obj["status"]["phase"]: s.obj["status"]
            for s in seen
            if s.resource == "pods" and s.name.startswith(framework)
        }
        terminated = phases["Succeeded"]["containerStatuses"][0]["state"]["terminated"]
        return terminated["startedAt"], terminated["finishedAt"]

    assert run_time(FW("alice", "fixed")) == ("2026-01-01T08:00:05Z", "2026-01-01T08:00:47Z")  # 1+1+0.5 +3, +42
    started, finished = run_time(FW("alice", "by-commands"))
    assert started == "2026-01-01T08:00:06Z"
    assert "2026-01-01T08:05:57Z" <= finished <= "2026-01-01T08:06:09Z"  # 60 s ± 5 % of training + sleep 5m


def test_unparsable_protocol_is_a_500_without_code(tmp_path: Path) -> None:
    sim, _ = new_cluster(tmp_path / "e.jsonl", "two-vc")
    result = sim.submit("alice", "bad", "name: [unclosed\n")
    assert result.reply.status == 500 and "code" not in result.reply.body and result.reply.body["message"]
    assert result.job_name == "" and result.framework_name == "" and not result.accepted
