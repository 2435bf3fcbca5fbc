"""The data of a timeline chart: a pure function from task attempts to lanes, bars, markers, VC bands, config
switches, rejected submissions and spans in which a node was not Ready or cordoned (`chart_data`); what the tests check
of a chart's content."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

WAIT_LANE_PREFIX = "waiting: "
REJECTED_LANE_PREFIX = "rejected: "


@dataclass(frozen=True)
class TaskAttempt:
    """What a chart needs of one task attempt; times are seconds since the experiment began."""

    job: str
    task: str
    attempt: int
    node: str | None = None
    gpus: tuple[int, ...] = ()
    start: float | None = None  # the container started running (None: never ran)
    end: float | None = None  # the attempt ended (None: still running when the log ends)
    outcome: str = ""
    waiting: tuple[tuple[float, float | None], ...] = ()  # spans spent unschedulable (end None: still waiting)
    preempted: bool = False
    recreated: bool = False  # this attempt replaced an earlier one of the same task (same pod name, new uid)
    created: float | None = None
    bound: float | None = None  # the pod was bound to its node (gang members bind in the same round)


@dataclass(frozen=True)
class Lane:
    key: str  # node name, "node/gpu<i>", WAIT_LANE_PREFIX + "job/task", or REJECTED_LANE_PREFIX + job
    label: str  # what the lane is about, in no language: the kind's words are added when it is drawn
    kind: str  # node | gpu | wait | rejected
    node: str | None = None


@dataclass(frozen=True)
class Bar:
    lanes: tuple[int, ...]  # indices into ChartData.lanes; several when a task holds several GPU lanes
    start: float
    end: float
    job: str
    task: str
    attempt: int
    kind: str  # run | wait
    node: str | None = None
    gpus: tuple[int, ...] = ()
    open_end: bool = False  # still running / waiting when the log ends
    outcome: str = ""


@dataclass(frozen=True)
class Marker:
    lane: int
    time: float
    kind: str  # preempted | recreated | rejected
    job: str
    task: str
    attempt: int
    status: int | None = None  # a rejected submission's HTTP status


@dataclass(frozen=True)
class VcBand:
    vc: str
    first: int  # lane indices, inclusive
    last: int


@dataclass(frozen=True)
class Switch:
    """A plan step that switched HiveD's config or restarted HiveD while jobs ran: a vertical line on the chart."""

    time: float
    kind: str  # config | restart
    name: str = ""  # the config switched to


@dataclass(frozen=True)
class Rejection:
    """A submission the REST server refused: it leaves no pod, only the runner's record of the reply."""

    job: str
    time: float  # when it was submitted
    status: int | None
    message: str


@dataclass(frozen=True)
class NotReady:
    """A span in which a node was not Ready, or with `kind` "cordoned" cordoned (`start` None: since before the log;
    `end` None: to its end)."""

    node: str
    start: float | None
    end: float | None
    kind: str = "not_ready"  # not_ready | cordoned: how the band is painted and its legend entry


@dataclass(frozen=True)
class NotReadyBand:
    """A node's not-Ready (or cordoned) span as drawn: across all its lanes, from `start` to `end`."""

    node: str
    lanes: tuple[int, ...]
    start: float
    end: float
    open_end: bool = False
    kind: str = "not_ready"  # not_ready | cordoned


@dataclass(frozen=True)
class ChartData:
    title: str
    lanes: tuple[Lane, ...]
    bars: tuple[Bar, ...]
    markers: tuple[Marker, ...]
    vc_bands: tuple[VcBand, ...]
    jobs: tuple[str, ...]  # colour order
    end: float
    notes: tuple[str, ...] = field(default=())
    switches: tuple[Switch, ...] = field(default=())
    rejections: tuple[Rejection, ...] = field(default=())
    not_ready: tuple[NotReadyBand, ...] = field(default=())


def _node_order(
    nodes: tuple[str, ...], vc_nodes: dict[str, tuple[str, ...]]
) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Nodes grouped by VC (config order), then nodes no VC claims; returns (order, [(vc, nodes)])."""
    order: list[str] = []
    groups: list[tuple[str, list[str]]] = []
    for vc, members in vc_nodes.items():
        fresh = [n for n in members if n not in order]
        if fresh:
            order.extend(fresh)
            groups.append((vc, fresh))
    order.extend(n for n in nodes if n not in order)
    return order, groups


def chart_data(
    title: str,
    attempts: list[TaskAttempt] | tuple[TaskAttempt, ...],
    nodes: tuple[str, ...] = (),
    vc_nodes: dict[str, tuple[str, ...]] | None = None,
    end: float | None = None,
    switches: tuple[Switch, ...] = (),
    rejections: tuple[Rejection, ...] = (),
    origin: float = 0.0,
    not_ready: tuple[NotReady, ...] = (),
) -> ChartData:
    """Lay out an experiment's task attempts: node (or GPU) lanes grouped by VC, then one lane per waiting task, then
    one lane per rejected submission (a mark at its submit time).

    `nodes` are the cluster's nodes (so idle ones show), `vc_nodes` the nodes each VC's cells sit on
    (`hivedlab.checker.judging.timeline.vc_nodes_from_config`; VCs sharing nodes share a band), `end` the time the log
    ends (open bars run to it), `switches` the plan steps that switched HiveD's config or restarted it (vertical lines),
    `origin` the seconds from the report's T+0 to the times given (the chart then counts from T+0, so that a time on
    it reads as the report prints the same instant), `not_ready` the spans in which a node was not Ready or cordoned
    (a band across its lanes).
    """
    if origin:
        attempts = [_shifted(a, origin) for a in attempts]
        end = None if end is None else end + origin
        switches = tuple(replace(s, time=s.time + origin) for s in switches)
        rejections = tuple(replace(r, time=r.time + origin) for r in rejections)
        not_ready = tuple(replace(n, start=None if n.start is None else n.start + origin,
                                  end=None if n.end is None else n.end + origin) for n in not_ready)
    vc_nodes = merge_shared(vc_nodes or {})
    seen_nodes = tuple(dict.fromkeys([*nodes, *(a.node for a in attempts if a.node), *(n.node for n in not_ready)]))
    finish = _finish(attempts, end, switches, rejections, not_ready)
    order, groups = _node_order(seen_nodes, vc_nodes)
    placed = _node_lanes(order, attempts)
    lanes = list(placed.lanes)
    bars: list[Bar] = []
    markers: list[Marker] = []
    for a in attempts:
        _draw_attempt(a, finish, placed, lanes, bars, markers)
    for r in rejections:
        index = _lane_index(lanes, Lane(f"{REJECTED_LANE_PREFIX}{r.job}", r.job, "rejected"))
        markers.append(Marker(index, r.time, "rejected", r.job, "", 0, r.status))
    bands = []
    for vc, members in groups:
        indices = [i for i, lane in enumerate(placed.lanes) if lane.node in members]
        if indices:
            bands.append(VcBand(vc, min(indices), max(indices)))
    jobs = tuple(dict.fromkeys(a.job for a in sorted(attempts, key=_first_seen)))
    down = tuple(NotReadyBand(n.node, tuple(i for i, lane in enumerate(placed.lanes) if lane.node == n.node),
                              n.start or 0.0, finish if n.end is None else n.end, n.end is None, n.kind)
                 for n in not_ready)
    return ChartData(title, tuple(lanes), tuple(bars), tuple(markers), tuple(bands), jobs, finish,
                     switches=tuple(switches), rejections=tuple(rejections), not_ready=down)


def _finish(
    attempts: Sequence[TaskAttempt], end: float | None, switches: tuple[Switch, ...], rejections: tuple[Rejection, ...],
    not_ready: tuple[NotReady, ...] = (),
) -> float:
    """Where the chart ends: the log's end or the last time on it, whichever is later (1 s for an empty chart)."""
    times = [t for a in attempts for t in (a.start, a.end, a.created) if t is not None]
    times += [t for n in not_ready for t in (n.start, n.end) if t is not None]
    times += [t for a in attempts for span in a.waiting for t in span if t is not None]
    times += [switch.time for switch in switches] + [r.time for r in rejections]
    finish = max([end or 0.0, *times]) if times or end else 1.0
    return finish if finish > 0 else 1.0


@dataclass(frozen=True)
class _NodeLanes:
    """The node lanes in order (one per GPU when some task holds several GPUs of a node), and where each sits."""

    lanes: tuple[Lane, ...]
    lane_of: dict[tuple[str, int | None], int]
    first_lane: dict[str, int]
    per_gpu: bool

    def of(self, a: TaskAttempt) -> tuple[int, ...]:
        assert a.node is not None
        if self.per_gpu and a.gpus:
            return tuple(self.lane_of[(a.node, g)] for g in sorted(set(a.gpus)))
        return (self.lane_of.get((a.node, None), self.first_lane[a.node]),)


def _node_lanes(order: list[str], attempts: Sequence[TaskAttempt]) -> _NodeLanes:
    gpus_by_node: dict[str, set[int]] = {}
    for a in attempts:
        if a.node:
            gpus_by_node.setdefault(a.node, set()).update(a.gpus)
    per_gpu = any(len(g) > 1 for g in gpus_by_node.values())
    lanes: list[Lane] = []
    lane_of: dict[tuple[str, int | None], int] = {}
    first_lane: dict[str, int] = {}
    for node in order:
        first_lane[node] = len(lanes)
        gpus = sorted(gpus_by_node.get(node, set()))
        if per_gpu and gpus:
            for gpu in gpus:
                lane_of[(node, gpu)] = len(lanes)
                lanes.append(Lane(f"{node}/gpu{gpu}", f"{node} GPU {gpu}", "gpu", node))
        else:
            lane_of[(node, None)] = len(lanes)
            lanes.append(Lane(node, node, "node", node))
    return _NodeLanes(tuple(lanes), lane_of, first_lane, per_gpu)


def _lane_index(lanes: list[Lane], lane: Lane) -> int:
    """The index of the lane with `lane`'s key, appended first when there is none yet."""
    index = next((i for i, known in enumerate(lanes) if known.key == lane.key), None)
    if index is None:
        index = len(lanes)
        lanes.append(lane)
    return index


def _draw_attempt(
    a: TaskAttempt, finish: float, placed: _NodeLanes, lanes: list[Lane], bars: list[Bar], markers: list[Marker]
) -> None:
    """One attempt's wait bars (on its task's wait lane), its run bar (on its node or GPU lanes) and its marks."""
    waits = [(s, e) for s, e in a.waiting]
    if waits:
        index = _lane_index(lanes, Lane(f"{WAIT_LANE_PREFIX}{a.job}/{a.task}", f"{a.job}/{a.task}", "wait"))
        for s, e in waits:
            bars.append(Bar((index,), s, finish if e is None else e, a.job, a.task, a.attempt, "wait",
                            open_end=e is None, outcome=a.outcome))
        if a.recreated:
            markers.append(Marker(index, a.created if a.created is not None else waits[0][0], "recreated",
                                  a.job, a.task, a.attempt))
    if a.node and a.start is not None:
        where = placed.of(a)
        bars.append(Bar(where, a.start, finish if a.end is None else a.end, a.job, a.task, a.attempt, "run",
                        node=a.node, gpus=tuple(sorted(set(a.gpus))), open_end=a.end is None,
                        outcome=a.outcome))
        if a.preempted:
            markers.append(Marker(where[0], finish if a.end is None else a.end, "preempted",
                                  a.job, a.task, a.attempt))
        if a.recreated and not waits:
            markers.append(Marker(where[0], a.created if a.created is not None else a.start, "recreated",
                                  a.job, a.task, a.attempt))


def _shifted(a: TaskAttempt, by: float) -> TaskAttempt:
    def move(t: float | None) -> float | None:
        return None if t is None else t + by

    return replace(a, start=move(a.start), end=move(a.end), created=move(a.created), bound=move(a.bound),
                   waiting=tuple((s + by, move(e)) for s, e in a.waiting))


def _first_seen(a: TaskAttempt) -> float:
    candidates = [t for t in (a.created, a.start) if t is not None] + [s for s, _ in a.waiting]
    return min(candidates) if candidates else float("inf")


def merge_shared(vc_nodes: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """VCs whose nodes overlap (a cell chain shared by several VCs) become one band named `a+b`."""
    merged: list[tuple[list[str], list[str]]] = []
    for vc, nodes in vc_nodes.items():
        if not nodes:
            continue
        for names, members in merged:
            if set(members) & set(nodes):
                names.append(vc)
                members.extend(n for n in nodes if n not in members)
                break
        else:
            merged.append(([vc], list(nodes)))
    return {"+".join(names): tuple(members) for names, members in merged}
