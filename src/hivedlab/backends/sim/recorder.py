"""The events a controller of the simulated cluster records on an object other than a pod (tf-operator's on a TFJob,
kube-batch's on a PodGroup), as client-go's event recorder writes them: a repeat of the same reason and message on the
same object is the same event with its `count` and `lastTimestamp` bumped (tools/record/events_cache.go,
`EventCorrelator`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hivedlab.backends.sim.store import ApiStore, Clock


@dataclass(frozen=True)
class _Seen:
    name: str
    uid: str
    first: str
    count: int


class ObjectEvents:
    """Events on the simulated cluster's objects. `nanos` names a new event `<object>.<nanoseconds in hex>`."""

    def __init__(self, store: ApiStore, clock: Clock, nanos: Callable[[], int]) -> None:
        self.store, self.clock, self._nanos = store, clock, nanos
        self._seen: dict[tuple[str, str, str], _Seen] = {}

    def record(self, involved: Mapping[str, str], component: str, what: tuple[str, str, str], *args: object) -> None:
        """Record `what` (type, reason, message format, the message formatted with `args`) on the object `involved`
        names (apiVersion, kind, name, namespace, uid), as `component` reports it."""
        kind, reason, message = what[0], what[1], what[2].format(*args)
        key = (involved["uid"], reason, message)
        now = self.clock.k8s_time()
        seen = self._seen.get(key)
        if seen is None:
            seen = _Seen(f"{involved['name']}.{self._nanos():x}", self.store.uid("event"), now, 1)
            watch_type = "ADDED"
        else:
            seen = _Seen(seen.name, seen.uid, seen.first, seen.count + 1)
            watch_type = "MODIFIED"
        self._seen[key] = seen
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"name": seen.name, "namespace": involved["namespace"], "uid": seen.uid,
                              "resourceVersion": self.store.resource_version(), "creationTimestamp": seen.first},
                 "involvedObject": dict(involved), "reason": reason, "message": message,
                 "source": {"component": component}, "firstTimestamp": seen.first, "lastTimestamp": now,
                 "count": seen.count, "type": kind, "eventTime": None, "reportingComponent": "",
                 "reportingInstance": ""}
        self.store.emit(watch_type, "events", event)
