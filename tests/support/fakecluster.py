"""The cluster behind the fake servers: jobs submitted to the fake rest-server (FakePai) become Frameworks, task pods
and events in the fake Kubernetes API (FakeApiServer), as OpenPAI v1.2.0 + HiveD + FrameworkController make them.

Enough for VC safety: one GPU (Dan's node, VC vc1) runs one single-task job at a time in submission order; a queued
pod gets HiveD's FailedScheduling event every tick; a finished or stopped job's pod is deleted, as FrameworkController
deletes a completed task's pod; the REST state follows Kubernetes `rest_lag_s` later (the database lag). It moves on
its own clock in a background thread, so it goes on while no run is watching. With `emulated` it is the rehearsal
cluster: the node is the Node the emulated kubelet registers and the containers carry the ids it gives them
(`hivedlab.rehearsal.kubelet`'s own `node_object` and `container_id`).

Where each behaviour comes from (microsoft/frameworkcontroller v0.8.0, microsoft/pai v1.2.0, hivedscheduler v0.3.4):
- Framework states `AttemptPreparing` → `AttemptRunning` → `Completed`: `pkg/apis/frameworkcontroller/v1/types.go`
  `FrameworkState`; a stop completes with code -210 (`completion.go` `CompletionCodeStopFrameworkRequested`), a task
  that exits 0 with 0 (`CompletionCodeSucceeded`); the completion status sits under `status.attemptStatus`.
- A completed task's pod is deleted: `pkg/controller/controller.go` `syncTaskState` (`deletePod` once the completion
  status is persisted).
- Pod name `<framework>-<taskrole>-<index>` and the labels `FC_FRAMEWORK_NAME`, `FC_TASKROLE_NAME`, `FC_TASK_INDEX`:
  `pkg/apis/frameworkcontroller/v1/constants.go`; `type: kube-launcher-task`, `userName`, `virtualCluster`: the
  rest-server's `models/v2/job/k8s.js` `generateTaskRole`.
- The REST state: `models/v2/job/k8s.js` `convertState` (`AttemptRunning` → RUNNING, `Completed` with 0 →
  SUCCEEDED, with -210 → STOPPED), read from the database the database-controller fills, hence the lag.
- The wait message: HiveD's `pkg/scheduler/scheduler.go` ("Pod is waiting for preemptible or free resource to
  appear"), `pkg/algorithm/intra_vc_scheduler.go` ("<reason> when scheduling in VC <vc>") and
  `topology_aware_scheduler.go` ("insufficient capacity"), inside kube-scheduler's FailedScheduling event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hivedlab.models.openpai.naming import framework_name
from hivedlab.rehearsal.kubelet import Worker, container_id, node_object
from tests.support.fakepai import FakePai
from tests.support.k8s_server import FakeApiServer

WAIT = "Pod is waiting for preemptible or free resource to appear: insufficient capacity when scheduling in VC {vc}"


@dataclass
class _Job:
    job_id: str
    user: str
    framework: str
    pod_uid: str
    framework_uid: str
    ticks: int = 0
    waits: int = 0


class FakeCluster:
    def __init__(self, pai: FakePai, api: FakeApiServer, *, node: str = "hostname-dan", vc: str = "vc1",
                 run_ticks: int = 3, tick_s: float = 0.04, rest_lag_s: float = 0.2, emulated: bool = False) -> None:
        self.pai, self.api, self.node, self.vc = pai, api, node, vc
        self.emulated = emulated  # the rehearsal cluster: its emulated kubelet registered the node and runs the pods
        if emulated:
            registered = node_object(Worker(node, "127.0.0.1", 1))
            api.add("nodes", node, labels=registered["metadata"]["labels"], spec=registered["spec"],
                    status=registered["status"])
        self.run_ticks, self.tick_s, self.rest_lag_s = run_ticks, tick_s, rest_lag_s
        self.lock = threading.Lock()
        self.queue: list[_Job] = []
        self.running: _Job | None = None
        self.done: list[str] = []
        self.rest: list[tuple[float, str, str]] = []  # (due, job id, REST state)
        self.on_running: list[Callable[[str], None]] = []  # called with the job id when a job starts
        self._stop = threading.Event()
        pai.on_submit = self.submitted
        self.thread = threading.Thread(target=self._loop, name="fake-cluster", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self._stop.set()
        self.thread.join(5)

    def all_done(self) -> bool:
        with self.lock:
            return not self.queue and self.running is None and not self.rest

    def submitted(self, job_id: str) -> None:
        user, name = job_id.split("~", 1)
        framework = framework_name(user, name)
        labels = {"userName": user, "virtualCluster": self.vc}
        fw = self.api.add("frameworks", framework, labels=labels, status={"state": "AttemptPreparing"})
        pod = self.api.add("pods", f"{framework}-worker-0", spec={}, status={"phase": "Pending"}, labels={
            "type": "kube-launcher-task", "FC_FRAMEWORK_NAME": framework, "FC_TASKROLE_NAME": "worker",
            "FC_TASK_INDEX": "0", **labels})
        with self.lock:
            self.queue.append(_Job(job_id, user, framework, pod["metadata"]["uid"], fw["metadata"]["uid"]))

    # -- the clock ---------------------------------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.wait(self.tick_s):
            self.tick()

    def tick(self) -> None:
        with self.lock:
            self._rest_catches_up()
            self._stopped()
            if self.running is not None:
                self.running.ticks += 1
                if self.running.ticks > self.run_ticks:
                    self._finish(self.running, exit_code=0)
                    self.running = None
            started = None
            if self.running is None and self.queue:
                started = self.running = self.queue.pop(0)
                self._start(started)
            for job in self.queue:
                self._wait(job)
        if started is not None:
            for hook in self.on_running:
                hook(started.job_id)

    def _later(self, job_id: str, state: str) -> None:
        self.rest.append((time.monotonic() + self.rest_lag_s, job_id, state))

    def _rest_catches_up(self) -> None:
        now = time.monotonic()
        for _, job_id, state in [r for r in self.rest if r[0] <= now]:
            if self.pai.jobs[job_id]["jobStatus"]["executionType"] != "STOP":
                self.pai.set_state(job_id, state)
        self.rest = [r for r in self.rest if r[0] > now]

    def _stopped(self) -> None:
        for job in [j for j in (*self.queue, self.running) if j is not None]:
            if self.pai.jobs[job.job_id]["jobStatus"]["executionType"] == "STOP":
                self._finish(job, exit_code=None)
                self.queue = [j for j in self.queue if j is not job]
                self.running = None if self.running is job else self.running

    def _container(self, job: _Job, state: dict[str, Any]) -> dict[str, Any]:
        """The app container's status; on the rehearsal cluster with the id its emulated kubelet gives it."""
        status: dict[str, Any] = {"name": "app", "state": state}
        if self.emulated:
            status["containerID"] = container_id({"metadata": {"uid": job.pod_uid}}, "app")
        return status

    def _start(self, job: _Job) -> None:
        running = self._container(job, {"running": {"startedAt": "2026-01-01T00:00:00Z"}})
        self.api.modify("pods", job.pod_uid, spec={"nodeName": self.node},
                        status={"phase": "Running", "containerStatuses": [running]})
        self.api.modify("frameworks", job.framework_uid, status={"state": "AttemptRunning"})
        self._later(job.job_id, "RUNNING")

    def _wait(self, job: _Job) -> None:
        job.waits += 1
        name = f"{job.framework}-worker-0"
        self.api.add("events", f"{name}.{job.waits}", reason="FailedScheduling", type="Warning",
                     involvedObject={"kind": "Pod", "name": name, "namespace": "default", "uid": job.pod_uid},
                     message=f"0/2 nodes are available: 1 {WAIT.format(vc=self.vc)}, 1 node(s) didn't match node "
                             "selector.")

    def _finish(self, job: _Job, exit_code: int | None) -> None:
        """The task ends (exit code) or is stopped (None): the Framework completes, FrameworkController deletes the
        pod."""
        code = 0 if exit_code == 0 else -210
        if exit_code is not None:
            done = self._container(job, {"terminated": {"exitCode": exit_code, "startedAt": "2026-01-01T00:00:00Z"}})
            self.api.modify("pods", job.pod_uid, status={"phase": "Succeeded", "containerStatuses": [done]})
        task = {"taskStatuses": [{"attemptStatus": {"podUID": job.pod_uid, "completionStatus": {"code": code}}}]}
        status: dict[str, Any] = {"state": "Completed", "attemptStatus": {
            "id": 0, "completionStatus": {"code": code}, "taskRoleStatuses": [task]}}
        self.api.modify("frameworks", job.framework_uid, status=status)
        self.api.delete("pods", job.pod_uid)
        if exit_code is not None:
            self._later(job.job_id, "SUCCEEDED")
        self.done.append(job.job_id)
