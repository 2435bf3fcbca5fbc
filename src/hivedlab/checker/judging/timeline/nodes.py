"""Node faults: when a node's Ready condition changed during the log, and when the node was cordoned
(`spec.unschedulable`), from the Node records a real cluster's watcher writes (`hivedlab.backends.watcher`: each node
when listed, then each change of its Ready condition or of `spec.unschedulable`), and what the evidence shows of the
pods on it meanwhile (docs/checker.md#node-faults). The simulator records no Node: its logs have no fault.

HiveD counts a node bad while it is not Ready or cordoned, healthy again once it is Ready and not cordoned
(docs/hived-config-and-cells.md); the log shows that only where a pod's FailedScheduling event names the node in
HiveD's words ("have to use at least one bad node …"), which `bad_marks` collects.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from hivedlab.checker.judging.timeline.facts import Attempt, Cordon, JobTimeline, Mark, NodeSpan, Outage, Wait
from hivedlab.models.hived.config import node_name

_BAD_NODE = re.compile(r"at least one bad node (\S+)")


@dataclass
class NodeReadiness:
    """Folds Node records into outages, one record at a time."""

    ready: dict[str, bool] = field(default_factory=dict)  # node -> Ready as last recorded
    open: dict[str, Outage] = field(default_factory=dict)  # node -> the outage under way
    done: list[Outage] = field(default_factory=list)

    def feed(self, watch_type: str, node: dict[str, object], mark: Mark) -> None:
        name = _name(node)
        if not name or watch_type == "BOOKMARK":
            return
        status, reason = _ready_condition(node)
        ready = status == "True" and watch_type != "DELETED"
        known = self.ready.get(name)
        self.ready[name] = ready
        if not ready and name not in self.open:
            # not Ready when first seen: since before the log (no start); else it turned not Ready here
            self.open[name] = Outage(name, None if known is None else mark, None, status or "", reason)
        elif ready and name in self.open:
            self.done.append(_ended(self.open.pop(name), mark))

    def result(self) -> tuple[Outage, ...]:
        """The outages in which the node's Ready changed within the log (one not Ready from its first record to the
        end of the log never changed: it is no fault of the log's), in the order they began."""
        return _changed_within_log(self.done, self.open.values())


@dataclass
class NodeCordons:
    """Folds Node records into cordons (`spec.unschedulable`), one record at a time, by the rule of `NodeReadiness`:
    a node cordoned when first seen was so since before the log (no start); one cordoned from its first record to the
    end of the log never changed and is no cordon of the log's. A DELETED record shows the node's last state."""

    seen: set[str] = field(default_factory=set)
    open: dict[str, Cordon] = field(default_factory=dict)  # node -> the cordon under way
    done: list[Cordon] = field(default_factory=list)

    def feed(self, watch_type: str, node: dict[str, object], mark: Mark) -> None:
        name = _name(node)
        if not name or watch_type == "BOOKMARK":
            return
        first = name not in self.seen
        self.seen.add(name)
        if cordoned(node) and name not in self.open:
            self.open[name] = Cordon(name, None if first else mark, None)
        elif not cordoned(node) and name in self.open:
            self.done.append(replace(self.open.pop(name), end=mark))

    def result(self) -> tuple[Cordon, ...]:
        """The cordons set or cleared within the log, in the order they began."""
        return _changed_within_log(self.done, self.open.values())


_Span = TypeVar("_Span", Outage, Cordon)


def _changed_within_log(done: Iterable[_Span], still_open: Iterable[_Span]) -> tuple[_Span, ...]:
    """The spans that ended within the log, and those still open at its end that began within it, by their start."""
    found = list(done)
    found.extend(span for span in still_open if span.start is not None)
    found.sort(key=began)
    return tuple(found)


def began(span: NodeSpan) -> tuple[int, str]:
    """The order in which node spans are told: by the record that began them (one begun before the log first), then
    by node."""
    return span.start.seq if span.start else -1, span.node


def cordoned(node: dict[str, object]) -> bool:
    """Whether the Node is cordoned: `spec.unschedulable` true, the field `kubectl cordon` sets (`uncordon` removes
    it) and the watcher records each change of (`hivedlab.backends.watcher.node_health`). The
    `node.kubernetes.io/unschedulable` taint is not read: the node lifecycle controller adds and removes it after the
    field changes, in an update the watcher does not record."""
    spec = node.get("spec")
    return isinstance(spec, dict) and bool(spec.get("unschedulable"))


def _name(node: dict[str, object]) -> str | None:
    meta = node.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return str(name) if name else None


def _ended(outage: Outage, mark: Mark) -> Outage:
    return Outage(outage.node, outage.start, mark, outage.status, outage.reason)


def _ready_condition(node: dict[str, object]) -> tuple[str | None, str]:
    status = node.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return str(condition.get("status")), str(condition.get("reason") or "")
    return None, ""


def _within(span: NodeSpan, t: float) -> bool:
    return (span.start is None or span.start.t <= t) and (span.end is None or t <= span.end.t)


def on_node(span: NodeSpan, attempt: Attempt) -> bool:
    """Whether the pod sat on the node at some time in the span (an outage or a cordon): bound to it before the span
    ended, not ended before it began."""
    if attempt.node != span.node or attempt.bound is None:
        return False
    ended = attempt.ended
    return (span.end is None or attempt.bound.seq <= span.end.seq) and \
        (ended is None or span.start is None or ended.seq >= span.start.seq)


def bad_marks(span: NodeSpan, attempts: Iterable[Attempt]) -> tuple[tuple[Attempt, Wait], ...]:
    """The waits, during the span (an outage or a cordon), whose HiveD reason names the node as bad, each with its
    pod."""
    found = []
    for attempt in attempts:
        for wait in attempt.waits:
            named = _BAD_NODE.search(wait.message)
            if named and node_name(named.group(1)) == span.node and _within(span, wait.mark.t):
                found.append((attempt, wait))
    return tuple(sorted(found, key=lambda pair: pair[1].mark.seq))


def touched(span: NodeSpan, jobs: Iterable[JobTimeline]) -> tuple[tuple[JobTimeline, Attempt], ...]:
    """The pods the span (an outage or a cordon) touched, as the evidence shows them: on the node during it, or
    waiting with HiveD's reason naming it bad."""
    found: dict[str, tuple[JobTimeline, Attempt]] = {}
    for job in jobs:
        for attempt in job.attempts:
            if on_node(span, attempt) or bad_marks(span, (attempt,)):
                found[attempt.uid] = (job, attempt)
    return tuple(found.values())
