"""The events a controller of the simulated cluster records on an object other than a pod (tf-operator's on a TFJob),
as client-go's event recorder writes them: a repeat of the same reason and message on the same object is the same
event with its `count` and `lastTimestamp` bumped (tools/record/events_cache.go, `EventCorrelator`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hivedlab.backends.sim.store import ApiStore, Clock
from hivedlab.models.kubeflow import operator


@dataclass(frozen=True)
class _Seen:
    name: str
    uid: str
    first: str
    count: int


class TfJobEvents:
    """tf-operator's events on the simulated TFJobs. `nanos` names a new event `<object>.<nanoseconds in hex>`."""

    def __init__(self, store: ApiStore, clock: Clock, nanos: Callable[[], int]) -> None:
        self.store, self.clock, self._nanos = store, clock, nanos
        self._seen: dict[tuple[str, str, str], _Seen] = {}

    def record(self, tfjob: Mapping[str, Any], uid: str, what: tuple[str, str, str], *args: object) -> None:
        """Record `what` (type, reason, message format) on the TFJob, its message formatted with `args`."""
        message = what[2].format(*args)
        key = (uid, what[1], message)
        now = self.clock.k8s_time()
        seen = self._seen.get(key)
        if seen is None:
            name = f"{tfjob['metadata']['name']}.{self._nanos():x}"
            seen = _Seen(name, self.store.uid("event"), now, 1)
            watch_type = "ADDED"
        else:
            seen = _Seen(seen.name, seen.uid, seen.first, seen.count + 1)
            watch_type = "MODIFIED"
        self._seen[key] = seen
        event = operator.tfjob_event(tfjob, uid, what, message, name=seen.name, event_uid=seen.uid,
                                     resource_version=self.store.resource_version(), first=seen.first, last=now,
                                     count=seen.count)
        self.store.emit(watch_type, "events", event)
