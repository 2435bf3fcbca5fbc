"""Timeline charts of an experiment: Gantt-style, one lane per node (or per GPU), one bar per task attempt.

The chart's DATA is a pure function (`chart_data`: task attempts -> lanes, bars, markers, VC bands, config switches) and is what
the tests check; `draw` only paints that data with matplotlib's headless Agg backend. Chart text stays in English
because matplotlib ships no CJK font.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.patches import Patch

WAIT_LANE_PREFIX = "waiting: "


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
    key: str  # node name, "node/gpu<i>", or WAIT_LANE_PREFIX + "job/task"
    label: str
    kind: str  # node | gpu | wait
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
    kind: str  # preempted | recreated
    job: str
    task: str
    attempt: int


@dataclass(frozen=True)
class VcBand:
    vc: str
    first: int  # lane indices, inclusive
    last: int


@dataclass(frozen=True)
class Switch:
    """A plan step that switched HiveD's config or restarted HiveD while jobs ran: a vertical line on the chart."""

    time: float
    label: str  # e.g. "config one-vc", "HiveD restart"


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
) -> ChartData:
    """Lay out an experiment's task attempts: node (or GPU) lanes grouped by VC, then one lane per waiting task.

    `nodes` are the cluster's nodes (so idle ones show), `vc_nodes` the nodes each VC's cells sit on
    (`hivedlab.checker.timeline.vc_nodes_from_config`; VCs sharing nodes share a band), `end` the time the log ends (open
    bars run to it), `switches` the plan steps that switched HiveD's config or restarted it (vertical lines).
    """
    vc_nodes = merge_shared(vc_nodes or {})
    seen_nodes = tuple(dict.fromkeys([*nodes, *(a.node for a in attempts if a.node)]))
    times = [t for a in attempts for t in (a.start, a.end, a.created) if t is not None]
    times += [t for a in attempts for span in a.waiting for t in span if t is not None]
    times += [switch.time for switch in switches]
    finish = max([end or 0.0, *times]) if times or end else 1.0
    finish = finish if finish > 0 else 1.0

    order, groups = _node_order(seen_nodes, vc_nodes)
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
    node_lane_count = len(lanes)

    def node_lanes(a: TaskAttempt) -> tuple[int, ...]:
        assert a.node is not None
        if per_gpu and a.gpus:
            return tuple(lane_of[(a.node, g)] for g in sorted(set(a.gpus)))
        return (lane_of.get((a.node, None), first_lane[a.node]),)

    bars: list[Bar] = []
    markers: list[Marker] = []
    for a in attempts:
        waits = [(s, e) for s, e in a.waiting]
        if waits:
            key = f"{WAIT_LANE_PREFIX}{a.job}/{a.task}"
            index = next((i for i, lane in enumerate(lanes) if lane.key == key), None)
            if index is None:
                index = len(lanes)
                lanes.append(Lane(key, f"waiting {a.job}/{a.task}", "wait"))
            for s, e in waits:
                bars.append(Bar((index,), s, finish if e is None else e, a.job, a.task, a.attempt, "wait",
                                open_end=e is None, outcome=a.outcome))
            if a.recreated:
                markers.append(Marker(index, a.created if a.created is not None else waits[0][0], "recreated",
                                      a.job, a.task, a.attempt))
        if a.node and a.start is not None:
            where = node_lanes(a)
            bars.append(Bar(where, a.start, finish if a.end is None else a.end, a.job, a.task, a.attempt, "run",
                            node=a.node, gpus=tuple(sorted(set(a.gpus))), open_end=a.end is None,
                            outcome=a.outcome))
            if a.preempted:
                markers.append(Marker(where[0], finish if a.end is None else a.end, "preempted",
                                      a.job, a.task, a.attempt))
            if a.recreated and not waits:
                markers.append(Marker(where[0], a.created if a.created is not None else a.start, "recreated",
                                      a.job, a.task, a.attempt))

    bands = []
    for vc, members in groups:
        indices = [i for i, lane in enumerate(lanes[:node_lane_count]) if lane.node in members]
        if indices:
            bands.append(VcBand(vc, min(indices), max(indices)))
    jobs = tuple(dict.fromkeys(a.job for a in sorted(attempts, key=_first_seen)))
    return ChartData(title, tuple(lanes), tuple(bars), tuple(markers), tuple(bands), jobs, finish,
                     switches=tuple(switches))


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


# ---------------------------------------------------------------- drawing

_PALETTE = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974",
            "#64B5CD")


def _plain(text: str) -> str:
    """Keep matplotlib from reading `$...$` in user-given names as mathtext."""
    return re.sub(r"([$\\])", r"\\\1", text)


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600:d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _ticks(end: float) -> list[float]:
    """Round tick steps (seconds, minutes, hours), at most nine ticks."""
    steps = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400)
    step = next((s for s in steps if end / s <= 8), steps[-1] * (int(end / (8 * steps[-1])) + 1))
    return [float(i * step) for i in range(int(end // step) + 1)]


def draw(data: ChartData, salt: str = "") -> tuple[bytes, str]:
    """Paint the chart; returns (PNG bytes, SVG text). `salt` keeps SVG ids unique when charts share a page."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.patches import Patch

    height = max(2.4, 0.55 * len(data.lanes) + 1.6)
    with matplotlib.rc_context({"svg.hashsalt": salt or data.title, "font.size": 9}):
        fig, ax = plt.subplots(figsize=(10, height))
        try:
            _paint(ax, data, Patch)
            fig.tight_layout()
            png_buf, svg_buf = io.BytesIO(), io.StringIO()
            fig.savefig(png_buf, format="png", dpi=110, metadata={"Software": None})
            fig.savefig(svg_buf, format="svg", metadata={"Date": None, "Creator": None})
        finally:
            plt.close(fig)
    return png_buf.getvalue(), _prefix_ids(svg_buf.getvalue(), salt or data.title)


_ID_USE = re.compile(r'(\bid="|href="#|url\(#)([^")]+)')


def _prefix_ids(svg: str, salt: str) -> str:
    """Prefix every id and reference (matplotlib's glyph ids like `DejaVuSans-41` are the same in every chart), so
    that several charts inline in one HTML page never share an id."""
    prefix = re.sub(r"[^A-Za-z0-9_-]", "-", salt) or "chart"
    return _ID_USE.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)


def _paint(ax: Axes, data: ChartData, patch_type: type[Patch]) -> None:
    count = len(data.lanes)
    colour = {job: _PALETTE[i % len(_PALETTE)] for i, job in enumerate(data.jobs)}
    y_of = {i: count - 1 - i for i in range(count)}  # first lane on top
    for band_index, band in enumerate(data.vc_bands):
        low, high = y_of[band.last] - 0.5, y_of[band.first] + 0.5
        ax.axhspan(low, high, color="#000000", alpha=0.04 if band_index % 2 == 0 else 0.09, zorder=0)
        ax.axhline(low, color="#555555", linewidth=0.8, linestyle="--", zorder=1)
        ax.axhline(high, color="#555555", linewidth=0.8, linestyle="--", zorder=1)
        ax.text(data.end * 1.035, (low + high) / 2, _plain(f"VC {band.vc}"), va="center", ha="left", fontsize=8,
                color="#333333")
    for bar in data.bars:
        width = max(bar.end - bar.start, data.end * 0.002)
        for lane in bar.lanes:
            y = y_of[lane]
            if bar.kind == "wait":
                ax.barh(y, width, left=bar.start, height=0.5, color="none", edgecolor=colour[bar.job],
                        hatch="///", linewidth=0.8, zorder=2)
            else:
                ax.barh(y, width, left=bar.start, height=0.7, color=colour[bar.job], edgecolor="#222222",
                        linewidth=0.6, alpha=0.9, zorder=3)
                if width >= data.end * 0.12:
                    label = f"{bar.task} (try {bar.attempt + 1})" + (" ..." if bar.open_end else "")
                    ax.text(bar.start + width / 2, y, _plain(label), ha="center", va="center", fontsize=7,
                            color="white", zorder=4, clip_on=True)
    for marker in data.markers:
        y = y_of[marker.lane]
        if marker.kind == "preempted":
            ax.plot(marker.time, y, marker="X", markersize=10, color="#B00020", zorder=5)
        else:
            ax.plot(marker.time, y, marker=">", markersize=8, color="#222222", zorder=5)
    for switch in data.switches:
        ax.axvline(switch.time, color="#1F5FBF", linestyle="-.", linewidth=1.2, zorder=1)
        ax.text(switch.time, count - 0.4, _plain(f" {switch.label}"), ha="left", va="bottom", fontsize=7,
                color="#1F5FBF")
    ax.set_yticks([y_of[i] for i in range(count)], [_plain(lane.label) for lane in data.lanes])
    ax.set_ylim(-0.7, count - 0.3)
    ticks = _ticks(data.end)
    ax.set_xticks(ticks, [_clock(t) for t in ticks])
    ax.set_xlim(0, data.end * (1.16 if data.vc_bands else 1.03))
    ax.set_xlabel("time since the experiment began (h:mm:ss)")
    ax.set_title(_plain(data.title))
    ax.grid(axis="x", linestyle=":", linewidth=0.5)
    handles: list[Artist] = [patch_type(facecolor=colour[j], label=_plain(j)) for j in data.jobs]
    handles.append(patch_type(facecolor="none", edgecolor="#555555", hatch="///", label="waiting (unschedulable)"))
    from matplotlib.lines import Line2D

    handles.append(Line2D([], [], marker="X", color="#B00020", linestyle="none", label="preempted"))
    handles.append(Line2D([], [], marker=">", color="#222222", linestyle="none", label="re-created attempt"))
    if data.switches:
        handles.append(Line2D([], [], color="#1F5FBF", linestyle="-.", label="HiveD config switch / restart"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=min(4, len(handles)),
              fontsize=7, frameon=False)
