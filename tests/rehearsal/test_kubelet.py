"""The emulated kubelet's decisions (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hivedlab.rehearsal.kubelet import (
    EMULATED_LABEL,
    GPU_RESOURCE,
    MIN_RUN_S,
    NOT_READY_TAINT,
    SIGTERM_EXIT,
    Action,
    Faults,
    Worker,
    decide,
    finished_status,
    node_object,
    parse_faults,
    rfc3339,
    run_seconds,
    running_status,
    untainted,
    user_commands,
)

WORKERS = {"w1": Worker("w1", "10.0.0.1", 4)}
T0 = 1_800_000_000.0


def pod(phase: str | None = None, node: str | None = "w1", command: str = "sleep 60", **meta: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase} if phase else {}
    if phase == "Running":
        status["startTime"] = rfc3339(T0)
    return {"metadata": {"name": "job-a-0", "uid": "u-1", **meta},
            "spec": {"nodeName": node, "initContainers": [{"name": "init", "env": [{"name": "USER_CMD",
                                                                                       "value": command}]}],
                     "containers": [{"name": "app", "image": "ubuntu"}]},
            "status": status}


@pytest.mark.parametrize(("commands", "speedup", "seconds"), [
    ("sleep 60", 1, 60), ("sleep 2m\nsleep 30", 1, 150), ("sleep 600", 10, 60), ("echo hi", 1, MIN_RUN_S),
    ("sleep 1h", 3600, MIN_RUN_S), ("python3 examples/mnist/main.py --epochs 1\n", 1, 60),
    ("nvidia-smi\npython3 train.py", 2, 30.5),
])
def test_run_seconds_sums_the_sleeps_and_divides_by_the_speedup(commands: str, speedup: float,
                                                                seconds: float) -> None:
    assert run_seconds(commands, speedup) == seconds


def test_a_bound_pending_pod_starts_and_an_unbound_or_foreign_one_is_left_alone() -> None:
    assert decide(pod(), WORKERS, Faults(), T0, 1) == Action("start", "job-a-0")
    assert decide(pod(node=None), WORKERS, Faults(), T0, 1) is None
    assert decide(pod(node="elsewhere"), WORKERS, Faults(), T0, 1) is None


def test_a_running_pod_finishes_when_its_sleep_is_over_with_the_injected_code() -> None:
    running = pod("Running", command="sleep 600")
    assert decide(running, WORKERS, Faults(), T0 + 59, 10) is None
    assert decide(running, WORKERS, Faults(), T0 + 60, 10) == Action("finish", "job-a-0", 0)
    faults = Faults(exit_codes={"job-a": 1})
    assert decide(running, WORKERS, faults, T0 + 60, 10) == Action("finish", "job-a-0", 1)
    running["spec"]["containers"][0]["env"] = [{"name": "PAI_JOB_NAME", "value": "alice~gang-job"}]
    by_job = Faults(exit_codes={"alice~gang": 3})
    assert decide(running, WORKERS, by_job, T0 + 60, 10) == Action("finish", "job-a-0", 3)


def test_graceful_deletion_ends_a_running_container_with_143_then_confirms_the_deletion() -> None:
    deleting = pod("Running", deletionTimestamp=rfc3339(T0))
    assert decide(deleting, WORKERS, Faults(), T0, 1) == Action("finish", "job-a-0", SIGTERM_EXIT)
    assert decide(pod("Failed", deletionTimestamp=rfc3339(T0)), WORKERS, Faults(), T0, 1) == Action("delete",
                                                                                                    "job-a-0")
    assert decide(pod("Succeeded"), WORKERS, Faults(), T0, 1) is None


def test_a_not_ready_node_starts_nothing() -> None:
    assert decide(pod(), WORKERS, Faults(frozenset({"w1"})), T0, 1) is None


def test_statuses_mark_the_containers_as_emulated() -> None:
    started = running_status(pod(), WORKERS["w1"], T0)["status"]
    assert started["phase"] == "Running" and started["hostIP"] == "10.0.0.1"
    assert started["containerStatuses"][0]["containerID"] == "emulated://u-1/app"
    assert started["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    ended = finished_status(pod("Running"), SIGTERM_EXIT, T0 + 5)["status"]
    assert ended["phase"] == "Failed"
    terminated = ended["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"], terminated["startedAt"]) == (143, "Error", rfc3339(T0))


def test_the_node_has_the_gpus_as_capacity_and_the_emulated_label() -> None:
    node = node_object(WORKERS["w1"])
    assert node["status"]["capacity"][GPU_RESOURCE] == "4"
    assert node["metadata"]["labels"][EMULATED_LABEL] == "true" and node["metadata"]["labels"]["pai-worker"] == "true"
    master = node_object(Worker("m", "10.0.0.9", 0, master=True))
    assert master["status"]["capacity"][GPU_RESOURCE] == "0" and master["metadata"]["labels"]["pai-master"] == "true"
    taints = [{"key": NOT_READY_TAINT, "effect": "NoSchedule"}, {"key": "other", "effect": "NoSchedule"}]
    assert untainted({"spec": {"taints": taints}}) == [taints[1]]
    assert untainted({"spec": {"taints": taints[1:]}}) is None


def test_commands_come_from_user_cmd_else_the_command_line() -> None:
    assert user_commands(pod(command="sleep 5")) == "sleep 5"
    bare = {"spec": {"containers": [{"name": "c", "command": ["sleep"], "args": ["7"]}]}}
    assert run_seconds(user_commands(bare), 1) == 7


def test_faults_parse_leniently() -> None:
    assert parse_faults({"not_ready": ["w1"], "exit_codes": {"a": "3"}}) == Faults(frozenset({"w1"}), {"a": 3})
    assert parse_faults(["junk"]) == Faults()


def tf_pod(name: str, task: str, index: int, started: float | None, members: dict[str, int],
           command: str = "python tf_cnn_benchmarks.py") -> dict[str, Any]:
    """A pod as tf-operator v0.5 makes it: TF_CONFIG names every task of the job as `<pod>.<namespace>.svc:2222`."""
    cluster = {kind: [f"{name}-{kind}-{i}.ns.svc:2222" for i in range(count)] for kind, count in members.items()}
    config = {"cluster": cluster, "task": {"type": task, "index": index}, "environment": "cloud"}
    status: dict[str, Any] = {"phase": "Running", "startTime": rfc3339(started)} if started is not None else {}
    return {"metadata": {"name": f"{name}-{task}-{index}", "namespace": "ns", "uid": f"u-{task}-{index}"},
            "spec": {"nodeName": "w1", "containers": [{"name": "tensorflow", "command": command.split(),
                                                       "env": [{"name": "TF_CONFIG", "value": json.dumps(config)}]}]},
            "status": status}


def _by_name(*pods: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}


def test_a_tensorflow_task_trains_only_once_every_task_of_its_cluster_runs() -> None:
    members = {"ps": 1, "worker": 2}
    worker0 = tf_pod("j", "worker", 0, T0, members)
    ps = tf_pod("j", "ps", 0, T0, members)
    waiting = tf_pod("j", "worker", 1, None, members)
    pods = _by_name(worker0, ps, waiting)
    assert decide(worker0, WORKERS, Faults(), T0 + 600, 1, pods) is None  # worker 1 never started: no progress
    late = tf_pod("j", "worker", 1, T0 + 100, members)
    pods = _by_name(worker0, ps, late)
    assert decide(worker0, WORKERS, Faults(), T0 + 159, 1, pods) is None
    assert decide(worker0, WORKERS, Faults(), T0 + 160, 1, pods) == Action("finish", "j-worker-0", 0)
    assert decide(worker0, WORKERS, Faults(), T0 + 160, 1, _by_name(worker0, ps)) is None  # a task gone: waits


def test_a_parameter_server_serves_until_it_is_deleted() -> None:
    members = {"ps": 1, "worker": 1}
    ps, worker = tf_pod("j", "ps", 0, T0, members), tf_pod("j", "worker", 0, T0, members)
    assert decide(ps, WORKERS, Faults(), T0 + 86400, 1, _by_name(ps, worker)) is None
    ps["metadata"]["deletionTimestamp"] = rfc3339(T0 + 90)
    assert decide(ps, WORKERS, Faults(), T0 + 90, 1, _by_name(ps, worker)) == Action("finish", "j-ps-0", SIGTERM_EXIT)


def test_a_pod_without_tf_config_runs_from_its_own_start_whatever_else_runs() -> None:
    assert decide(pod("Running", command="sleep 60"), WORKERS, Faults(), T0 + 60, 1, {}) == Action("finish",
                                                                                                   "job-a-0", 0)
