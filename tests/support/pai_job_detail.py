"""A Framework's attempt as the fake rest-server's job detail shows it (`models/v2/job/k8s.js`
`convertFrameworkDetail` and `convertTaskDetail`, OpenPAI v1.2.0): sub-states, exit specs, completions, tasks."""

from __future__ import annotations

import time
from typing import Any

SUB_STATES = {"WAITING": "AttemptPreparing", "RUNNING": "AttemptRunning", "STOPPING": "AttemptDeletionPending",
              "SUCCEEDED": "Completed", "FAILED": "Completed", "STOPPED": "Completed"}
# k8s-job-exit-spec.yaml (src/k8s-job-exit-spec/config/): the exit spec of the codes a lab job ends with
EXIT_SPECS = {
    0: {"code": 0, "phrase": "Succeeded", "issuer": "USER_CONTAINER", "causer": "USER_CONTAINER",
        "type": "USER_SUCCESS", "stage": "COMPLETING", "behavior": "UNKNOWN", "reaction": "NEVER_RETRY",
        "repro": ["User program exits with exitcode 0"]},
    -210: {"code": -210, "phrase": "StopFrameworkRequested", "issuer": "PAI_FC", "causer": "USER_STOP",
           "type": "USER_STOP", "stage": "UNKNOWN", "behavior": "PERMANENT", "reaction": "NEVER_RETRY",
           "reason": "User has requested to stop the job", "repro": ["Stop a job"]},
}
EXIT_SPECS[-220] = {"code": -220, "phrase": "FrameworkAttemptCompletion", "issuer": "PAI_FC", "causer": "USER_STOP",
                    "type": "USER_STOP", "stage": "UNKNOWN", "behavior": "PERMANENT", "reaction": "NEVER_RETRY",
                    "reason": "Stop to complete current job attempt",
                    "repro": ["Stop a job with long running container"]}
EXIT_CODES = {"SUCCEEDED": 0, "STOPPED": -210, "FAILED": 1}
TASK_EXIT_CODES = {"STOPPED": -220}  # a task still running when its job is stopped
# (diagnostics, trigger message, completion type) as FrameworkController completes a Framework
# (pkg/apis/frameworkcontroller/v1/completion.go): by its tasks' success, or stopped (no trigger, type Failed)
COMPLETIONS = {
    "SUCCEEDED": ("Pod succeeded", "SucceededTaskCount 1 has reached MinSucceededTaskCount 1 in the TaskRole",
                  "Succeeded"),
    "STOPPED": ("User has requested to stop the Framework", None, "Failed"),
}


def _exit_spec(code: int | None) -> dict[str, Any] | None:
    """`generateExitSpec`: the exit spec's entry of the code (an unknown code: its number only)."""
    return None if code is None else EXIT_SPECS.get(code, {"code": code})


def attempt(job: dict[str, Any], roles: dict[str, int], tasks: list[dict[str, Any]]) -> None:
    """`models/v2/job/k8s.js` `convertFrameworkDetail` and `convertTaskDetail` once the Framework has an attempt:
    `appId` is its `instanceUID`, `subState` the Framework's state, `appLaunchedTime` its `runTime`, each task role
    lists its tasks; a completed attempt has its completion status (code, exit spec, diagnostics, trigger)."""
    status = job["jobStatus"]
    state, now_ms = status["state"], int(time.time() * 1000)
    status["subState"] = SUB_STATES.get(state, status["subState"])
    status["appId"] = status["appId"] or f"0_{job['debugId'][:8]}-0000-0000-0000-000000000000"
    if state != "WAITING":
        status["appLaunchedTime"] = status["appLaunchedTime"] or now_ms
    done = status["subState"] == "Completed"
    code = status["appExitCode"] if status["appExitCode"] is not None else EXIT_CODES.get(state) if done else None
    first_role = next(iter(roles), "taskrole")
    spec = _exit_spec(code)
    if done:
        diagnostics, trigger, kind = COMPLETIONS.get(state, ("Pod failed", "a task failed", "Failed"))
        status.update(completedTime=status["completedTime"] or now_ms, appProgress=1,
                      appCompletedTime=status["appCompletedTime"] or now_ms, appExitCode=code,
                      appExitSpec=spec, appExitDiagnostics=diagnostics,
                      appExitMessages={"container": None, "runtime": None, "launcher": diagnostics},
                      appExitTriggerMessage=trigger, appExitTriggerTaskRoleName=first_role if trigger else None,
                      appExitTriggerTaskIndex=0 if trigger else None, appExitType=kind)
    given = iter(tasks)
    job["taskRoles"] = {
        role: {"taskRoleStatus": {"name": role},
               "taskStatuses": [_task(job, role, index, state, code, next(given, {})) for index in range(count)]}
        for role, count in roles.items()}


def _task(job: dict[str, Any], role: str, index: int, state: str, code: int | None,
          given: dict[str, Any]) -> dict[str, Any]:
    """`convertTaskDetail`: the task's pod (its uid is the container id), node, ports, exit; HiveD's affinity group
    `default/<pod name>`."""
    pod = f"{job['debugId']}-{role}-{index}"
    node = given.get("containerNodeName", "")
    exit_code = given.get("containerExitCode", TASK_EXIT_CODES.get(state, code))
    return {"taskIndex": index, "taskState": state, "containerId": f"{job['debugId'][:8]}-{index:04d}-0000-0000",
            "containerIp": "", "containerNodeName": node, "containerPorts": {"ssh": "20000", "http": "20001"},
            "containerGpus": None,
            "containerLog": f"http://:9103/log-manager/tail/{job['jobStatus']['username']}/{job['name']}/{role}/",
            "containerExitCode": exit_code, "containerExitSpec": _exit_spec(exit_code),
            "containerExitDiagnostics": None if exit_code is None else "Stop to complete current FrameworkAttempt"
            if exit_code == -220 else job["jobStatus"]["appExitDiagnostics"],
            "retries": int(given.get("retries", 0)), "accountableRetries": int(given.get("retries", 0)),
            "createdTime": job["jobStatus"]["createdTime"], "completedTime": job["jobStatus"]["appCompletedTime"],
            "currentAttemptLaunchedTime": job["jobStatus"]["appLaunchedTime"] or job["jobStatus"]["createdTime"],
            "currentAttemptCompletedTime": job["jobStatus"]["appCompletedTime"],
            "hived": {"affinityGroupName": f"default/{pod}", "lazyPreempted": None, "lazyPreemptionStatus": None}}
