"""FrameworkController v0.8.0 and the rest-server's side of the simulated cluster: jobs accepted, Frameworks,
attempts, task pods, completion and retry policies, pod deletion (docs/openpai-model.md#framework-pods-and-events).

`FrameworkController` holds the simulated cluster's state; `hivedlab.backends.sim.cluster.SimCluster` adds the Backend
interface, the event loop and Kubernetes' scheduling with HiveD as extender.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from hivedlab.backends.sim import hooks
from hivedlab.backends.sim.jobs import SimJob, TaskKey, job_info
from hivedlab.backends.sim.settings import SimSettings, task_seconds
from hivedlab.backends.sim.store import ApiStore, Clock, EventQueue, seconds_to_us
from hivedlab.evidence import EvidenceWriter
from hivedlab.models.openpai.framework_object import FrameworkState, TaskState, framework_object
from hivedlab.models.openpai.jobstate import (
    CODE_ATTEMPT_COMPLETION,
    CODE_STOP_REQUESTED,
    CODE_SUCCEEDED,
    DIAGNOSTICS,
    AttemptCompletion,
    TaskOutcome,
    attempt_completion,
    should_retry,
)
from hivedlab.models.openpai.objects import EventState, PodState, pod_object


class FrameworkController:
    """The state of the simulated cluster and FrameworkController's reactions to it."""

    def __init__(
        self,
        writer: EvidenceWriter | None,
        seed: int = 0,
        settings: SimSettings | None = None,
        node_ips: Mapping[str, str] | None = None,
        other_nodes: int = 0,
    ) -> None:
        self.settings = settings or SimSettings()
        self.clock = Clock.at(self.settings.start)
        self.queue = EventQueue()
        self.store = ApiStore(writer, self.clock)
        self.rng = random.Random(seed)
        self.node_ips = dict(node_ips or {})
        self.other_nodes = other_nodes  # K8s nodes that are not workers (the master): they fail the node selector
        self.scheduler: Any = None
        self.config_mapping: dict[str, Any] | None = None
        self.granted_vcs: set[str] | None = None  # the VCs the rest-server lets members use (None: the config's)
        self.jobs: dict[tuple[str, str], SimJob] = {}
        self._enqueued: dict[str, tuple[int, int]] = {}  # pod uid -> (time, order) it entered the K8s queue
        self._order = 0
        self._failed_events: dict[str, dict[str, EventState]] = {}  # pod uid -> message -> FailedScheduling event
        self._hived_pods: dict[str, str] = {}  # pod uid -> "allocated" | "unallocated" as HiveD knows it
        self._bound: dict[str, tuple[Any, Any, Any]] = {}  # pod uid -> (ref, spec, bind info), in bind order
        self._start_delays: dict[tuple[int, int], float] = {}  # (job, bind instant) -> container start delay

    def _after(self, seconds: float, action: Callable[[], None]) -> None:
        self.queue.push(self.clock.now_us + seconds_to_us(seconds), action)

    # -- rest-server and FrameworkController ---------------------------------------------------------------------

    def _accept(self, job_key: str, admitted: Any, protocol: str) -> None:
        info = job_info(admitted, protocol, self.clock.k8s_time(), self.clock.epoch_s())
        override = self.settings.durations.get(job_key)
        seconds = {}
        for role in info.task_roles:
            for index in range(role.instances):
                jitter = self.rng.uniform(-1.0, 1.0)
                value = override if override is not None else task_seconds(role.commands, self.settings, jitter)
                seconds[(role.fc_name, index)] = value
        job = SimJob(key=job_key, seq=len(self.jobs), info=info, task_seconds=seconds)
        self.jobs[(info.user, info.job_name)] = job
        self._after(self.settings.framework_create_s, lambda: self._create_framework(job))

    def _emit_framework(self, job: SimJob, watch_type: str = "MODIFIED") -> None:
        job.set_framework(resource_version=self.store.resource_version())
        assert job.framework is not None
        self.store.emit(watch_type, "frameworks", framework_object(job.info, job.framework))

    def _create_framework(self, job: SimJob) -> None:
        now = self.clock.k8s_time()
        tasks = tuple(
            TaskState(task_role=r, index=i, state="AttemptCreationPending", start=now, transition=now)
            for r, i in job.task_keys
        )
        job.framework = FrameworkState(
            state="AttemptCreationPending",
            start=now,
            transition=now,
            resource_version="",
            uid=self.store.uid("fw"),
            attempt_id=0,
            attempt_start=now,
            configmap_uid=self.store.uid("configmap"),
            tasks=tasks,
        )
        self._emit_framework(job, "ADDED")
        if job.stop_requested:
            self._stop_framework(job)
            return
        self._after(self.settings.pod_create_s, lambda: self._create_attempt_pods(job, 0))

    def _create_attempt_pods(self, job: SimJob, attempt_id: int) -> None:
        fw = job.framework
        if fw is None or fw.attempt_id != attempt_id or job.completing is not None:
            return
        # the attempt's ConfigMap created first (controller.go syncFrameworkState: AttemptCreationRequested)
        job.set_framework(state="AttemptCreationRequested", transition=self.clock.k8s_time())
        self._emit_framework(job)
        for key in self._creation_order(job):
            self._create_pod(job, key, emit_framework=False)
        job.set_framework(state="AttemptPreparing", transition=self.clock.k8s_time())
        self._emit_framework(job)

    def _creation_order(self, job: SimJob) -> list[TaskKey]:
        """The order an attempt's pods are created in, back to back at one instant (FrameworkController: the task
        order)."""
        return list(job.task_keys)

    def _create_pod(self, job: SimJob, key: TaskKey, emit_framework: bool = True) -> None:
        assert job.framework is not None
        task = job.task(key)
        now = self.clock.k8s_time()
        pod = PodState(
            task_role=key[0],
            index=key[1],
            uid=self.store.uid("pod"),
            resource_version="",
            created=now,
            framework_attempt_id=job.framework.attempt_id,
            configmap_uid=job.framework.configmap_uid,
            task_attempt_id=task.attempt_id,
        )
        job.pods[key] = pod
        self._order += 1
        self._enqueued[pod.uid] = (self.clock.now_us, self._order)
        self._hived_pods[pod.uid] = "unallocated"
        job.set_task(
            key,
            state="AttemptPreparing",
            transition=now,
            attempt_start=now,
            pod_uid=pod.uid,
            node=None,
            host_ip=None,
            run_time=None,
            completion_time=None,
            code=None,
        )
        self._emit_pod(job, key, "ADDED")
        if emit_framework:
            self._emit_framework(job)

    def _emit_pod(self, job: SimJob, key: TaskKey, watch_type: str = "MODIFIED", **changes: Any) -> PodState:
        pod = replace(job.pods[key], resource_version=self.store.resource_version(), **changes)
        job.pods[key] = pod
        self.store.emit(watch_type, "pods", pod_object(job.info, pod))
        return pod

    def _container_start(self, job: SimJob, key: TaskKey, uid: str) -> None:
        pod = job.pods.get(key)
        if pod is None or pod.uid != uid or pod.deletion_timestamp is not None:
            return
        now = self.clock.k8s_time()
        self._emit_pod(job, key, phase="Running", started_at=now)
        job.ran = True
        job.set_task(key, state="AttemptRunning", transition=now, run_time=now)
        assert job.framework is not None
        if job.framework.state == "AttemptPreparing":
            job.set_framework(state="AttemptRunning", transition=now, run_time=job.framework.run_time or now)
        self._emit_framework(job)
        if not self.settings.tfjob:
            self._after(job.task_seconds[key], lambda: self._container_exit(job, key, uid))
            return
        running = {k: p.uid for k, p in job.pods.items() if p.phase == "Running" and p.deletion_timestamp is None}
        if len(running) == len(job.task_keys):  # a TensorFlow task trains only once every peer runs
            for peer, peer_uid in running.items():
                if not self._runs_until_deleted(job, peer):
                    self._after(job.task_seconds[peer], partial(self._container_exit, job, peer, peer_uid))

    def _runs_until_deleted(self, job: SimJob, key: TaskKey) -> bool:
        """Whether a task's container never exits by itself (FrameworkController's tasks all do)."""
        return False

    def _container_exit(self, job: SimJob, key: TaskKey, uid: str) -> None:
        pod = job.pods.get(key)
        if pod is None or pod.uid != uid or pod.deletion_timestamp is not None:
            return
        now = self.clock.k8s_time()
        self._emit_pod(job, key, phase="Succeeded", finished_at=now, exit_code=0)
        # a completed pod is a deleted pod to HiveD (docs/hived-config-and-cells.md#allocation-and-release)
        self._hived_release(job, pod)
        self._task_completed(job, key, CODE_SUCCEEDED)
        current = job.pods.get(key)
        if current is not None and current.uid == uid:
            self._delete_pod(job, key)  # FC deletes a completed task attempt's pod

    def _task_completed(self, job: SimJob, key: TaskKey, code: int) -> None:
        """A task attempt ended: retry the task (non-gang, transient) or complete it and apply the completion
        policy (docs/openpai-model.md#waiting-preemption-and-stop, #job-states)."""
        now = self.clock.k8s_time()
        task = job.task(key)
        decision = should_retry(job.role_retry(key[0]), code, task.accountable_retried)
        if job.completing is None and decision.retry:
            job.set_task(
                key,
                state="AttemptCreationPending",
                transition=now,
                completion_time=now,
                code=code,
                attempt_id=task.attempt_id + 1,
                retried=task.retried + 1,
                accountable_retried=task.accountable_retried + int(decision.accountable),
            )
            job.recreate.add(key)
            self._emit_framework(job)
            return
        job.set_task(key, state="Completed", transition=now, completion_time=now, code=code)
        if job.completing is not None:
            self._emit_framework(job)
            return
        outcome = TaskOutcome(key[0], key[1], code)
        job.outcomes.append(outcome)
        completion = attempt_completion(job.policies(), job.outcomes, outcome)
        if completion is None:
            self._emit_framework(job)
        else:
            self._complete_attempt(job, completion)

    def _complete_attempt(
        self, job: SimJob, completion: AttemptCompletion, kill_code: int = CODE_ATTEMPT_COMPLETION
    ) -> None:
        """The attempt completes: every other task is killed, then the attempt is deleted (then retried or done)."""
        job.completing = completion
        now = self.clock.k8s_time()
        job.set_framework(
            state="AttemptDeletionPending",
            transition=now,
            code=completion.code,
            trigger=(completion.task_role, completion.index, completion.message),
        )
        for key in job.task_keys:
            task = job.task(key)
            if task.state != "Completed":
                job.set_task(key, state="Completed", transition=now, completion_time=now, code=kill_code)
        job.recreate.clear()
        self._emit_framework(job)
        # the ConfigMap's deletion requested, its pods go with it (controller.go: AttemptDeletionRequested)
        job.set_framework(state="AttemptDeletionRequested", transition=now)
        self._emit_framework(job)
        for key in list(job.pods):
            self._delete_pod(job, key)
        self._maybe_attempt_deleted(job)

    def _stop_framework(self, job: SimJob) -> None:
        job.set_framework(execution_type="Stop")
        if job.completing is not None or job.framework is None or job.framework.state == "Completed":
            self._emit_framework(job)
            return
        # the attempt completes with -210; each task not yet completed gets -220 (controller.go
        # completeFrameworkAttempt: "Stop to complete current FrameworkAttempt"), as the rehearsal cluster showed
        completion = AttemptCompletion(CODE_STOP_REQUESTED, "", -1, DIAGNOSTICS[CODE_STOP_REQUESTED])
        self._complete_attempt(job, completion)

    def _maybe_attempt_deleted(self, job: SimJob) -> None:
        if job.completing is None or job.pods:
            return
        completion, fw = job.completing, job.framework
        assert fw is not None
        if fw.state == "Completed":  # written once: a later pod removal finds the Framework done
            return
        now = self.clock.k8s_time()
        decision = should_retry(job.info.retry, completion.code, fw.accountable_retried)
        if decision.retry and not job.stop_requested:
            job.set_framework(
                state="AttemptCompleted",
                transition=now,
                attempt_completion_time=now,
                retry_delay_sec=decision.delay_sec,
            )
            self._emit_framework(job)
            self._new_attempt(job, decision.accountable)
            return
        # completeFrameworkAttempt writes AttemptCompleted; the next sync, with no retry, Completed (controller.go)
        job.set_framework(state="AttemptCompleted", transition=now, attempt_completion_time=now, retry_delay_sec=None)
        self._emit_framework(job)
        job.set_framework(state="Completed", transition=now, completion_time=now)
        self._emit_framework(job)

    def _new_attempt(self, job: SimJob, accountable: bool) -> None:
        """A new framework attempt (docs/openpai-model.md#waiting-preemption-and-stop step 4): new ConfigMap, same pod
        names, new uids."""
        fw = job.framework
        assert fw is not None
        now = self.clock.k8s_time()
        job.completing = None
        job.outcomes.clear()
        tasks = tuple(
            TaskState(task_role=r, index=i, state="AttemptCreationPending", start=now, transition=now)
            for r, i in job.task_keys
        )
        job.set_framework(
            state="AttemptCreationPending",
            transition=now,
            attempt_id=fw.attempt_id + 1,
            attempt_start=now,
            configmap_uid=self.store.uid("configmap"),
            tasks=tasks,
            run_time=None,
            attempt_completion_time=None,
            code=None,
            trigger=None,
            retried=fw.retried + 1,
            accountable_retried=fw.accountable_retried + int(accountable),
            retry_delay_sec=None,
        )
        self._emit_framework(job)
        attempt = fw.attempt_id + 1
        self._after(self.settings.pod_create_s, lambda: self._create_attempt_pods(job, attempt))

    # -- pod deletion --------------------------------------------------------------------------------------------

    def _delete_pod(self, job: SimJob, key: TaskKey) -> None:
        """Delete a pod: an unbound or already terminated one goes at once, a running one after the grace period."""
        pod = job.pods[key]
        if pod.deletion_timestamp is not None:
            return
        if pod.node is None or pod.finished_at is not None:
            self._remove_pod(job, key, pod.uid)
            return
        self._emit_pod(job, key, deletion_timestamp=self.clock.k8s_time())
        self._after(self.settings.grace_s, lambda: self._remove_pod(job, key, pod.uid))

    def _remove_pod(self, job: SimJob, key: TaskKey, uid: str) -> None:
        pod = job.pods.get(key)
        if pod is None or pod.uid != uid:
            return
        now = self.clock.k8s_time()
        if pod.node is not None and pod.finished_at is None and pod.started_at is not None:
            pod = replace(pod, finished_at=now, exit_code=143, phase="Failed")  # the container ends on SIGTERM
        pod = replace(pod, deletion_timestamp=pod.deletion_timestamp or now)
        self._hived_release(job, pod)
        del job.pods[key]
        self._enqueued.pop(uid, None)
        self._failed_events.pop(uid, None)
        self.store.emit(
            "DELETED", "pods", pod_object(job.info, replace(pod, resource_version=self.store.resource_version()))
        )
        if key in job.recreate:
            job.recreate.discard(key)
            self._after(self.settings.pod_create_s, lambda: self._recreate_task_pod(job, key))
        self._maybe_attempt_deleted(job)

    def _recreate_task_pod(self, job: SimJob, key: TaskKey) -> None:
        if job.completing is None and key not in job.pods and job.task(key).state == "AttemptCreationPending":
            self._create_pod(job, key)

    def _hived_release(self, job: SimJob, pod: PodState) -> None:
        ref = hooks.pod_ref(pod.name(job.info.framework), pod.uid)
        state = self._hived_pods.pop(pod.uid, None)
        self._bound.pop(pod.uid, None)
        if state == "allocated":
            self.scheduler.delete_allocated_pod(ref)
        elif state == "unallocated":
            self.scheduler.delete_unallocated_pod(ref)
