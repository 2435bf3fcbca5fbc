"""What the watcher has written so far on a plain Kubernetes cluster, reduced to what `job_status` needs: per TFJob,
its state from the operator's conditions, whether it is gone, whether a pod of it waited or ran, and the pods alive."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hivedlab.evidence import EvidenceWriter, iter_evidence
from hivedlab.models.kubeflow.manifests import WAIT_REASONS, tf_pod, tfjob_state


def _ran(pod: dict[str, Any]) -> bool:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        state = status.get("state") or {}
        if "running" in state or "terminated" in state or (status.get("lastState") or {}).get("terminated"):
            return True
    return False


class Observed:
    """Thread-safe: the watcher's threads write, the runner's thread reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.states: dict[str, str] = {}  # TFJob name -> WAITING | RUNNING | SUCCEEDED | FAILED
        self.gone: set[str] = set()  # TFJobs deleted
        self.seen: set[str] = set()  # every TFJob the log shows: created by this run (the namespace is its own)
        self.waiting: dict[str, str] = {}  # TFJob name -> the last wait message of one of its pods
        self.ran: set[str] = set()  # TFJobs a container of which has run
        self.pods: dict[str, str] = {}  # uid -> name, of the pods alive
        self._pod_job: dict[str, str] = {}  # pod name -> TFJob name

    def observe(self, watch_type: str, resource: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        with self._lock:
            if resource == "tfjobs" and meta.get("name"):
                self.seen.add(str(meta["name"]))
                if watch_type == "DELETED":
                    self.gone.add(str(meta["name"]))
                elif watch_type != "BOOKMARK":
                    self.states[str(meta["name"])] = tfjob_state(obj)
            elif resource == "pods" and meta.get("uid") and meta.get("name"):
                tf = tf_pod(meta.get("labels") or {})
                if watch_type == "DELETED":
                    self.pods.pop(str(meta["uid"]), None)
                elif watch_type != "BOOKMARK":
                    self.pods[str(meta["uid"])] = str(meta["name"])
                if tf is not None:
                    self._pod_job[str(meta["name"])] = tf.job
                    if watch_type != "DELETED" and _ran(obj):
                        self.ran.add(tf.job)
            elif resource == "events" and obj.get("reason") in WAIT_REASONS:
                involved = obj.get("involvedObject") or {}
                job = self._pod_job.get(str(involved.get("name")))
                if involved.get("kind") == "Pod" and job:
                    self.waiting[job] = str(obj.get("message") or "")

    def replay(self, path: str | Path) -> None:
        """What an existing log (a resumed run's) already holds."""
        if not Path(path).exists():
            return
        for record in iter_evidence(path):
            if record.kind == "object" and record.object is not None and record.resource:
                self.observe(record.watch_type or "", record.resource, record.object)

    def job(self, name: str) -> tuple[str | None, bool, bool, bool]:
        """(state from the conditions, None before the TFJob was seen; gone; a pod waited; a pod ran)."""
        with self._lock:
            return self.states.get(name), name in self.gone, name in self.waiting, name in self.ran

    def known(self, name: str) -> bool:
        """Whether this run's log already shows the TFJob (an earlier session created it)."""
        with self._lock:
            return name in self.seen

    def pods_left(self) -> int:
        with self._lock:
            return len(self.pods)


class TapWriter:
    """The evidence writer as the watcher sees it: every object goes to the log first, then to `Observed`.
    `now` stamps the records when given (the backend's clock), else the writer does."""

    def __init__(self, writer: EvidenceWriter, observed: Observed, now: Callable[[], str] | None = None) -> None:
        self._writer, self._observed, self._now = writer, observed, now

    @property
    def path(self) -> Path:
        return self._writer.path

    def write_object(self, watch_type: str, resource: str, obj: dict[str, Any], time: str | None = None,
                     synthetic: bool = False) -> dict[str, Any]:
        stamp = time or (self._now() if self._now else None)
        record = self._writer.write_object(watch_type, resource, obj, time=stamp, synthetic=synthetic)
        self._observed.observe(watch_type, resource, obj)
        return record

    def write_action(self, action_type: str, payload: dict[str, Any], time: str | None = None) -> dict[str, Any]:
        return self._writer.write_action(action_type, payload, time=time or (self._now() if self._now else None))
