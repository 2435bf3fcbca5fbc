"""Timeline charts of an experiment: Gantt-style, one lane per node (or per GPU), one bar per task attempt.

The chart's DATA is a pure function (`chart_data`: task attempts -> lanes, bars, markers, VC bands, config switches,
rejected submissions) and is what the tests check, as are the texts the chart carries (`legend_entries`, `bar_labels`);
`draw` only paints them with matplotlib's headless Agg backend, in the report's language, with the packaged CJK font
(`hivedlab.checker.report.fonts`) so that Chinese text needs no system font.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from hivedlab.basics.text import Text
from hivedlab.checker.report.text import clock

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.text import Text as MplText

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
) -> ChartData:
    """Lay out an experiment's task attempts: node (or GPU) lanes grouped by VC, then one lane per waiting task, then
    one lane per rejected submission (a mark at its submit time).

    `nodes` are the cluster's nodes (so idle ones show), `vc_nodes` the nodes each VC's cells sit on
    (`hivedlab.checker.timeline.vc_nodes_from_config`; VCs sharing nodes share a band), `end` the time the log ends
    (open bars run to it), `switches` the plan steps that switched HiveD's config or restarted it (vertical lines),
    `origin` the seconds from the report's T+0 to the times given (the chart then counts from T+0, so that a time on
    it reads as the report prints the same instant).
    """
    if origin:
        attempts = [_shifted(a, origin) for a in attempts]
        end = None if end is None else end + origin
        switches = tuple(replace(s, time=s.time + origin) for s in switches)
        rejections = tuple(replace(r, time=r.time + origin) for r in rejections)
    vc_nodes = merge_shared(vc_nodes or {})
    seen_nodes = tuple(dict.fromkeys([*nodes, *(a.node for a in attempts if a.node)]))
    times = [t for a in attempts for t in (a.start, a.end, a.created) if t is not None]
    times += [t for a in attempts for span in a.waiting for t in span if t is not None]
    times += [switch.time for switch in switches] + [r.time for r in rejections]
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
                lanes.append(Lane(key, f"{a.job}/{a.task}", "wait"))
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

    for r in rejections:
        key = f"{REJECTED_LANE_PREFIX}{r.job}"
        index = next((i for i, lane in enumerate(lanes) if lane.key == key), None)
        if index is None:
            index = len(lanes)
            lanes.append(Lane(key, r.job, "rejected"))
        markers.append(Marker(index, r.time, "rejected", r.job, "", 0, r.status))

    bands = []
    for vc, members in groups:
        indices = [i for i, lane in enumerate(lanes[:node_lane_count]) if lane.node in members]
        if indices:
            bands.append(VcBand(vc, min(indices), max(indices)))
    jobs = tuple(dict.fromkeys(a.job for a in sorted(attempts, key=_first_seen)))
    return ChartData(title, tuple(lanes), tuple(bars), tuple(markers), tuple(bands), jobs, finish,
                     switches=tuple(switches), rejections=tuple(rejections))


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


# ---------------------------------------------------------------- the chart's words

_WORDS: dict[str, Text] = {
    "axis": Text("自实验开始起的时间（T+时:分:秒）", "time since the experiment began (T+h:mm:ss)"),
    "waiting": Text("等待（无法调度）", "waiting (unschedulable)"),
    "preempted": Text("被抢占", "preempted"),
    "recreated": Text("重新创建的尝试", "re-created attempt"),
    "rejected": Text("提交被拒绝", "submission rejected"),
    "config": Text("切换 HiveD 配置", "HiveD config switch"),
    "restart": Text("重启 HiveD", "HiveD restart"),
}
_LANE_WORDS = {"wait": Text("等待 {}", "waiting {}"), "rejected": Text("被拒绝 {}", "rejected {}")}
_SWITCH_WORDS = {"config": Text("切换到配置 {}", "config {}"), "restart": Text("重启 HiveD", "HiveD restart")}
_VC = Text("虚拟集群\n{}", "VC\n{}")
_TRY = Text("{task}（第 {n} 次）", "{task} (try {n})")
_REJECTED_AT = Text("{time} 提交，被拒绝（HTTP {status}）", "submitted {time}, rejected (HTTP {status})")
PLOT_PX = 600  # the plot's width in pixels per chart length, at the least (the lane labels take the rest)


@dataclass(frozen=True)
class LegendEntry:
    key: str  # job:<name> | waiting | preempted | recreated | rejected | config | restart
    label: str


@dataclass(frozen=True)
class BarLabel:
    lane: int
    x: float  # where the text is anchored, in seconds
    text: str
    place: str  # inside (centred on the bar) | right (beside its end) | left (beside its start)
    span: tuple[float, float] = (0.0, 0.0)  # the bar's start and end


def lane_label(lane: Lane, lang: str) -> str:
    words = _LANE_WORDS.get(lane.kind)
    return words.get(lang).format(lane.label) if words else lane.label


def switch_label(switch: Switch, lang: str) -> str:
    return _SWITCH_WORDS[switch.kind].get(lang).format(switch.name)


def legend_entries(data: ChartData, lang: str) -> tuple[LegendEntry, ...]:
    """One entry per kind of mark the chart draws, and none for a mark it does not."""
    drawn_jobs = {bar.job for bar in data.bars}
    entries = [LegendEntry(f"job:{job}", job) for job in data.jobs if job in drawn_jobs]
    kinds = [*(("waiting",) if any(b.kind == "wait" for b in data.bars) else ()),
             *(m.kind for m in data.markers), *(s.kind for s in data.switches)]
    entries += [LegendEntry(kind, _WORDS[kind].get(lang)) for kind in _WORDS if kind in kinds]
    return tuple(entries)


def bar_labels(data: ChartData, lang: str) -> tuple[BarLabel, ...]:
    """Labels of the run bars: inside a bar wide enough for its text (a first attempt's as just the task's name if
    need be); beside a shorter one (after its end, or before its start near the chart's right edge), naming the job
    too, since a short bar's colour is hard to see."""
    labels = []
    for bar in data.bars:
        if bar.kind != "run":
            continue
        text = _TRY.get(lang).format(task=bar.task, n=bar.attempt + 1) + (" …" if bar.open_end else "")
        room = (bar.end - bar.start) / data.end * PLOT_PX
        # a first attempt's label may leave out "try 1" to fit inside its bar
        inside = next((t for t in (text, bar.task if bar.attempt == 0 and not bar.open_end else "")
                       if t and room >= _text_px(t)), "")
        if inside:
            labels += [BarLabel(lane, (bar.start + bar.end) / 2, inside, "inside", (bar.start, bar.end))
                       for lane in bar.lanes]
        elif bar.end <= data.end * 0.75:
            labels.append(BarLabel(bar.lanes[0], bar.end, f"{bar.job} {text}", "right", (bar.start, bar.end)))
        else:
            labels.append(BarLabel(bar.lanes[0], bar.start, f"{bar.job} {text}", "left", (bar.start, bar.end)))
    return tuple(labels)


def _text_px(text: str) -> float:
    """About how wide a bar label is drawn (7 pt at the PNG's 110 dpi: ~6 px a Latin letter, ~11 px a Chinese one)."""
    return 10 + sum(11 if "\u2e80" <= char <= "\uffef" else 6 for char in text)


def rejection_label(marker: Marker, lang: str) -> str:
    status = marker.status if marker.status is not None else "?"
    return _REJECTED_AT.get(lang).format(time=clock(marker.time), status=status)


# ---------------------------------------------------------------- drawing

_PALETTE = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974",
            "#64B5CD")
_MARKS = {  # kind -> (matplotlib marker, size, colour)
    "preempted": ("X", 10, "#B00020"),
    "recreated": (">", 8, "#222222"),
    "rejected": ("D", 7, "#7A3DB8"),
}
_SWITCH_COLOUR = {"config": "#1F5FBF", "restart": "#0F7F6F"}


def _plain(text: str) -> str:
    """Keep matplotlib from reading `$...$` in user-given names as mathtext."""
    return re.sub(r"([$\\])", r"\\\1", text)


def _ticks(end: float) -> list[float]:
    """Round tick steps (seconds, minutes, hours), at most nine ticks."""
    steps = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400)
    step = next((s for s in steps if end / s <= 8), steps[-1] * (int(end / (8 * steps[-1])) + 1))
    return [float(i * step) for i in range(int(end // step) + 1)]


def draw(data: ChartData, lang: str = "en", salt: str = "") -> tuple[bytes, str]:
    """Paint the chart with its text in `lang`; returns (PNG bytes, SVG text). `salt` keeps SVG ids unique when
    charts share a page."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from hivedlab.checker.report.fonts import LATIN_FAMILY

    height = max(2.4, 0.55 * len(data.lanes) + 1.6)
    with matplotlib.rc_context({"svg.hashsalt": salt or data.title, "font.size": 9, "font.family": [LATIN_FAMILY]}):
        fig, ax = plt.subplots(figsize=(10, height))
        try:
            beside = _paint(ax, data, lang)
            _set_cjk_font(ax)
            fig.tight_layout()
            _paint_inside_labels(ax, data, lang, beside)  # placed after the layout, clear of the labels beside
            _set_cjk_font(ax)
            png_buf, svg_buf = io.BytesIO(), io.StringIO()
            fig.savefig(png_buf, format="png", dpi=110, metadata={"Software": None})
            fig.savefig(svg_buf, format="svg", metadata={"Date": None, "Creator": None})
        finally:
            plt.close(fig)
    return png_buf.getvalue(), _prefix_ids(svg_buf.getvalue(), salt or data.title)


def draw_many(jobs: Sequence[tuple[ChartData, str, str]]) -> list[tuple[bytes, str]]:
    """`draw(data, lang, salt)` for each job, in order. Drawing is most of a report's time, so where the platform
    forks and this process runs no other thread (a fork copies no lock another thread may hold), the charts are
    drawn in forked worker processes, one per core; elsewhere one after the other. Either way the same bytes."""
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return [draw(*job) for job in jobs]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(_draw_job, jobs))


def _draw_job(job: tuple[ChartData, str, str]) -> tuple[bytes, str]:
    return draw(*job)  # looked up when called: a forked worker draws with what the parent process has


def _set_cjk_font(ax: Axes) -> None:
    """Set the texts that have Chinese in the packaged CJK font, whole; the rest keep matplotlib's own font, which
    lays text out faster than the large CJK font does (and a fallback font list would slow every text)."""
    from matplotlib.text import Text as MplText

    from hivedlab.checker.report.fonts import needs_cjk, register_with_matplotlib

    for text in ax.figure.findobj(MplText):
        if needs_cjk(text.get_text()):
            text.set_fontfamily([register_with_matplotlib()])


_ID_USE = re.compile(r'(\bid="|href="#|url\(#)([^")]+)')


def _prefix_ids(svg: str, salt: str) -> str:
    """Prefix every id and reference (matplotlib's glyph ids like `DejaVuSans-41` are the same in every chart), so
    that several charts inline in one HTML page never share an id."""
    prefix = re.sub(r"[^A-Za-z0-9_-]", "-", salt) or "chart"
    return _ID_USE.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)


def _paint(ax: Axes, data: ChartData, lang: str) -> list[tuple[int, MplText]]:
    """Everything but the labels inside bars; returns the labels beside short bars, by lane."""
    count = len(data.lanes)
    colour = {job: _PALETTE[i % len(_PALETTE)] for i, job in enumerate(data.jobs)}
    y_of = {i: count - 1 - i for i in range(count)}  # first lane on top
    for band_index, band in enumerate(data.vc_bands):
        low, high = y_of[band.last] - 0.5, y_of[band.first] + 0.5
        ax.axhspan(low, high, color="#000000", alpha=0.04 if band_index % 2 == 0 else 0.09, zorder=0)
        ax.axhline(low, color="#555555", linewidth=0.8, linestyle="--", zorder=1)
        ax.axhline(high, color="#555555", linewidth=0.8, linestyle="--", zorder=1)
        ax.text(data.end * 1.095, (low + high) / 2, _plain(_VC.get(lang).format(band.vc)), va="center",
                ha="center", fontsize=8, color="#333333")
    for bar in data.bars:
        width = max(bar.end - bar.start, data.end * 0.002)
        for lane in bar.lanes:
            if bar.kind == "wait":
                ax.barh(y_of[lane], width, left=bar.start, height=0.5, color="none", edgecolor=colour[bar.job],
                        hatch="///", linewidth=0.8, zorder=2)
            else:
                ax.barh(y_of[lane], width, left=bar.start, height=0.7, color=colour[bar.job], edgecolor="#222222",
                        linewidth=0.6, alpha=0.9, zorder=3)
    beside = [(label.lane, _paint_beside(ax, label, y_of[label.lane]))
              for label in bar_labels(data, lang) if label.place != "inside"]
    for marker in data.markers:
        shape, size, tint = _MARKS[marker.kind]
        ax.plot(marker.time, y_of[marker.lane], marker=shape, markersize=size, color=tint, zorder=5)
        if marker.kind == "rejected":
            right = marker.time <= data.end * 0.6
            ax.annotate(_plain(rejection_label(marker, lang)), (marker.time, y_of[marker.lane]),
                        xytext=(8 if right else -8, 0), textcoords="offset points", ha="left" if right else "right",
                        va="center", fontsize=7, color=tint, zorder=6)
    for switch in data.switches:
        tint = _SWITCH_COLOUR[switch.kind]
        ax.axvline(switch.time, color=tint, linestyle="-.", linewidth=1.2, zorder=1)
        ax.annotate(_plain(switch_label(switch, lang)), (switch.time, count - 0.4), xytext=(3, 0),
                    textcoords="offset points", ha="left", va="bottom", fontsize=7, color=tint)
    ax.set_yticks([y_of[i] for i in range(count)], [_plain(lane_label(lane, lang)) for lane in data.lanes])
    ax.set_ylim(-0.7, count - 0.3)
    ticks = _ticks(data.end)
    ax.set_xticks(ticks, [clock(t) for t in ticks])
    ax.set_xlim(0, data.end * (1.16 if data.vc_bands else 1.03))
    ax.set_xlabel(_WORDS["axis"].get(lang))
    ax.set_title(_plain(data.title))
    ax.grid(axis="x", linestyle=":", linewidth=0.5)
    handles = [_legend_handle(entry, colour) for entry in legend_entries(data, lang)]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=min(4, len(handles) or 1),
              fontsize=7, frameon=False)
    return beside


def _paint_beside(ax: Axes, label: BarLabel, y: float) -> MplText:
    right = label.place == "right"
    return ax.annotate(_plain(label.text), (label.x, y), xytext=(9 if right else -9, 0), textcoords="offset points",
                       ha="left" if right else "right", va="center", fontsize=7, color="#222222", zorder=6,
                       bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "#888888",
                             "linewidth": 0.5, "alpha": 0.9})


def _paint_inside_labels(ax: Axes, data: ChartData, lang: str, beside: list[tuple[int, MplText]]) -> None:
    """Each wide bar's label, centred on the part of the bar that no label beside a short bar covers."""
    to_data = ax.transData.inverted()
    covers: dict[int, list[tuple[float, float]]] = {}
    for lane, artist in beside:
        box = artist.get_window_extent()
        (left, _), (right, _) = to_data.transform([(box.x0, box.y0), (box.x1, box.y0)])
        covers.setdefault(lane, []).append((float(left), float(right)))
    count = len(data.lanes)
    for label in bar_labels(data, lang):
        if label.place == "inside":
            low, high = free_part(label.span, covers.get(label.lane, []))
            ax.text((low + high) / 2, count - 1 - label.lane, _plain(label.text), ha="center", va="center",
                    fontsize=7, color="white", zorder=4, clip_on=True)


def free_part(span: tuple[float, float], covers: list[tuple[float, float]]) -> tuple[float, float]:
    """The widest part of `span` outside every cover (the whole span when covers leave nothing)."""
    parts = [span]
    for low, high in covers:
        parts = [piece for a, b in parts for piece in ((a, min(b, low)), (max(a, high), b)) if piece[1] > piece[0]]
    return max(parts, key=lambda p: p[1] - p[0]) if parts else span


def _legend_handle(entry: LegendEntry, colour: dict[str, str]) -> Artist:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    label = _plain(entry.label)
    if entry.key.startswith("job:"):
        return Patch(facecolor=colour[entry.key[4:]], label=label)
    if entry.key == "waiting":
        return Patch(facecolor="none", edgecolor="#555555", hatch="///", label=label)
    if entry.key in _MARKS:
        shape, _, tint = _MARKS[entry.key]
        return Line2D([], [], marker=shape, color=tint, linestyle="none", label=label)
    return Line2D([], [], color=_SWITCH_COLOUR[entry.key], linestyle="-.", label=label)
