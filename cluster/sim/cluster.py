"""The simulated OpenPAI v1.2.0 + HiveD v0.3.4 cluster: a deterministic discrete-event loop on virtual time.

It plays the parts a real cluster has (spec/hived.md end of §6, spec/openpai.md §3):
- rest-server: a submission goes through `admit_job` (HiveD's VC status as the quota source); a rejection is a
  reply and leaves nothing behind; an accepted job becomes a Framework after the write-merger's delay.
- FrameworkController: attempts, task pods (same name, new uid on a retry), completion policy, retry policy.
- Kubernetes: pending pods are retried after every change, in queue order (K8s pod priority = HiveD priority,
  then submission time, then creation); HiveD is asked in Preempting phase with every node suggested (what
  HiveD's unit tests do); victims get a `Preempted` event and are deleted; waits become `FailedScheduling`.
- kubelet: a bound pod's container starts after a few seconds and exits 0 after its commands' duration.
Every object change is written to the evidence log as a watch record with the virtual time.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import yaml

from checker.evidence import EvidenceWriter
from cluster.backend import JobStatus, Reply, SubmitResult, TaskStatus
from cluster.openpai import naming
from cluster.openpai.jobstate import (
    CODE_ATTEMPT_COMPLETION,
    CODE_POD_EXTERNAL_DELETED,
    CODE_STOP_REQUESTED,
    CODE_SUCCEEDED,
    DIAGNOSTICS,
    AttemptCompletion,
    TaskOutcome,
    attempt_completion,
    rest_state,
    should_retry,
)
from cluster.openpai.objects import (
    EventState,
    FrameworkState,
    PodState,
    TaskState,
    event_object,
    framework_object,
    pod_object,
)
from cluster.sim import hooks
from cluster.sim.jobs import SimJob, TaskKey, job_info
from cluster.sim.settings import SimSettings, task_seconds
from cluster.sim.store import ApiStore, Clock, EventQueue, seconds_to_us
from hivedlab.errors import HivedlabError

WAIT_PREFIX = "Pod is waiting for preemptible or free resource to appear: "  # HiveD's filter reply (§4.2)
MAX_STEPS_PER_INSTANT = 10_000
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: same results, 20x faster


class SimCluster:
    """A `cluster.backend.Backend` on virtual time. One instance per experiment (one evidence log)."""

    cluster = "sim"

    def __init__(
        self,
        writer: EvidenceWriter | None,
        seed: int = 0,
        settings: SimSettings | None = None,
        node_ips: Mapping[str, str] | None = None,
        other_nodes: int = 0,
        hived_api: Any = None,
        dump_bind_info: Callable[[Any], str] | None = None,
    ) -> None:
        self.settings = settings or SimSettings()
        self.clock = Clock.at(self.settings.start)
        self.queue = EventQueue()
        self.store = ApiStore(writer, self.clock)
        self.rng = random.Random(seed)
        self.node_ips = dict(node_ips or {})
        self.other_nodes = other_nodes  # K8s nodes that are not workers (the master): they fail the node selector
        self.api = hived_api  # the HiveD model (cluster.hived); resolved on first use so tests can pass a double
        self._dump_bind_info = dump_bind_info
        self.scheduler: Any = None
        self.config_mapping: dict[str, Any] | None = None
        self.jobs: dict[tuple[str, str], SimJob] = {}
        self._enqueued: dict[str, tuple[int, int]] = {}  # pod uid -> (time, order) it entered the K8s queue
        self._order = 0
        self._failed_events: dict[str, EventState] = {}  # pod uid -> its FailedScheduling event
        self._hived_pods: dict[str, str] = {}
        self._start_delays: dict[
            tuple[int, int], float
        ] = {}  # pod uid -> "allocated" | "unallocated" as HiveD knows it

    # -- Backend ------------------------------------------------------------------------------------------------

    def now(self) -> str:
        return self.clock.record_time()

    def close(self) -> None:
        """Nothing to release: the evidence writer belongs to the runner."""

    def switch_config(self, name: str, text: str) -> None:
        if any(job.pods for job in self.jobs.values()):
            raise HivedlabError(f"cannot switch the HiveD config to '{name}' while pods are alive")
        try:
            mapping = yaml.load(text, Loader=_LOADER)
        except yaml.YAMLError as exc:
            raise HivedlabError(f"HiveD config '{name}' is not valid YAML: {str(exc).splitlines()[0]}") from None
        if self.api is None:
            self.api = hooks.hived_api()
        if self._dump_bind_info is None:
            self._dump_bind_info = hooks.bind_info_dumper()
        self.scheduler = hooks.new_scheduler(self.api, mapping, name, self.clock.k8s_time)
        self.config_mapping = mapping

    def submit(self, user: str, job_key: str, protocol: str) -> SubmitResult:
        if self.scheduler is None or self.config_mapping is None:
            raise HivedlabError("the simulated cluster has no HiveD config: switch_config first")
        low, high = self.settings.submit_gap_s
        self._advance_to(self.clock.now_us + seconds_to_us(self.rng.uniform(low, high)))
        name = _job_name_of(protocol)
        framework = naming.framework_name(user, name) if name else ""
        admitted, reply = hooks.admit(protocol, user, self.config_mapping, self.scheduler)
        if admitted is not None and (user, admitted.name) in self.jobs:
            job_id = naming.job_id(user, admitted.name)
            reply = Reply(409, {"code": "ConflictJobError", "message": f"Job {job_id} already exists."})
            admitted = None
        if admitted is not None:
            self._accept(job_key, admitted, protocol)
            reply = Reply(202, {"status": 202, "message": f"Update job {admitted.name} for user {user} successfully."})
        return SubmitResult(user=user, job_key=job_key, job_name=name, framework_name=framework, reply=reply)

    def stop(self, user: str, job_name: str) -> Reply:
        job_id = naming.job_id(user, job_name)
        job = self.jobs.get((user, job_name))
        if job is None:
            return Reply(404, {"code": "NoJobError", "message": f"Job {job_id} is not found."})
        if not job.stop_requested:
            job.stop_requested = True
            if job.framework is not None:
                self._stop_framework(job)
        return Reply(202, {"status": 202, "message": f"Execute job {job_id} successfully."})

    def job_status(self, user: str, job_name: str) -> JobStatus:
        job = self.jobs.get((user, job_name))
        if job is None:
            return JobStatus(user=user, job_name=job_name, state="UNKNOWN")
        fw = job.framework
        if fw is None:  # the DB's mock status before the Framework exists (§3.5)
            return JobStatus(user=user, job_name=job_name, state="WAITING", waiting=job.waiting, ran=job.ran)
        tasks = tuple(
            TaskStatus(
                task_role=t.task_role,
                index=t.index,
                state=rest_state(t.state, t.code),
                node=t.node,
                retries=t.retried,
                exit_code=t.code,
            )
            for t in fw.tasks
        )
        return JobStatus(
            user=user,
            job_name=job_name,
            state=rest_state(fw.state, fw.code, fw.retry_delay_sec),
            retries=fw.retried,
            waiting=job.waiting,
            ran=job.ran,
            tasks=tasks,
        )

    def advance_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        deadline = self.clock.now_us + seconds_to_us(timeout_s)
        while not predicate():
            next_at = self.queue.next_time()
            if next_at is None or next_at > deadline:
                self.clock.now_us = max(self.clock.now_us, deadline)
                return predicate()
            self._run_instant(next_at)
        return True

    def run_until_idle(self, limit_s: float = 86_400.0) -> None:
        """Process every pending event (tests and `sim` tooling); stops at `limit_s` virtual seconds."""
        self.advance_until(lambda: self.queue.next_time() is None, limit_s)

    # -- the loop -----------------------------------------------------------------------------------------------

    def _advance_to(self, at_us: int) -> None:
        while (next_at := self.queue.next_time()) is not None and next_at <= at_us:
            self._run_instant(next_at)
        self.clock.now_us = max(self.clock.now_us, at_us)

    def _after(self, seconds: float, action: Callable[[], None]) -> None:
        self.queue.push(self.clock.now_us + seconds_to_us(seconds), action)

    def _run_instant(self, at_us: int) -> None:
        """Run everything due at `at_us`, then one K8s scheduling round over the pending pods; repeat while
        the round itself scheduled work for the same instant."""
        self.clock.now_us = max(self.clock.now_us, at_us)
        for _ in range(MAX_STEPS_PER_INSTANT):
            while self.queue.next_time() == self.clock.now_us:
                self.queue.pop()()
            self._schedule_round()
            if self.queue.next_time() != self.clock.now_us:
                return
        raise HivedlabError("the simulated cluster did not settle (a scheduling loop that never ends)")

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
        for key in job.task_keys:
            self._create_pod(job, key, emit_framework=False)
        job.set_framework(state="AttemptPreparing", transition=self.clock.k8s_time())
        self._emit_framework(job)

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
        self._after(job.task_seconds[key], lambda: self._container_exit(job, key, uid))

    def _container_exit(self, job: SimJob, key: TaskKey, uid: str) -> None:
        pod = job.pods.get(key)
        if pod is None or pod.uid != uid or pod.deletion_timestamp is not None:
            return
        now = self.clock.k8s_time()
        self._emit_pod(job, key, phase="Succeeded", finished_at=now, exit_code=0)
        self._hived_release(job, pod)  # a completed pod is a deleted pod to HiveD (spec/hived.md §2.1)
        self._task_completed(job, key, CODE_SUCCEEDED)
        current = job.pods.get(key)
        if current is not None and current.uid == uid:
            self._delete_pod(job, key)  # FC deletes a completed task attempt's pod

    def _task_completed(self, job: SimJob, key: TaskKey, code: int) -> None:
        """A task attempt ended: retry the task (non-gang, transient) or complete it and apply the completion
        policy (spec/openpai.md §3.4, §3.5)."""
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
        for key in list(job.pods):
            self._delete_pod(job, key)
        self._maybe_attempt_deleted(job)

    def _stop_framework(self, job: SimJob) -> None:
        job.set_framework(execution_type="Stop")
        if job.completing is not None or job.framework is None or job.framework.state == "Completed":
            self._emit_framework(job)
            return
        completion = AttemptCompletion(CODE_STOP_REQUESTED, "", -1, DIAGNOSTICS[CODE_STOP_REQUESTED])
        self._complete_attempt(job, completion, kill_code=CODE_STOP_REQUESTED)

    def _maybe_attempt_deleted(self, job: SimJob) -> None:
        if job.completing is None or job.pods:
            return
        completion, fw = job.completing, job.framework
        assert fw is not None
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
        job.set_framework(
            state="Completed", transition=now, attempt_completion_time=now, completion_time=now, retry_delay_sec=None
        )
        self._emit_framework(job)

    def _new_attempt(self, job: SimJob, accountable: bool) -> None:
        """A new framework attempt (§3.4 step 4): new ConfigMap, same pod names, new uids."""
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
        if pod.node is not None and pod.finished_at is None and pod.started_at is not None:
            pod = replace(pod, finished_at=self.clock.k8s_time(), exit_code=137, phase="Failed")
            job.pods[key] = pod
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
        ref = hooks.pod_ref(self.api, pod.name(job.info.framework), pod.uid)
        state = self._hived_pods.pop(pod.uid, None)
        if state == "allocated":
            self.scheduler.delete_allocated_pod(ref)
        elif state == "unallocated":
            self.scheduler.delete_unallocated_pod(ref)

    # -- Kubernetes scheduling with HiveD as extender ----------------------------------------------------------

    def _pending(self) -> list[tuple[SimJob, TaskKey, PodState]]:
        found = [
            (job, key, pod)
            for job in self.jobs.values()
            for key, pod in job.pods.items()
            if pod.node is None and pod.deletion_timestamp is None
        ]

        def order(item: tuple[SimJob, TaskKey, PodState]) -> tuple[int, int, int]:
            job, _, pod = item
            at, seq = self._enqueued[pod.uid]
            return (-naming.k8s_priority(job.info.priority, job.info.submit_epoch_s), at, seq)

        return sorted(found, key=order)

    def _schedule_round(self) -> None:
        if self.scheduler is None:
            return
        nodes = list(self.scheduler.reported_nodes)
        for job, key, pod in self._pending():
            current = job.pods.get(key)
            if current is None or current.uid != pod.uid or current.deletion_timestamp is not None:
                continue  # deleted earlier in this round (a preempted gang's pending pod)
            self._schedule_pod(job, key, current, nodes)

    def _schedule_pod(self, job: SimJob, key: TaskKey, pod: PodState, nodes: list[str]) -> None:
        name = pod.name(job.info.framework)
        ref = hooks.pod_ref(self.api, name, pod.uid)
        spec = job.spec(key[0])
        try:
            result = self.scheduler.schedule(ref, spec, nodes, "Preempting")
        except getattr(self.api, "InternalError", ()) as err:
            raise HivedlabError(f"HiveD v0.3.4 itself would fail here (scheduling {name}): {err}") from None
        except self.api.UserError as err:
            message = f"[{pod.uid}({naming.NAMESPACE}/{name})]: {err.message}"
            self._failed_scheduling(job, key, f"Code: 400, Message: hivedscheduler: User Error: {message}")
            return
        kind = hooks.result_kind(self.api, result)
        if kind == "bind":
            self._bind(job, key, ref, spec, result)
        elif kind == "preempt":
            self._preempt(job, key, name, result.victims, len(nodes))
        else:
            text = f"1 {WAIT_PREFIX}{result.reason}"
            self._failed_scheduling(job, key, self._fit_error([text], len(nodes)))

    def _fit_error(self, reasons: list[str], workers: int) -> str:
        """K8s 1.15's FitError text: `0/N nodes are available: <count reason>, ....` (sorted)."""
        if self.other_nodes:
            reasons = [*reasons, f"{self.other_nodes} node(s) didn't match node selector"]
        return f"0/{workers + self.other_nodes} nodes are available: {', '.join(sorted(reasons))}."

    def _bind(self, job: SimJob, key: TaskKey, ref: Any, spec: dict[str, Any], result: Any) -> None:
        self.scheduler.add_allocated_pod(ref, spec, result.bind_info)
        self._hived_pods[ref.uid] = "allocated"
        now = self.clock.k8s_time()
        node = result.node
        pod = self._emit_pod(
            job,
            key,
            node=node,
            host_ip=self.node_ips.get(node, ""),
            scheduled_at=now,
            unschedulable=None,
            isolation=",".join(str(i) for i in result.leaf_cell_isolation),
            bind_info=self._dump_bind_info(result.bind_info),
        )
        job.set_task(key, node=node, host_ip=pod.host_ip)
        self._add_event(job, pod, "Scheduled", f"Successfully assigned {naming.NAMESPACE}/{ref.name} to {node}")
        delay = self._start_delay(job)
        uid = pod.uid
        self._after(delay, lambda: self._container_start(job, key, uid))

    def _start_delay(self, job: SimJob) -> float:
        """Container start delay, drawn once per job and scheduling instant: a gang bound in one round starts
        together (documented simplification; a real cluster adds seconds of skew between nodes)."""
        key = (job.seq, self.clock.now_us)
        if key not in self._start_delays:
            low, high = self.settings.container_start_s
            self._start_delays[key] = self.rng.uniform(low, high)
        return self._start_delays[key]

    def _preempt(self, job: SimJob, key: TaskKey, name: str, victims: Mapping[str, Any], workers: int) -> None:
        """K8s deletes the victims HiveD reported (one `Preempted` event each) and nominates the node."""
        reasons = []
        for node in sorted(victims):
            refs = sorted(victims[node], key=lambda r: r.name)
            listed = ", ".join(f"{r.uid}({naming.NAMESPACE}/{r.name})" for r in refs)
            reasons.append(f"1 node({node}) has preemptible Pods: {listed}")
        nominated = sorted(victims)[0] if victims else None
        self._failed_scheduling(job, key, self._fit_error(reasons, workers), nominated)
        for node in sorted(victims):
            for ref in sorted(victims[node], key=lambda r: r.name):
                self._delete_victim(ref.uid, name, node)

    def _delete_victim(self, uid: str, preemptor: str, node: str) -> None:
        for victim_job in self.jobs.values():
            for key, pod in list(victim_job.pods.items()):
                if pod.uid != uid or pod.deletion_timestamp is not None:
                    continue
                self._add_event(victim_job, pod, "Preempted", f"by {naming.NAMESPACE}/{preemptor} on node {node}")
                self._emit_pod(victim_job, key, deletion_timestamp=self.clock.k8s_time())
                self._after(self.settings.grace_s, lambda j=victim_job, k=key: self._remove_pod(j, k, uid))
                # FC sees the pod deleted by someone else: the task attempt ends with -101 (spec/openpai.md §3.4)
                if victim_job.completing is None:
                    self._task_completed(victim_job, key, CODE_POD_EXTERNAL_DELETED)
                return

    # -- events -----------------------------------------------------------------------------------------------

    def _add_event(self, job: SimJob, pod: PodState, reason: str, message: str) -> EventState:
        now = self.clock.k8s_time()
        pod_name = pod.name(job.info.framework)
        event = EventState(
            name=f"{pod_name}.{self._event_nanos():x}",
            uid=self.store.uid("event"),
            resource_version=self.store.resource_version(),
            pod_name=pod_name,
            pod_uid=pod.uid,
            reason=reason,
            message=message,
            component=naming.scheduler_name(job.info.virtual_cluster),
            first=now,
            last=now,
        )
        self._order += 1
        self.store.emit("ADDED", "events", event_object(event))
        return event

    def _event_nanos(self) -> int:
        """K8s names an event `<object>.<unix nanoseconds in hex>`; the counter keeps same-instant names apart."""
        return (self.clock.epoch_s() * 1_000_000 + self.clock.now_us % 1_000_000) * 1000 + self._order % 1000

    def _failed_scheduling(self, job: SimJob, key: TaskKey, message: str, nominated: str | None = None) -> None:
        """Record a FailedScheduling event (and the preemptor's nominated node); an identical repeat is not
        recorded again."""
        pod = job.pods[key]
        job.waiting = True
        last = self._failed_events.get(pod.uid)
        if last is not None and last.message == message and pod.nominated_node == (nominated or pod.nominated_node):
            return
        self._failed_events[pod.uid] = self._add_event(job, pod, "FailedScheduling", message)
        self._emit_pod(job, key, unschedulable=message, nominated_node=nominated or pod.nominated_node)


def _job_name_of(protocol: str) -> str:
    try:
        data = yaml.load(protocol, Loader=_LOADER)
    except yaml.YAMLError:
        return ""
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else ""
