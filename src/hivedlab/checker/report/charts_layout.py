"""Where everything on a timeline chart goes, and its words in the report's language: a pure function from the
chart's data to boxes on a canvas (`layout`), which the painter follows and the tests check for overlaps.

Geometry is in points (1/72 inch) from the canvas's bottom-left corner; the canvas is 10 inches wide. Each lane holds
as many rows as it has bars at once (a node's CPU-only pods run side by side under the default scheduler). A bar's
label goes inside the bar when it fits there, else beside it in empty space only (never over a bar, a mark or another
text), shortened if need be, or not at all; job names lose the suffix all the chart's jobs share (`-alice-gang-s1`),
which the legend keeps. The legend takes as many columns as fit the canvas. Text widths come from a `Measure`, which
the painter backs with the fonts it draws with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hivedlab.basics.text import Text
from hivedlab.checker.report.charts_model import Bar, ChartData, Lane, Marker, Switch
from hivedlab.checker.report.wording import clock

Measure = Callable[[str, float], float]  # a one-line text's width in points at a font size in points

WORDS: dict[str, Text] = {
    "axis": Text("自实验开始起的时间（T+时:分:秒）", "time since the experiment began (T+h:mm:ss)"),
    "waiting": Text("等待（无法调度）", "waiting (unschedulable)"),
    "preempted": Text("被抢占", "preempted"),
    "recreated": Text("重新创建的尝试", "re-created attempt"),
    "rejected": Text("提交被拒绝", "submission rejected"),
    "config": Text("切换 HiveD 配置", "HiveD config switch"),
    "restart": Text("重启 HiveD", "HiveD restart"),
    "not_ready": Text("节点未就绪（NotReady）", "node not Ready"),
    "cordoned": Text("节点被封锁（cordon）", "node cordoned"),
}
_LANE_WORDS = {"wait": Text("等待 {}", "waiting {}"), "rejected": Text("被拒绝 {}", "rejected {}")}
_SWITCH_WORDS = {"config": Text("切换到配置 {}", "config {}"), "restart": Text("重启 HiveD", "HiveD restart")}
VC_WORDS = Text("虚拟集群\n{}", "VC\n{}")
_TRY = Text("{task}（第 {n} 次）", "{task} (try {n})")
_REJECTED_AT = Text("{time} 提交，被拒绝（HTTP {status}）", "submitted {time}, rejected (HTTP {status})")

WIDTH = 720.0  # the canvas, 10 inches
ROW = 39.6  # one row of bars
RUN_HEIGHT, WAIT_HEIGHT = 0.7, 0.5  # a bar's height, in rows
FONT, SMALL, VC_FONT, TITLE_FONT = 9.0, 7.0, 8.0, 10.8  # lane labels and axes; bar labels and legend; VC; title
LINE = 1.25  # a line of text is this many times its font size high
GAP = 9.0  # from a bar's end (and its ✖) to a label beside it
MARK = 6.0  # half the width of a mark (✖, ▶, ◆)
TICK = 7.0  # a tick and its pad, before a tick label
_LEGEND = {"handle": 2.0 * SMALL, "text_pad": 0.8 * SMALL, "column_gap": 2.0 * SMALL, "row": SMALL * LINE + 0.5 * SMALL,
           "pad": 0.4 * SMALL}


@dataclass(frozen=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box) -> bool:
        return min(self.x1, other.x1) - max(self.x0, other.x0) > 0.01 and \
            min(self.y1, other.y1) - max(self.y0, other.y0) > 0.01

    def within(self, other: Box) -> bool:
        return self.x0 >= other.x0 - 0.01 and self.x1 <= other.x1 + 0.01 and \
            self.y0 >= other.y0 - 0.01 and self.y1 <= other.y1 + 0.01


@dataclass(frozen=True)
class LegendEntry:
    key: str  # job:<name> | waiting | preempted | recreated | rejected | config | restart | not_ready | cordoned
    label: str


@dataclass(frozen=True)
class BarLabel:
    bar: int  # index into ChartData.bars
    lane: int
    text: str
    place: str  # inside (centred on the bar) | right (beside its end) | left (beside its start)
    box: Box


@dataclass(frozen=True)
class Placed:
    """A text and its box: `kind` lane | vc | rejected | switch."""

    kind: str
    text: str
    box: Box


@dataclass(frozen=True)
class ChartLayout:
    width: float
    height: float
    plot: Box  # the axes
    x_max: float  # seconds at the plot's right edge
    rows: int
    headroom: float  # rows of space above the first row beyond the usual, for config switches' labels
    lane_rows: tuple[tuple[int, int], ...]  # per lane: its first row and how many
    bar_rows: tuple[tuple[int, ...], ...]  # per bar: the row on each of its lanes
    bar_boxes: tuple[Box, ...]  # every bar's rectangle on every lane it holds
    mark_rows: tuple[int, ...]  # per marker
    mark_boxes: tuple[Box, ...]
    labels: tuple[BarLabel, ...]
    texts: tuple[Placed, ...]  # lane labels, VC names, rejections, config switches
    legend: tuple[LegendEntry, ...]
    legend_columns: int
    legend_box: Box
    short: dict[str, str]  # job -> the name the chart shows it by

    def x(self, seconds: float) -> float:
        return self.plot.x0 + seconds / self.x_max * (self.plot.x1 - self.plot.x0)

    def y(self, row: float) -> float:
        """The centre of a row (row 0 on top)."""
        return self.plot.y1 - (0.7 + self.headroom + row) * ROW


def lane_label(lane: Lane, lang: str, short: dict[str, str] | None = None) -> str:
    words = _LANE_WORDS.get(lane.kind)
    if not words:
        return lane.label
    job, slash, task = lane.label.partition("/")
    return words.get(lang).format((short or {}).get(job, job) + slash + task)


def switch_label(switch: Switch, lang: str) -> str:
    return _SWITCH_WORDS[switch.kind].get(lang).format(switch.name)


def rejection_label(marker: Marker, lang: str) -> str:
    status = marker.status if marker.status is not None else "?"
    return _REJECTED_AT.get(lang).format(time=clock(marker.time), status=status)


def legend_entries(data: ChartData, lang: str) -> tuple[LegendEntry, ...]:
    """One entry per kind of mark the chart draws, and none for a mark it does not; jobs by their full names."""
    drawn_jobs = {bar.job for bar in data.bars}
    entries = [LegendEntry(f"job:{job}", job) for job in data.jobs if job in drawn_jobs]
    kinds = [*(("waiting",) if any(b.kind == "wait" for b in data.bars) else ()),
             *(m.kind for m in data.markers), *(s.kind for s in data.switches),
             *(band.kind for band in data.not_ready)]
    entries += [LegendEntry(kind, WORDS[kind].get(lang)) for kind in WORDS if kind in kinds]
    return tuple(entries)


def short_names(jobs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Each job without the `-…` suffix every one of at least two jobs shares, where the names stay distinct."""
    names = list(dict.fromkeys(jobs))
    if len(names) < 2:
        return {name: name for name in names}
    first = names[0]
    for cut in (i for i, char in enumerate(first) if char == "-"):
        suffix = first[cut:]
        short = [name[: -len(suffix)] for name in names if name.endswith(suffix)]
        if len(short) == len(names) and all(short) and len(set(short)) == len(short):
            return dict(zip(names, short, strict=True))
    return {name: name for name in names}


def _tracks(data: ChartData) -> tuple[list[int], dict[tuple[int, int], int]]:
    """Rows per lane, and each (bar, lane)'s row within its lane: bars at once on one lane go on separate rows."""
    ends: list[list[float]] = [[] for _ in data.lanes]
    track: dict[tuple[int, int], int] = {}
    for index in sorted(range(len(data.bars)), key=lambda i: (data.bars[i].start, i)):
        bar = data.bars[index]
        for lane in bar.lanes:
            free = next((t for t, end in enumerate(ends[lane]) if end <= bar.start), len(ends[lane]))
            if free == len(ends[lane]):
                ends[lane].append(bar.end)
            ends[lane][free] = max(bar.end, bar.start + 1e-9)
            track[(index, lane)] = free
    return [max(1, len(e)) for e in ends], track


def _text_box(measure: Measure, text: str, size: float, x: float, y: float, ha: str) -> Box:
    """The box of a text anchored at (x, y), vertically centred, `ha` left | right | center."""
    lines = text.split("\n")
    width = max(measure(line, size) for line in lines)
    height = size * LINE * len(lines)
    left = {"left": x, "right": x - width, "center": x - width / 2}[ha]
    return Box(left, y - height / 2, left + width, y + height / 2)


def _legend_geometry(entries: tuple[LegendEntry, ...], measure: Measure) -> tuple[int, float, int]:
    """(columns, width, rows): the most columns (up to four) whose width fits the canvas."""
    widths = [_LEGEND["handle"] + _LEGEND["text_pad"] + measure(e.label, SMALL) for e in entries]
    best = (1, max(widths, default=0.0) + 2 * _LEGEND["pad"], len(entries))
    for columns in range(2, min(4, len(entries)) + 1):
        rows = -(-len(entries) // columns)
        per_column = [max(widths[c * rows:(c + 1) * rows], default=0.0) for c in range(columns)]
        width = sum(per_column) + _LEGEND["column_gap"] * (columns - 1) + 2 * _LEGEND["pad"]
        if width <= WIDTH - 2 * GAP:
            best = (columns, width, rows)
    return best


def layout(data: ChartData, lang: str, measure: Measure) -> ChartLayout:
    """Place the chart's rows, bars, marks, labels, lane and VC names and legend on the canvas."""
    counts, track = _tracks(data)
    firsts = [sum(counts[:i]) for i in range(len(counts))]
    rows = sum(counts)
    short = short_names([*data.jobs, *(r.job for r in data.rejections), *(b.job for b in data.bars)])
    lane_texts = [lane_label(lane, lang, short) for lane in data.lanes]
    vc_texts = [VC_WORDS.get(lang).format(band.vc) for band in data.vc_bands]
    entries = legend_entries(data, lang)
    columns, legend_width, legend_rows = _legend_geometry(entries, measure)
    legend_height = legend_rows * _LEGEND["row"] + 2 * _LEGEND["pad"] if entries else 0.0
    left = max([measure(t, FONT) for t in lane_texts] + [0.0]) + TICK + GAP
    right = max([max(measure(line, VC_FONT) for line in t.split("\n")) + 2 * GAP for t in vc_texts] + [4 * GAP])
    axis_below = TICK + FONT * LINE + 4 + FONT * LINE  # ticks, their labels, the axis' label
    bottom = GAP + legend_height + GAP + axis_below
    top = TITLE_FONT * LINE + 2 * GAP
    x_max = data.end * 1.03
    switch_levels = _switch_levels(data, lang, measure, (WIDTH - right - left) / x_max)
    headroom = max(0, max(switch_levels, default=0)) * SMALL * LINE / ROW
    height = max(172.8, top + (rows + 0.4 + headroom) * ROW + bottom)
    plot = Box(left, height - top - (rows + 0.4 + headroom) * ROW, WIDTH - right, height - top)
    empty = ChartLayout(WIDTH, height, plot, x_max, rows, headroom, tuple(zip(firsts, counts, strict=True)), (), (),
                        (), (), (), (), entries, columns, Box(0, 0, 0, 0), short)
    bar_rows = tuple(tuple(firsts[lane] + track[(i, lane)] for lane in bar.lanes) for i, bar in enumerate(data.bars))
    bar_boxes = [_bar_box(empty, bar, row) for bar, where in zip(data.bars, bar_rows, strict=True) for row in where]
    mark_rows = [firsts[m.lane] + _marker_track(data, m, track) for m in data.markers]
    mark_boxes = [Box(empty.x(m.time) - MARK, empty.y(r) - MARK, empty.x(m.time) + MARK, empty.y(r) + MARK)
                  for m, r in zip(data.markers, mark_rows, strict=True)]
    texts = [Placed("lane", text, _text_box(measure, text, FONT, plot.x0 - TICK, empty.y(first + (count - 1) / 2),
                                            "right"))
             for text, first, count in zip(lane_texts, firsts, counts, strict=True)]
    for band, text in zip(data.vc_bands, vc_texts, strict=True):
        middle = (empty.y(firsts[band.first]) + empty.y(firsts[band.last] + counts[band.last] - 1)) / 2
        texts.append(Placed("vc", text, _text_box(measure, text, VC_FONT, (plot.x1 + WIDTH) / 2, middle, "center")))
    taken = [*bar_boxes, *mark_boxes]
    for marker, row in zip(data.markers, mark_rows, strict=True):
        if marker.kind == "rejected":
            texts.append(_rejection_text(empty, marker, lang, row, measure, taken))
    for switch, level in zip(data.switches, switch_levels, strict=True):  # at the plot's top, a line a level
        y = plot.y1 - 2 - (level + 0.5) * SMALL * LINE
        texts.append(Placed("switch", *_switch_text(empty, switch, lang, measure, y)))
    labels = _bar_labels(empty, data, lang, bar_rows, measure, [*mark_boxes, *(t.box for t in texts)])
    legend_top = plot.y0 - axis_below - GAP
    legend_box = Box((WIDTH - legend_width) / 2, legend_top - legend_height, (WIDTH + legend_width) / 2, legend_top)
    return ChartLayout(WIDTH, height, plot, x_max, rows, headroom, empty.lane_rows, bar_rows, tuple(bar_boxes),
                       tuple(mark_rows), tuple(mark_boxes), tuple(labels), tuple(texts), entries, columns,
                       legend_box, short)


def _switch_text(chart: ChartLayout, switch: Switch, lang: str, measure: Measure, y: float) -> tuple[str, Box]:
    """A config switch's label beside its line, right of it where it fits."""
    text, x = switch_label(switch, lang), chart.x(switch.time)
    box = _text_box(measure, text, SMALL, x + 3, y, "left")
    return text, box if box.x1 <= chart.plot.x1 else _text_box(measure, text, SMALL, x - 3, y, "right")


def _switch_levels(data: ChartData, lang: str, measure: Measure, scale: float) -> list[int]:
    """Each config switch's line of text at the plot's top (0 the first): the first whose labels it does not cover,
    measured along the time axis (`scale` points a second)."""
    taken: list[list[tuple[float, float]]] = []
    levels = []
    for switch in data.switches:
        x, width = switch.time * scale, measure(switch_label(switch, lang), SMALL)
        span = (x + 3, x + 3 + width) if x + 3 + width <= data.end * 1.03 * scale else (x - 3 - width, x - 3)
        level = next((i for i, spans in enumerate(taken) if all(span[1] <= a or span[0] >= b for a, b in spans)),
                     len(taken))
        if level == len(taken):
            taken.append([])
        taken[level].append(span)
        levels.append(level)
    return levels


def _bar_box(chart: ChartLayout, bar: Bar, row: int) -> Box:
    half = (RUN_HEIGHT if bar.kind == "run" else WAIT_HEIGHT) * ROW / 2
    x0 = chart.x(bar.start)
    x1 = max(chart.x(bar.end), x0 + 0.002 * (chart.plot.x1 - chart.plot.x0))
    return Box(x0, chart.y(row) - half, x1, chart.y(row) + half)


def _marker_track(data: ChartData, marker: Marker, track: dict[tuple[int, int], int]) -> int:
    """The row within its lane of the bar a mark belongs to (the attempt's bar on that lane nearest the mark's time;
    a rejection's lane has one row)."""
    key = (marker.job, marker.task, marker.attempt)
    own = [(max(bar.start - marker.time, marker.time - bar.end, 0.0), index) for index, bar in enumerate(data.bars)
           if (bar.job, bar.task, bar.attempt) == key and marker.lane in bar.lanes]
    return track[(min(own)[1], marker.lane)] if own else 0


def _rejection_text(chart: ChartLayout, marker: Marker, lang: str, row: int, measure: Measure,
                    taken: list[Box]) -> Placed:
    text = rejection_label(marker, lang)
    x, y = chart.x(marker.time), chart.y(row)
    right = _text_box(measure, text, SMALL, x + GAP, y, "left")
    left = _text_box(measure, text, SMALL, x - GAP, y, "right")
    fits = [box for box in (right, left) if box.within(chart.plot) and not any(box.overlaps(t) for t in taken)]
    fallback = right if right.x1 - chart.plot.x1 < chart.plot.x0 - left.x0 else left  # the one less outside
    return Placed("rejected", text, (fits or [fallback])[0])


def _bar_labels(chart: ChartLayout, data: ChartData, lang: str, bar_rows: tuple[tuple[int, ...], ...],
                measure: Measure, marks_and_texts: list[Box]) -> list[BarLabel]:
    """Inside a run bar when its text fits there (a first attempt's as just the task's name if need be). Beside a
    bar too short for that, naming the job too where there is room (a short bar's colour is hard to see): in empty
    space, or over part of a wide bar that keeps room for its own label, which then sits in the part left free."""
    runs = [i for i, bar in enumerate(data.bars) if bar.kind == "run"]
    texts = {i: _TRY.get(lang).format(task=data.bars[i].task, n=data.bars[i].attempt + 1)
             + (" …" if data.bars[i].open_end else "") for i in runs}
    spans = {i: (chart.x(data.bars[i].start), _bar_box(chart, data.bars[i], 0).x1) for i in runs}

    def inside_words(index: int) -> list[str]:
        bar = data.bars[index]
        return [t for t in (texts[index], bar.task if bar.attempt == 0 and not bar.open_end else "") if t]

    def room(index: int) -> float:
        return min((measure(t, SMALL) + 6 for t in inside_words(index)), default=float("inf"))

    wide = {i for i in runs if room(i) <= spans[i][1] - spans[i][0]}
    on_row = {(i, row): box for i, rows in enumerate(bar_rows) for row, box in
              zip(rows, (_bar_box(chart, data.bars[i], r) for r in rows), strict=True)}
    blocks = [*(box for (i, _), box in on_row.items() if i not in wide), *marks_and_texts]
    covers: dict[int, list[tuple[float, float]]] = {}
    labels: list[BarLabel] = []
    for index in sorted((i for i in runs if i not in wide), key=lambda i: data.bars[i].start):
        bar, row = data.bars[index], bar_rows[index][0]
        job = chart.short.get(bar.job, bar.job)
        sides = ("right", "left") if bar.end <= data.end * 0.75 else ("left", "right")
        for words in (f"{job} {texts[index]}", texts[index], bar.task):
            beside = (_beside(measure, words, side, *spans[index], chart.y(row)) for side in sides)
            fits = [(side, box) for side, box in beside
                    if box.within(chart.plot) and not any(box.overlaps(b) for b in (*blocks, *(x.box for x in labels)))
                    and all(_free(spans[w], [*covers.get(r, []), (box.x0, box.x1)]) >= room(w)
                            for (w, r), other in on_row.items() if w in wide and r == row and other.overlaps(box))]
            if fits:
                side, box = fits[0]
                labels.append(BarLabel(index, bar.lanes[0], words, side, box))
                covers.setdefault(row, []).append((box.x0, box.x1))
                break
    for index in sorted(wide):
        for lane, row in zip(data.bars[index].lanes, bar_rows[index], strict=True):
            low, high = free_part(spans[index], covers.get(row, []))
            words = next((t for t in inside_words(index) if measure(t, SMALL) + 6 <= high - low), "")
            if words:
                labels.append(BarLabel(index, lane, words, "inside",
                                       _text_box(measure, words, SMALL, (low + high) / 2, chart.y(row), "center")))
    return labels


def free_part(span: tuple[float, float], covers: list[tuple[float, float]]) -> tuple[float, float]:
    """The widest part of `span` outside every cover ((x, x) where covers leave nothing)."""
    parts = [span]
    for low, high in covers:
        parts = [piece for a, b in parts for piece in ((a, min(b, low)), (max(a, high), b)) if piece[1] > piece[0]]
    return max(parts, key=lambda p: p[1] - p[0]) if parts else (span[0], span[0])


def _free(span: tuple[float, float], covers: list[tuple[float, float]]) -> float:
    low, high = free_part(span, covers)
    return high - low


def _beside(measure: Measure, text: str, side: str, x0: float, x1: float, y: float) -> tuple[str, Box]:
    """A label beside a bar spanning x0..x1, its white box included."""
    box = _text_box(measure, text, SMALL, x1 + GAP if side == "right" else x0 - GAP, y,
                    "left" if side == "right" else "right")
    pad = 0.15 * SMALL + 0.5  # the label's white box around its text
    return side, Box(box.x0 - pad, box.y0 - pad, box.x1 + pad, box.y1 + pad)

