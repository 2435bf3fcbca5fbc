"""OpenPAI v1.2.0 naming, FrameworkController rules and REST states
(docs/openpai-model.md#framework-pods-and-events)."""

from __future__ import annotations

import pytest
import yaml

from hivedlab.models.hived import annotations as hived_annotations
from hivedlab.models.openpai import naming
from hivedlab.models.openpai.framework_object import FrameworkState, TaskState, framework_object
from hivedlab.models.openpai.jobstate import (
    CompletionPolicy,
    RetryPolicy,
    TaskOutcome,
    attempt_completion,
    framework_retry_policy,
    rest_state,
    should_retry,
    task_retry_policy,
)
from hivedlab.models.openpai.objects import (
    EventState,
    JobInfo,
    PodState,
    TaskRoleInfo,
    dump_scheduling_spec,
    event_object,
    pod_object,
)


@pytest.mark.parametrize(
    ("user", "job", "expected"),
    [
        ("admin", "job-config-0", "13c3e7e8cfac2009119395723466e92a"),
        ("admin", "hello-world-job", "5128d5bf25c599739d8283e84a9967f4"),
        ("unknown", "Old_Job", "unknownoldjob"),  # legacy: no md5 (docs/openpai-model.md#framework-names)
    ],
)
def test_framework_name(user: str, job: str, expected: str) -> None:
    assert naming.framework_name(user, job) == expected


def test_task_role_and_pod_names() -> None:
    assert naming.fc_name("Worker_A") == "workera"
    assert (
        naming.pod_name("13c3e7e8cfac2009119395723466e92a", "TaskRole", 0)
        == "13c3e7e8cfac2009119395723466e92a-taskrole-0"
    )
    assert naming.scheduler_name("vc1") == "hivedscheduler-ds-vc1"


def test_k8s_priority_orders_class_then_submission() -> None:
    prod, test, oppo = (naming.k8s_priority(p, 1_600_000_000) for p in (100, 10, -1))
    assert prod > test > oppo
    assert round(prod / 1e6, 1) == -224.3 and round(oppo / 1e6, 1) == -1071.5
    assert naming.k8s_priority(100, 1_600_000_000) > naming.k8s_priority(100, 1_600_000_001)  # earlier first
    assert naming.k8s_priority(500, 0) == naming.k8s_priority(126, 0)  # clamped


@pytest.mark.parametrize(
    ("fc_state", "code", "delay", "rest"),
    [
        ("AttemptCreationPending", None, None, "WAITING"),
        ("AttemptPreparing", None, None, "WAITING"),
        ("AttemptRunning", None, None, "RUNNING"),
        ("AttemptDeletionPending", -101, None, "RUNNING"),
        ("AttemptDeleting", -210, None, "STOPPING"),
        ("AttemptCompleted", -101, None, "RUNNING"),
        ("AttemptCompleted", -101, 0, "WAITING"),
        ("Completed", 0, None, "SUCCEEDED"),
        ("Completed", -210, None, "STOPPED"),
        ("Completed", -220, None, "STOPPED"),
        ("Completed", 1, None, "FAILED"),
        ("Bogus", None, None, "UNKNOWN"),
    ],
)
def test_rest_state(fc_state: str, code: int | None, delay: int | None, rest: str) -> None:
    assert rest_state(fc_state, code, delay) == rest


def test_retry_policies() -> None:
    gang_task, free_task = task_retry_policy(True, 3), task_retry_policy(False, 2)
    assert gang_task == RetryPolicy(False, 0) and free_task == RetryPolicy(True, 2)
    framework = framework_retry_policy(0)
    # a preempted gang job: the task does not retry, the framework always retries the transient -101, unaccounted
    assert not should_retry(gang_task, -101, 0).retry
    decision = should_retry(framework, -101, 0)
    assert decision.retry and not decision.accountable and decision.delay_sec == 0
    # a non-gang job retries only the victim task
    assert should_retry(free_task, -101, 5).retry
    assert not should_retry(framework, -210, 0).retry  # stop is permanent
    assert not should_retry(framework, 0, 0).retry
    assert should_retry(RetryPolicy(True, 1), 1, 0) == should_retry(RetryPolicy(False, 1), 1, 0)
    assert should_retry(RetryPolicy(False, 1), 1, 0).accountable and not should_retry(RetryPolicy(False, 1), 1, 1).retry


def test_completion_policy_first_success_of_two_wins() -> None:
    policies = {"train": (CompletionPolicy(1, 1), 2)}
    first = TaskOutcome("train", 1, 0)
    done = attempt_completion(policies, [first], first)
    assert done is not None and done.code == 0 and done.index == 1


def test_completion_policy_failure_carries_the_task_code() -> None:
    policies = {"train": (CompletionPolicy(1, 2), 2)}
    failed = TaskOutcome("train", 0, -101)
    done = attempt_completion(policies, [failed], failed)
    assert done is not None and done.code == -101 and "MinFailedTaskCount" in done.message


def test_completion_policy_waits_for_enough_tasks() -> None:
    policies = {"train": (CompletionPolicy(-1, 2), 3)}
    one = TaskOutcome("train", 0, 0)
    assert attempt_completion(policies, [one], one) is None
    outcomes = [one, TaskOutcome("train", 1, 5), TaskOutcome("train", 2, 0)]
    done = attempt_completion(policies, outcomes, outcomes[-1])
    assert done is not None and done.code == 0


def _job() -> JobInfo:
    spec = {
        "virtualCluster": "default",
        "priority": 100,
        "pinnedCellId": None,
        "leafCellType": None,
        "leafCellNumber": 1,
        "affinityGroup": {"name": "alice~j/default", "members": [{"podNumber": 2, "leafCellNumber": 1}]},
    }
    role = TaskRoleInfo("Train_A", 2, spec, 1, 1, ("sleep 5m",), 2, 4096, 1, RetryPolicy(False, 0))
    return JobInfo(
        "alice",
        "j",
        "default",
        100,
        True,
        "2026-01-01T08:00:00Z",
        1767254400,
        "name: j\n",
        (role,),
        RetryPolicy(True, 0),
        "openpai/pai.example.pytorch",
    )


def test_scheduling_spec_is_dumped_like_js_yaml() -> None:
    text = dump_scheduling_spec(_job().task_roles[0].scheduling_spec)
    assert text.splitlines()[:5] == [
        "virtualCluster: default",
        "priority: 100",
        "pinnedCellId: null",
        "leafCellType: null",
        "leafCellNumber: 1",
    ]
    assert "  members:\n    - podNumber: 2\n      leafCellNumber: 1\n" in text
    assert yaml.safe_load(text) == _job().task_roles[0].scheduling_spec


def test_pod_object_labels_annotations_and_spec() -> None:
    job = _job()
    pod = PodState("traina", 1, "uid-1", "7", "2026-01-01T08:00:01Z", 0, "cm-uid", 0)
    obj = pod_object(job, pod)
    fw = naming.framework_name("alice", "j")
    assert obj["metadata"]["name"] == f"{fw}-traina-1"
    assert obj["metadata"]["labels"] == {
        "FC_FRAMEWORK_NAME": fw,
        "FC_TASKROLE_NAME": "traina",
        "FC_TASK_INDEX": "1",
        "type": "kube-launcher-task",
        "userName": "alice",
        "virtualCluster": "default",
    }
    annotations = obj["metadata"]["annotations"]
    assert yaml.safe_load(annotations[hived_annotations.SCHEDULING_SPEC])["affinityGroup"]["name"] == "alice~j/default"
    assert hived_annotations.LEAF_CELL_ISOLATION not in annotations and "jobName" not in obj["metadata"]["labels"]
    assert obj["spec"]["schedulerName"] == "hivedscheduler-ds-default"
    assert obj["spec"]["priorityClassName"] == f"{fw}-priority"
    limits = obj["spec"]["containers"][0]["resources"]["limits"]
    assert limits["hivedscheduler.microsoft.com/pod-scheduling-enable"] == "1" and "nvidia.com/gpu" not in limits
    assert obj["status"]["phase"] == "Pending" and "nodeName" not in obj["spec"]

    bound = PodState(
        "traina",
        1,
        "uid-1",
        "8",
        "2026-01-01T08:00:01Z",
        0,
        "cm-uid",
        0,
        phase="Running",
        node="hostname-dan",
        host_ip="192.0.2.13",
        isolation="0",
        bind_info="node: hostname-dan\n",
        scheduled_at="2026-01-01T08:00:02Z",
        started_at="2026-01-01T08:00:05Z",
    )
    obj = pod_object(job, bound)
    assert obj["spec"]["nodeName"] == "hostname-dan" and obj["status"]["hostIP"] == "192.0.2.13"
    assert obj["metadata"]["annotations"][hived_annotations.LEAF_CELL_ISOLATION] == "0"
    assert obj["metadata"]["annotations"][hived_annotations.BIND_INFO] == "node: hostname-dan\n"
    assert obj["status"]["containerStatuses"][0]["state"] == {"running": {"startedAt": "2026-01-01T08:00:05Z"}}


def test_event_object() -> None:
    event = EventState(
        "p.1",
        "e-uid",
        "9",
        "p",
        "p-uid",
        "Preempted",
        "by default/q on node hostname-dan",
        "hivedscheduler-ds-vc1",
        "2026-01-01T08:00:00Z",
        "2026-01-01T08:00:00Z",
    )
    obj = event_object(event)
    assert obj["kind"] == "Event" and obj["type"] == "Normal"
    assert obj["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "default",
        "name": "p",
        "uid": "p-uid",
    }
    assert obj["source"] == {"component": "hivedscheduler-ds-vc1"}


def test_framework_object_after_preemption() -> None:
    job = _job()
    task = TaskState("traina", 0, "Completed", "t0", "t1", pod_uid="u", code=-101)
    fw = FrameworkState(
        "AttemptCompleted",
        "t0",
        "t1",
        "10",
        "fw-uid",
        0,
        "t0",
        "cm",
        (task,),
        code=-101,
        trigger=("traina", 0, "FailedTaskCount 1 has reached MinFailedTaskCount 1 in TaskRole traina"),
        retry_delay_sec=0,
    )
    obj = framework_object(job, fw)
    assert obj["kind"] == "Framework" and obj["apiVersion"] == "frameworkcontroller.microsoft.com/v1"
    assert obj["metadata"]["annotations"]["jobName"] == "j" and obj["metadata"]["annotations"]["totalGpuNumber"] == "2"
    completion = obj["status"]["attemptStatus"]["completionStatus"]
    assert completion["code"] == -101 and completion["phrase"] == "PodExternalDeleted"
    assert completion["type"] == {"name": "Failed", "attributes": ["Transient"]}
    statuses = obj["status"]["attemptStatus"]["taskRoleStatuses"][0]["taskStatuses"]
    assert statuses[0]["attemptStatus"]["completionStatus"]["diagnostics"] == "Pod is being deleted by others"
    assert obj["spec"]["taskRoles"][0]["frameworkAttemptCompletionPolicy"] == {
        "minFailedTaskCount": 1,
        "minSucceededTaskCount": 1,
    }
