"""The simulated OpenPAI v1.2.0 + HiveD v0.3.4 cluster: a deterministic discrete-event loop on virtual time.

It plays the parts a real cluster has (docs/kubernetes-scheduling.md, docs/openpai-model.md#framework-pods-and-events):
- rest-server: a submission goes through `admit_job` (HiveD's VC status as the quota source); a rejection is a
  reply and leaves nothing behind; an accepted job becomes a Framework after the write-merger's delay.
- FrameworkController: attempts, task pods (same name, new uid on a retry), completion policy, retry policy.
- Kubernetes v1.14's scheduler with HiveD as its extender (docs/kubernetes-scheduling.md): pending pods are
  retried after every change, in queue order (K8s pod priority = HiveD priority, then submission time, then
  creation); each attempt asks HiveD's filter (Filtering phase) and, only when that gives no bind, records a
  `FailedScheduling` event (a repeat bumps the event's `count`) and asks HiveD's preempt (Preempting phase) unless
  victims of an earlier preemption still terminate on the pod's nominated node; the victims of one node are
  deleted (each with a `Preempted` event) and the preemptor binds only after they are gone.
- kubelet: a bound pod's container starts after a few seconds and exits 0 after its commands' duration.
Every object change is written to the evidence log as a watch record with the virtual time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import yaml

from hivedlab.backends.protocol import ConfigSwitcher, JobStatus, Reply, RunInfo, SubmitResult, TaskStatus
from hivedlab.backends.sim import hooks
from hivedlab.backends.sim.framework import FrameworkController
from hivedlab.backends.sim.jobs import SimJob, TaskKey
from hivedlab.backends.sim.store import seconds_to_us
from hivedlab.basics.errors import HivedlabError
from hivedlab.models import hived
from hivedlab.models.hived import messages as hived_messages
from hivedlab.models.hived_bind_info import dump_bind_info
from hivedlab.models.openpai import naming
from hivedlab.models.openpai.jobstate import CODE_POD_EXTERNAL_DELETED, rest_state
from hivedlab.models.openpai.objects import EventState, PodState, event_object

# HiveD's filter reply (docs/hived-config-and-cells.md#wait-reasons)
MAX_STEPS_PER_INSTANT = 10_000
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: same results, 20x faster


class SimCluster(FrameworkController):
    """A `hivedlab.backends.protocol.Backend` on virtual time. One instance per experiment (one evidence log)."""

    cluster = "sim"
    run_info = RunInfo()  # nothing to learn: the simulator is the model
    wait_reason = "FailedScheduling"  # the reason of a waiting pod's event: HiveD's (the default scheduler's word)

    # -- Backend ------------------------------------------------------------------------------------------------

    def now(self) -> str:
        return self.clock.record_time()

    def close(self) -> None:
        """Nothing to release: the evidence writer belongs to the runner."""

    def use_config_switcher(self, switcher: ConfigSwitcher) -> None:
        """Ignored: the simulator is its own admin, `switch_config` switches HiveD's config itself."""

    def switch_config(self, name: str, text: str) -> None:
        """Run HiveD with this config. With jobs on the cluster this is HiveD's work-preserving reconfiguration:
        a new scheduler process that re-adds every bound pod (docs/hived-model.md, "Restart and recovery")."""
        try:
            mapping = yaml.load(text, Loader=_LOADER)
        except yaml.YAMLError as exc:
            raise HivedlabError(f"HiveD config '{name}' is not valid YAML: {str(exc).splitlines()[0]}") from None
        before = self.scheduler
        self._start_hived(mapping, name)
        if before is not None:
            self._restart_rest_server(before)

    def _restart_rest_server(self, before: Any) -> None:
        """paictl restarts the rest-server after HiveD; at start it drops every VC grant HiveD no longer lists
        (rest-server v1.2.0 models/v2/group.js deleteNonexistVCs, with the VC list of virtual-cluster/k8s.js
        getVcList: HiveD's inspect keys). HiveD still lists a removed VC while it holds a lazy-preempted job of
        it, so that VC's grant survives the switch (seen on the rehearsal cluster)."""
        granted = set(before.listed_vcs()) | {"default"} if self.granted_vcs is None else self.granted_vcs
        self.granted_vcs = granted & set(self.scheduler.listed_vcs())

    def restart_hived(self) -> None:
        """HiveD's process restarts with the same config (crash recovery): bound pods are re-added, preemptions
        in progress are forgotten, pending pods are scheduled again from scratch."""
        if self.config_mapping is None:
            raise HivedlabError("the simulated cluster has no HiveD config: switch_config first")
        self._start_hived(self.config_mapping, "current")

    def submit(self, user: str, job_key: str, protocol: str) -> SubmitResult:
        if self.scheduler is None or self.config_mapping is None:
            raise HivedlabError("the simulated cluster has no HiveD config: switch_config first")
        low, high = self.settings.submit_gap_s
        self._advance_to(self.clock.now_us + seconds_to_us(self.rng.uniform(low, high)))
        name = _job_name_of(protocol)
        framework = naming.framework_name(user, name) if name else ""
        admitted = hooks.admit(protocol, user, self.config_mapping, self.scheduler, self.granted_vcs)
        if isinstance(admitted, Reply):
            reply = admitted
        elif (user, admitted.name) in self.jobs:
            job_id = naming.job_id(user, admitted.name)
            reply = Reply(409, {"code": "ConflictJobError", "message": f"Job {job_id} already exists."})
        else:
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
        if fw is None:  # the DB's mock status before the Framework exists (docs/openpai-model.md#job-states)
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

    def _start_hived(self, mapping: Any, name: str) -> None:
        scheduler = hooks.new_scheduler(mapping, name, self.clock.k8s_time)
        for ref, spec, bind_info in self._bound.values():  # in the order the pods were bound
            try:
                scheduler.add_allocated_pod(ref, spec, bind_info)
            except hived.InternalError as err:
                raise HivedlabError(f"HiveD v0.3.4 itself would fail re-adding {ref.name} with config "
                                    f"'{name}': {err}") from None
        self.scheduler = scheduler
        self.config_mapping = mapping

    # -- the loop -----------------------------------------------------------------------------------------------

    def _advance_to(self, at_us: int) -> None:
        while (next_at := self.queue.next_time()) is not None and next_at <= at_us:
            self._run_instant(next_at)
        self.clock.now_us = max(self.clock.now_us, at_us)

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
        # one kube-scheduler per VC of the config (pai v1.2.0 src/hivedscheduler/deploy/hivedscheduler.yaml.template,
        # `hivedscheduler-ds-<vc>`): a pod of a VC the config lacks names a scheduler that is not there, so nothing
        # ever tries it and no event is written
        scheduled = set((self.config_mapping or {}).get("virtualClusters") or ())
        for job, key, pod in self._pending():
            if job.info.virtual_cluster not in scheduled:
                continue
            current = job.pods.get(key)
            if current is None or current.uid != pod.uid or current.deletion_timestamp is not None:
                continue  # deleted earlier in this round (a preempted gang's pending pod)
            self._schedule_pod(job, key, current, nodes)

    def _schedule_pod(self, job: SimJob, key: TaskKey, pod: PodState, nodes: list[str]) -> None:
        """One scheduling attempt of kube-scheduler v1.14: filter, then preempt only without a bind."""
        name = pod.name(job.info.framework)
        ref = hooks.pod_ref(name, pod.uid)
        spec = job.spec(key[0])
        try:
            result = self._ask_hived(ref, spec, nodes, hived.PHASE_FILTERING)
        except hived.UserError as err:
            # the extender's error reply, which K8s puts into the event as is; not a FitError: no preemption
            where = f"[{pod.uid}({naming.NAMESPACE}/{name})]: filterRoutine: Failed: "
            self._failed_scheduling(job, key, hived_messages.user_error(where, err.message))
            return
        if isinstance(result, hived.Bind):
            self._bind(job, key, ref, spec, result)
            return
        if isinstance(result, hived.Preempt):
            reasons = [f"1 {hived_messages.preemptible_pods(node, _listed(result.victims[node]))}"
                       for node in sorted(result.victims)]
        else:
            reasons = [f"1 {hived_messages.WAIT_PREFIX} {result.reason}"]
        self._failed_scheduling(job, key, self._fit_error(reasons, len(nodes)))
        if self._victims_terminating(job, job.pods[key]):
            return  # K8s: not eligible to preempt again while its nominated node has victims terminating
        try:
            answer = self._ask_hived(ref, spec, nodes, hived.PHASE_PREEMPTING)
        except hived.UserError:
            return  # the preempt call fails the same way; the filter's event already says why
        if isinstance(answer, hived.Preempt) and answer.victims:
            # HiveD's preempt reply names one node's victims (it picks the node at random; here: the first name)
            node = sorted(answer.victims)[0]
            self._preempt(job, key, name, node, answer.victims[node])

    def _ask_hived(self, ref: Any, spec: dict[str, Any], nodes: list[str], phase: hived.Phase) -> Any:
        try:
            return self.scheduler.schedule(ref, spec, nodes, phase)
        except hived.InternalError as err:
            raise HivedlabError(f"HiveD v0.3.4 itself would fail here (scheduling {ref.name}): {err}") from None

    def _victims_terminating(self, job: SimJob, pod: PodState) -> bool:
        """kube-scheduler's eligibility rule: a pod whose nominated node still has a terminating pod of lower
        K8s priority does not preempt again."""
        node = pod.nominated_node
        if not node:
            return False
        mine = naming.k8s_priority(job.info.priority, job.info.submit_epoch_s)
        return any(
            other.node == node and other.deletion_timestamp is not None
            and naming.k8s_priority(other_job.info.priority, other_job.info.submit_epoch_s) < mine
            for other_job in self.jobs.values()
            for other in other_job.pods.values()
        )

    def _fit_error(self, reasons: list[str], workers: int) -> str:
        """K8s 1.15's FitError text: `0/N nodes are available: <count reason>, ....` (sorted)."""
        if self.other_nodes:
            reasons = [*reasons, f"{self.other_nodes} node(s) didn't match node selector"]
        return f"0/{workers + self.other_nodes} nodes are available: {', '.join(sorted(reasons))}."

    def _bind(self, job: SimJob, key: TaskKey, ref: Any, spec: dict[str, Any], result: Any) -> None:
        self.scheduler.add_allocated_pod(ref, spec, result.bind_info)
        self._hived_pods[ref.uid] = "allocated"
        self._bound[ref.uid] = (ref, spec, result.bind_info)
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
            bind_info=dump_bind_info(result.bind_info),
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

    def _preempt(self, job: SimJob, key: TaskKey, name: str, node: str, victims: Any) -> None:
        """K8s nominates the node for the preemptor, then deletes the victims there (a `Preempted` event each)."""
        if job.pods[key].nominated_node != node:
            self._emit_pod(job, key, nominated_node=node)
        for ref in sorted(victims, key=lambda r: r.name):
            self._delete_victim(ref.uid, name, node, naming.scheduler_name(job.info.virtual_cluster))

    def _delete_victim(self, uid: str, preemptor: str, node: str, component: str) -> None:
        """K8s v1.14 deletes the victim, then records `Preempted` on it from the preemptor's scheduler."""
        for victim_job in self.jobs.values():
            for key, pod in list(victim_job.pods.items()):
                if pod.uid != uid or pod.deletion_timestamp is not None:
                    continue
                pod = self._emit_pod(victim_job, key, deletion_timestamp=self.clock.k8s_time())
                message = f"by {naming.NAMESPACE}/{preemptor} on node {node}"
                self._add_event(victim_job, pod, "Preempted", message, component)
                self._after(self.settings.grace_s, partial(self._remove_pod, victim_job, key, uid))
                # FC sees the pod deleted by someone else: the task attempt ends with -101
                # (docs/openpai-model.md#waiting-preemption-and-stop)
                if victim_job.completing is None:
                    self._task_completed(victim_job, key, CODE_POD_EXTERNAL_DELETED)
                return

    # -- events -----------------------------------------------------------------------------------------------

    def _add_event(
        self, job: SimJob, pod: PodState, reason: str, message: str, component: str | None = None
    ) -> EventState:
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
            component=component or self._component(job),
            first=now,
            last=now,
        )
        self._order += 1
        self.store.emit("ADDED", "events", event_object(event))
        return event

    def _component(self, job: SimJob) -> str:
        """Who reports a pod's scheduling events: HiveD's scheduler of the job's VC."""
        return naming.scheduler_name(job.info.virtual_cluster)

    def _event_nanos(self) -> int:
        """K8s names an event `<object>.<unix nanoseconds in hex>`; the counter keeps same-instant names apart."""
        return (self.clock.epoch_s() * 1_000_000 + self.clock.now_us % 1_000_000) * 1000 + self._order % 1000

    def _failed_scheduling(self, job: SimJob, key: TaskKey, message: str) -> None:
        """A FailedScheduling event (kube-batch: Unschedulable), or, for a repeat with the same message, the same
        event with its `count` bumped (client-go's event correlator); the pod's condition is updated only when its
        message changes."""
        pod = job.pods[key]
        job.waiting = True
        seen = self._failed_events.setdefault(pod.uid, {})
        event = seen.get(message)
        if event is None:
            seen[message] = self._add_event(job, pod, self.wait_reason, message)
        else:
            event = replace(event, count=event.count + 1, last=self.clock.k8s_time(),
                            resource_version=self.store.resource_version())
            seen[message] = event
            self.store.emit("MODIFIED", "events", event_object(event))
        if pod.unschedulable != message:
            self._emit_pod(job, key, unschedulable=message)


def _listed(refs: Any) -> str:
    """HiveD's filter text for a node's preemptible pods: `<uid>(<namespace>/<name>)`, by name."""
    return ", ".join(f"{r.uid}({naming.NAMESPACE}/{r.name})" for r in sorted(refs, key=lambda r: r.name))


def _job_name_of(protocol: str) -> str:
    try:
        data = yaml.load(protocol, Loader=_LOADER)
    except yaml.YAMLError:
        return ""
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else ""
