"""Virtual time, the event queue and the simulated API server's bookkeeping (uids, resourceVersions, watch
records into the evidence log)."""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from hivedlab.basics.errors import HivedlabError
from hivedlab.evidence import EvidenceWriter, format_time, parse_time

_UID_NAMESPACE = uuid.UUID("6f1d2a8e-6c1b-4c55-9d7e-2f0a4c3b9e10")
US = 1_000_000


def seconds_to_us(seconds: float) -> int:
    return int(round(seconds * US))


@dataclass
class Clock:
    """Virtual time in whole microseconds since `start`."""

    start: datetime
    now_us: int = 0

    @classmethod
    def at(cls, text: str) -> Clock:
        start = parse_time(text)
        if start is None:
            raise HivedlabError(f"sim.start: not an RFC 3339 time: {text!r}")
        return cls(start)

    def datetime(self, at_us: int | None = None) -> datetime:
        return self.start + timedelta(microseconds=self.now_us if at_us is None else at_us)

    def record_time(self) -> str:
        """Evidence record time: microseconds."""
        return format_time(self.datetime())

    def k8s_time(self) -> str:
        """What the API server writes into objects: RFC 3339, whole seconds."""
        return self.datetime().astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def epoch_s(self) -> int:
        return int(self.datetime().timestamp())


@dataclass(order=True)
class _Entry:
    at_us: int
    seq: int
    action: Callable[[], None] = field(compare=False)


class EventQueue:
    """Timed callbacks, run in (time, insertion) order: deterministic."""

    def __init__(self) -> None:
        self._heap: list[_Entry] = []
        self._seq = itertools.count()

    def push(self, at_us: int, action: Callable[[], None]) -> None:
        heapq.heappush(self._heap, _Entry(at_us, next(self._seq), action))

    def next_time(self) -> int | None:
        return self._heap[0].at_us if self._heap else None

    def pop(self) -> Callable[[], None]:
        return heapq.heappop(self._heap).action


class ApiStore:
    """Hands out uids and resourceVersions and records every object change as a watch record."""

    def __init__(self, writer: EvidenceWriter | None, clock: Clock) -> None:
        self._writer = writer
        self._clock = clock
        self._rv = itertools.count(1000)
        self._uids = itertools.count()

    def uid(self, kind: str) -> str:
        return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{next(self._uids)}"))

    def resource_version(self) -> str:
        return str(next(self._rv))

    def emit(self, watch_type: str, resource: str, obj: dict[str, Any]) -> None:
        if self._writer is not None:
            self._writer.write_object(watch_type, resource, obj, time=self._clock.record_time())
