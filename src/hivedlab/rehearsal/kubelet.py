"""The emulated kubelet's decisions (pure): the Node of each worker, and what to do with each pod bound to one.

There are no containers. A bound pod is set Running at once, with container ids that say `emulated://`; it runs as
long as the job's commands would sleep (`sleep N`, `sleep 2m`, summed; at least `MIN_RUN_S`), divided by the
speed-up factor (a command without a sleep counts as the simulator counts it: a short command 1 s, training 60 s),
measured from the pod's `status.startTime`, so a restarted emulator goes on where it was. Its app
container then exits 0, or the exit code a test injected.

A TensorFlow task of a TFJob (tf-operator gives its containers `TF_CONFIG`, the cluster of every task) behaves as
TensorFlow 1's distributed training does, as the simulator's TFJob mode does: a task's session waits until every task
of its cluster answers ("CreateSession still waiting for response from worker"), so its training time counts from the
moment the last of them started; a parameter server serves (`server.join()`) until it is deleted.

A pod being deleted gracefully (a deletionTimestamp) ends its running container with 143 (SIGTERM) and is then
deleted for good, as a kubelet confirms a graceful deletion. A node a test marks NotReady starts no pod and reports
Ready=False.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from hivedlab.backends.sim.settings import SHORT_COMMANDS, SimSettings
from hivedlab.evidence import EMULATED_CONTAINER_PREFIX, EMULATED_KUBELET_MARK, EMULATED_NODE_LABEL

EMULATED = EMULATED_CONTAINER_PREFIX  # the container ids grading recognises (docs/checker.md, rehearsal evidence)
EMULATED_LABEL = EMULATED_NODE_LABEL  # what the real backend recognises (run.json `cluster_kind`)
GPU_RESOURCE = "nvidia.com/gpu"
MANAGED_RESOURCE = "hivedscheduler.microsoft.com/pod-scheduling-enable"
FUSE_RESOURCE = "github.com/fuse"  # every OpenPAI task pod asks for one (its FUSE device plugin)
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
SIGTERM_EXIT = 143
MIN_RUN_S = 1.0
KUBELET_VERSION = f"v1.20.2{EMULATED_KUBELET_MARK}"
_SLEEP = re.compile(r"\bsleep\s+(\d+(?:\.\d+)?)([smhd]?)\b")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
SIM = SimSettings()  # the simulator's defaults: the same job runs as long here as there


@dataclass(frozen=True)
class Worker:
    """A machine the emulator registers as a Node: a worker (its GPUs), or the master (none; `hivedlab doctor`
    expects it among the nodes, as quick-start makes it one)."""

    name: str  # the node name: the machine's hostname, as HiveD's config names it
    ip: str
    gpus: int
    master: bool = False


@dataclass(frozen=True)
class Faults:
    """What a test injected: nodes to report NotReady; exit codes by a part of the pod's name or of its OpenPAI job
    (`user~job`, the PAI_JOB_NAME the rest-server gives the app container; pod names are hashes)."""

    not_ready: frozenset[str] = frozenset()
    exit_codes: dict[str, int] = field(default_factory=dict)

    def exit_code(self, names: str) -> int:
        return next((code for part, code in self.exit_codes.items() if part in names), 0)


@dataclass(frozen=True)
class Action:
    """`start` (set Running), `finish` (its app container exits with `exit_code`), `delete` (confirm a deletion)."""

    kind: str
    name: str
    exit_code: int = 0


def parse_faults(data: Any) -> Faults:
    if not isinstance(data, dict):
        return Faults()
    codes = data.get("exit_codes") or {}
    return Faults(frozenset(str(n) for n in data.get("not_ready") or []),
                  {str(k): int(v) for k, v in codes.items()} if isinstance(codes, dict) else {})


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def node_object(worker: Worker) -> dict[str, Any]:
    """The Node a worker registers: its GPUs as capacity, as OpenPAI's workers expose them, labelled as emulated."""
    amount = {"cpu": "32", "memory": "262144Mi", "pods": "110", "ephemeral-storage": "1Ti",
              GPU_RESOURCE: str(worker.gpus), MANAGED_RESOURCE: "1k", FUSE_RESOURCE: "10k"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": worker.name, "labels": {"kubernetes.io/hostname": worker.name, EMULATED_LABEL: "true",
                                                     "pai-master" if worker.master else "pai-worker": "true"}},
        "spec": {},
        "status": {"capacity": dict(amount), "allocatable": dict(amount),
                   "addresses": [{"type": "InternalIP", "address": worker.ip},
                                 {"type": "Hostname", "address": worker.name}],
                   "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "containerRuntimeVersion": f"{EMULATED}0",
                                "operatingSystem": "linux", "architecture": "amd64"}},
    }


def node_status(ready: bool, now: float) -> dict[str, Any]:
    """The status patch of a node's Ready condition."""
    stamp = rfc3339(now)
    condition = {"type": "Ready", "status": "True" if ready else "False", "lastHeartbeatTime": stamp,
                 "lastTransitionTime": stamp,
                 "reason": "KubeletReady" if ready else "KubeletNotReady",
                 "message": "emulated kubelet is posting ready status" if ready else "a test marked the node NotReady"}
    return {"status": {"conditions": [condition]}}


def untainted(node: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The node's taints without the not-ready one, or None when it has none to lift."""
    taints = (node.get("spec") or {}).get("taints") or []
    kept = [t for t in taints if t.get("key") != NOT_READY_TAINT]
    return kept if len(kept) != len(taints) else None


def user_commands(pod: dict[str, Any]) -> str:
    """The job's commands: OpenPAI hands them to the runtime in USER_CMD; else the containers' command lines."""
    spec = pod.get("spec") or {}
    containers = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    for container in containers:
        for env in container.get("env") or []:
            if env.get("name") == "USER_CMD":
                return str(env.get("value") or "")
    return "\n".join(" ".join(c.get("command") or []) + " " + " ".join(c.get("args") or []) for c in containers)


def job_id(pod: dict[str, Any]) -> str:
    """OpenPAI's `user~job` of a task pod (its app container's PAI_JOB_NAME), or ''."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        for env in container.get("env") or []:
            if env.get("name") == "PAI_JOB_NAME":
                return str(env.get("value") or "")
    return ""


def tf_config(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The TF_CONFIG tf-operator put on the pod's containers (`{"cluster": {type: [host:port]}, "task": {...}}`)."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        for env in container.get("env") or []:
            if env.get("name") == "TF_CONFIG":
                try:
                    config = json.loads(str(env.get("value") or ""))
                except ValueError:
                    return None
                return config if isinstance(config, dict) else None
    return None


def training_start(pod: dict[str, Any], pods: Mapping[tuple[str, str], dict[str, Any]]) -> float | None:
    """When the pod's app began its work: its own start; for a TensorFlow task, the start of the last task of its
    cluster (`<pod>.<namespace>.svc:<port>`), None while one has not started or is gone."""
    started = (pod.get("status") or {}).get("startTime")
    config = tf_config(pod)
    if not started or config is None:
        return _epoch(started) if started else None
    namespace = pod["metadata"].get("namespace") or "default"
    latest = _epoch(started)
    for hosts in (config.get("cluster") or {}).values():
        for host in hosts if isinstance(hosts, list) else []:
            peer = pods.get((namespace, str(host).split(".", 1)[0]))
            peer_started = ((peer or {}).get("status") or {}).get("startTime")
            if not peer_started:
                return None
            latest = max(latest, _epoch(peer_started))
    return latest


def serves_forever(pod: dict[str, Any]) -> bool:
    """A TensorFlow parameter server: it never ends by itself."""
    config = tf_config(pod)
    return config is not None and str((config.get("task") or {}).get("type", "")).lower() == "ps"


def command_seconds(line: str) -> float:
    """One command's run time as the simulator counts it (`hivedlab.backends.sim.settings`): its `sleep`s; else a
    short command (`echo`, `nvidia-smi`, ...) takes `short_command_s`; anything else is training, `training_s`."""
    sleeps = _SLEEP.findall(line)
    if sleeps:
        return sum(float(n) * _UNIT[unit] for n, unit in sleeps)
    words = line.split()
    return SIM.short_command_s if words and words[0] in SHORT_COMMANDS else SIM.training_s


def run_seconds(commands: str, speedup: float) -> float:
    total = sum(command_seconds(line) for line in commands.splitlines() if line.strip())
    return max(MIN_RUN_S, total / speedup)


def container_id(pod: dict[str, Any], container: str) -> str:
    return f"{EMULATED}{pod['metadata'].get('uid', '')}/{container}"


def _terminated(pod: dict[str, Any], name: str, code: int, started: str, finished: str) -> dict[str, Any]:
    reason = "Completed" if code == 0 else "Error"
    return {"terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": finished,
                           "containerID": container_id(pod, name)}}


def _status_of(pod: dict[str, Any], container: dict[str, Any], state: dict[str, Any], ready: bool) -> dict[str, Any]:
    return {"name": container["name"], "state": state, "ready": ready, "started": "running" in state,
            "restartCount": 0, "image": container.get("image", ""),
            "imageID": f"{EMULATED}{container.get('image', '')}", "containerID": container_id(pod, container["name"])}


def _conditions(ready: bool, stamp: str) -> list[dict[str, Any]]:
    value = "True" if ready else "False"
    return [{"type": t, "status": s, "lastProbeTime": None, "lastTransitionTime": stamp}
            for t, s in (("Initialized", "True"), ("Ready", value), ("ContainersReady", value),
                         ("PodScheduled", "True"))]


def running_status(pod: dict[str, Any], worker: Worker, now: float) -> dict[str, Any]:
    """The status patch that starts a pod: init containers done, app containers running."""
    stamp = rfc3339(now)
    spec = pod.get("spec") or {}
    return {"status": {
        "phase": "Running", "hostIP": worker.ip, "podIP": worker.ip, "startTime": stamp,
        "conditions": _conditions(True, stamp),
        "initContainerStatuses": [_status_of(pod, c, _terminated(pod, c["name"], 0, stamp, stamp), True)
                                  for c in spec.get("initContainers") or []],
        "containerStatuses": [_status_of(pod, c, {"running": {"startedAt": stamp}}, True)
                              for c in spec.get("containers") or []],
    }}


def finished_status(pod: dict[str, Any], code: int, now: float) -> dict[str, Any]:
    """The status patch of a pod whose app containers exited with `code`."""
    status = pod.get("status") or {}
    started = status.get("startTime") or rfc3339(now)
    stamp = rfc3339(now)
    return {"status": {
        "phase": "Succeeded" if code == 0 else "Failed", "conditions": _conditions(False, stamp),
        "containerStatuses": [_status_of(pod, c, _terminated(pod, c["name"], code, started, stamp), False)
                              for c in (pod.get("spec") or {}).get("containers") or []],
    }}


def decide(pod: dict[str, Any], workers: dict[str, Worker], faults: Faults, now: float, speedup: float,
           pods: Mapping[tuple[str, str], dict[str, Any]] | None = None) -> Action | None:
    """What the kubelet of the pod's node does with it now (None: nothing, or not one of ours); `pods` are every
    pod by (namespace, name), where a TensorFlow task looks for the other tasks of its cluster."""
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    node = spec.get("nodeName")
    if node not in workers:
        return None
    phase = status.get("phase") or "Pending"
    terminal = phase in ("Succeeded", "Failed")
    if meta.get("deletionTimestamp"):
        if phase == "Running":
            return Action("finish", meta["name"], SIGTERM_EXIT)
        return Action("delete", meta["name"])
    if node in faults.not_ready or terminal:
        return None
    if phase != "Running":
        return Action("start", meta["name"])
    if serves_forever(pod):
        return None
    started = training_start(pod, pods or {})
    if started is not None and now >= started + run_seconds(user_commands(pod), speedup):
        return Action("finish", meta["name"], faults.exit_code(f"{meta['name']} {job_id(pod)}"))
    return None
