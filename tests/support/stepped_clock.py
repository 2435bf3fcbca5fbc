"""Virtual time for a plain-Kubernetes backend run on `FakeKubeflow`: the backend's clocks, each sleep one cluster
step, returning only once the watcher has recorded what the step changed."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hivedlab.backends.k8s import RESOURCES as WATCHED
from hivedlab.backends.k8s import Clocks
from hivedlab.evidence import format_time
from tests.support.fakekubeflow import FakeKubeflow


class SteppedClock:
    """The backend's clocks for a run on `FakeKubeflow`: each sleep is one cluster step of `step_s` seconds, and
    returns only once the watcher has recorded every change of the run's namespace (so a run is exact, not racy)."""

    START = datetime(2026, 11, 26, 9, 0, tzinfo=timezone.utc)

    def __init__(self, world: FakeKubeflow, step_s: float = 15.0, settle_s: float = 10.0,
                 interrupt_at: int | None = None) -> None:
        self.world, self.step_s, self.settle_s = world, step_s, settle_s
        self.interrupt_at = interrupt_at  # the step at which the user presses Ctrl-C
        self.t = 0.0
        self.namespace = ""
        self.log: Path | None = None

    def clocks(self) -> Clocks:
        return Clocks(sleep=self.sleep, clock=lambda: self.t, now=self.now)

    def now(self) -> str:
        return format_time(self.START + timedelta(seconds=self.t))

    def follow(self, namespace: str, log: Path) -> None:
        self.namespace, self.log = namespace, log

    def sleep(self, seconds: float) -> None:
        self.t += max(seconds, self.step_s)
        self.world.tick()
        self.settle()
        if self.world.ticks == self.interrupt_at:
            raise KeyboardInterrupt

    def settle(self) -> None:
        """Wait until the log holds one object record per change the API made in the namespace."""
        deadline = time.monotonic() + self.settle_s
        while time.monotonic() < deadline:
            if self.log is None or self.recorded() >= self.changes():
                return
            time.sleep(0.002)
        raise AssertionError(f"the watcher recorded {self.recorded()} of {self.changes()} changes")

    def changes(self) -> int:
        with self.world.api.cond:
            return sum(1 for _, resource, _, obj in self.world.api.history
                       if resource in WATCHED and obj["metadata"].get("namespace") == self.namespace)

    def recorded(self) -> int:
        assert self.log is not None
        text = self.log.read_text(encoding="utf-8") if self.log.exists() else ""
        return text.count('"kind":"object"')
