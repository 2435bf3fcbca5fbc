"""What the watcher has written so far on an OpenPAI cluster, reduced to what `PaiBackend.job_status` needs: the
task pods that waited (FailedScheduling, not informer lag) and those whose container ran; and the tap through which
the watcher's objects reach it after the evidence log."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from hivedlab.evidence import EvidenceWriter, iter_evidence
from hivedlab.models.scheduler_messages import TRANSIENT, classify


class ObservedIndex:
    """What the watcher has written so far, reduced to what `job_status` needs (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.waiting: dict[str, str] = {}  # pod name -> last FailedScheduling message
        self.ran: set[str] = set()  # pod names whose container has run

    def observe(self, resource: str, obj: dict[str, Any]) -> None:
        if (resource == "events" and obj.get("reason") == "FailedScheduling"
                and classify(str(obj.get("message") or "")) != TRANSIENT):  # informer lag: retried, not a wait
            involved = obj.get("involvedObject") or {}
            if involved.get("kind") == "Pod" and involved.get("name"):
                with self._lock:
                    self.waiting[str(involved["name"])] = str(obj.get("message") or "")
        elif resource == "pods":
            name = (obj.get("metadata") or {}).get("name")
            statuses = (obj.get("status") or {}).get("containerStatuses") or []
            if name and any(("running" in (s.get("state") or {})) or ("terminated" in (s.get("state") or {}))
                            or (s.get("lastState") or {}).get("terminated") for s in statuses):
                with self._lock:
                    self.ran.add(str(name))

    def replay(self, path: str | Path) -> None:
        """Observe what an existing log (a resumed run's) already holds: its pods may be gone from the cluster."""
        if not Path(path).exists():
            return
        for record in iter_evidence(path):
            if record.kind == "object" and record.object is not None and record.watch_type != "DELETED":
                self.observe(str(record.resource), record.object)

    def for_framework(self, framework: str) -> tuple[bool, bool, str]:
        prefix = framework + "-"
        with self._lock:
            waiting = [msg for pod, msg in self.waiting.items() if pod.startswith(prefix)]
            ran = any(pod.startswith(prefix) for pod in self.ran)
        return bool(waiting), ran, (waiting[-1] if waiting else "")


class TapWriter:
    """The evidence writer as the watcher sees it: every object goes to the log first, then to the index."""

    def __init__(self, writer: EvidenceWriter, index: ObservedIndex) -> None:
        self._writer, self._index = writer, index

    def write_object(self, watch_type: str, resource: str, obj: dict[str, Any], time: str | None = None,
                     synthetic: bool = False) -> dict[str, Any]:
        record = self._writer.write_object(watch_type, resource, obj, time=time, synthetic=synthetic)
        if watch_type != "DELETED":
            self._index.observe(resource, obj)
        return record

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)
