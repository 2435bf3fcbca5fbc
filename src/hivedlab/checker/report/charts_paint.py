"""Painting a timeline chart with matplotlib's headless Agg backend where `charts_layout.layout` placed each thing,
in the report's language, with the packaged CJK font (`hivedlab.checker.report.fonts`) so that Chinese text needs
no system font; PNG and SVG. Texts are placed in points on the canvas, bars and marks on the axes' time scale."""

from __future__ import annotations

import io
import re
from functools import cache
from typing import TYPE_CHECKING, Any

from hivedlab.checker.report.charts_layout import (
    FONT,
    RUN_HEIGHT,
    SMALL,
    VC_FONT,
    WAIT_HEIGHT,
    WORDS,
    ChartLayout,
    LegendEntry,
    Measure,
    layout,
)
from hivedlab.checker.report.charts_model import ChartData
from hivedlab.checker.report.wording import clock

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.transforms import Transform

_PALETTE = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974",
            "#64B5CD")
_MARKS = {  # kind -> (matplotlib marker, size, colour)
    "preempted": ("X", 10, "#B00020"),
    "recreated": (">", 8, "#222222"),
    "rejected": ("D", 7, "#7A3DB8"),
}
_SWITCH_COLOUR = {"config": "#1F5FBF", "restart": "#0F7F6F"}
_NODE_BANDS = {"not_ready": ("#B00020", 0.12, "xx"), "cordoned": ("#B07000", 0.12, "\\\\")}  # colour, alpha, hatch
_LABEL_BOX = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "#888888", "linewidth": 0.5,
              "alpha": 0.9}


def _plain(text: str) -> str:
    """Keep matplotlib from reading `$...$` in user-given names as mathtext."""
    return re.sub(r"([$\\])", r"\\\1", text)


def _ticks(end: float) -> list[float]:
    """Round tick steps (seconds, minutes, hours), at most nine ticks."""
    steps = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400)
    step = next((s for s in steps if end / s <= 8), steps[-1] * (int(end / (8 * steps[-1])) + 1))
    return [float(i * step) for i in range(int(end // step) + 1)]


@cache
def font_measure() -> Measure:
    """A text's width in points as the chart sets it: in the CJK font where it has Chinese, else matplotlib's own."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    from hivedlab.checker.report.fonts import LATIN_FAMILY, needs_cjk, register_with_matplotlib

    renderer = RendererAgg(1, 1, 72)  # type: ignore[no-untyped-call]  # 72 dots an inch: widths in points

    @cache
    def font(cjk: bool, size: float) -> FontProperties:
        return FontProperties(family=[register_with_matplotlib() if cjk else LATIN_FAMILY], size=size)

    @cache
    def measure(text: str, size: float) -> float:
        props = font(needs_cjk(text), size)
        width, _, _ = renderer.get_text_width_height_descent(text, props, False)  # type: ignore[no-untyped-call]
        return float(width)

    return measure


def draw(data: ChartData, lang: str = "en", salt: str = "") -> tuple[bytes, str]:
    """Paint the chart with its text in `lang`; returns (PNG bytes, SVG text). `salt` keeps SVG ids unique when
    charts share a page."""
    import matplotlib
    from matplotlib.figure import Figure

    from hivedlab.checker.report.fonts import LATIN_FAMILY

    chart = layout(data, lang, font_measure())
    with matplotlib.rc_context({"svg.hashsalt": salt or data.title, "font.size": FONT, "font.family": [LATIN_FAMILY]}):
        fig = Figure(figsize=(chart.width / 72, chart.height / 72))  # no pyplot: nothing keeps the figure
        plot = chart.plot
        ax = fig.add_axes((plot.x0 / chart.width, plot.y0 / chart.height, (plot.x1 - plot.x0) / chart.width,
                           (plot.y1 - plot.y0) / chart.height))
        _paint(fig, ax, data, chart, lang)
        _set_cjk_font(fig)
        png_buf, svg_buf = io.BytesIO(), io.StringIO()
        fig.savefig(png_buf, format="png", dpi=110, metadata={"Software": None})
        fig.savefig(svg_buf, format="svg", metadata={"Date": None, "Creator": None})
    return png_buf.getvalue(), _prefix_ids(svg_buf.getvalue(), salt or data.title)


def preload() -> None:
    """Import matplotlib's figure and both backends and register the CJK font, so that processes forked afterwards
    share them instead of each loading them again (about 0.4 s of CPU a process)."""
    import matplotlib.backends.backend_svg
    import matplotlib.figure  # noqa: F401

    font_measure()("中", FONT)  # loads the CJK font too


def _set_cjk_font(fig: Figure) -> None:
    """Set the texts that have Chinese in the packaged CJK font, whole; the rest keep matplotlib's own font, which
    lays text out faster than the large CJK font does (and a fallback font list would slow every text)."""
    from matplotlib.text import Text as MplText

    from hivedlab.checker.report.fonts import needs_cjk, register_with_matplotlib

    for text in fig.findobj(MplText):
        if needs_cjk(text.get_text()):
            text.set_fontfamily([register_with_matplotlib()])


_ID_USE = re.compile(r'(\bid="|href="#|url\(#)([^")]+)')


def _prefix_ids(svg: str, salt: str) -> str:
    """Prefix every id and reference (matplotlib's glyph ids like `DejaVuSans-41` are the same in every chart), so
    that several charts inline in one HTML page never share an id."""
    prefix = re.sub(r"[^A-Za-z0-9_-]", "-", salt) or "chart"
    return _ID_USE.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)


def _points(fig: Figure) -> Transform:
    """Points from the canvas's bottom-left corner, at whatever resolution the figure is saved."""
    from matplotlib.transforms import Affine2D

    return Affine2D().scale(1 / 72) + fig.dpi_scale_trans


def _paint(fig: Figure, ax: Axes, data: ChartData, chart: ChartLayout, lang: str) -> None:
    colour = {job: _PALETTE[i % len(_PALETTE)] for i, job in enumerate(data.jobs)}
    top = chart.rows - 1  # rows are counted from the top, the axes' y from the bottom
    for band_index, band in enumerate(data.vc_bands):
        first, (last, count) = chart.lane_rows[band.first][0], chart.lane_rows[band.last]
        low, high = top - (last + count - 1) - 0.5, top - first + 0.5
        ax.axhspan(low, high, color="#000000", alpha=0.04 if band_index % 2 == 0 else 0.09, zorder=0)
        ax.axhline(low, color="#555555", linewidth=0.8, linestyle="--", zorder=1)
        ax.axhline(high, color="#555555", linewidth=0.8, linestyle="--", zorder=1)
    for down in data.not_ready:  # behind the bars: across the node's lanes, from when it went not Ready (cordoned)
        tint, alpha, hatch = _NODE_BANDS[down.kind]
        for row in (r for lane in down.lanes for r in range(chart.lane_rows[lane][0], sum(chart.lane_rows[lane]))):
            ax.fill_between([down.start, down.end], top - row - 0.5, top - row + 0.5, facecolor=tint, alpha=alpha,
                            edgecolor=tint, hatch=hatch, linewidth=0.0, zorder=1)
    for bar, rows in zip(data.bars, chart.bar_rows, strict=True):
        width = max(bar.end - bar.start, data.end * 0.002)
        for row in rows:
            if bar.kind == "wait":
                ax.barh(top - row, width, left=bar.start, height=WAIT_HEIGHT, color="none",
                        edgecolor=colour[bar.job], hatch="///", linewidth=0.8, zorder=2)
            else:
                ax.barh(top - row, width, left=bar.start, height=RUN_HEIGHT, color=colour[bar.job],
                        edgecolor="#222222", linewidth=0.6, alpha=0.9, zorder=3)
    for marker, row in zip(data.markers, chart.mark_rows, strict=True):
        shape, size, tint = _MARKS[marker.kind]
        ax.plot(marker.time, top - row, marker=shape, markersize=size, color=tint, zorder=5)
    for switch in data.switches:
        ax.axvline(switch.time, color=_SWITCH_COLOUR[switch.kind], linestyle="-.", linewidth=1.2, zorder=1)
    ax.set_yticks([top - first - (count - 1) / 2 for first, count in chart.lane_rows],
                  [_plain(t.text) for t in chart.texts if t.kind == "lane"])
    ax.set_ylim(-0.7, chart.rows - 0.3 + chart.headroom)
    ticks = _ticks(data.end)
    ax.set_xticks(ticks, [clock(t) for t in ticks])
    ax.set_xlim(0, chart.x_max)
    ax.set_xlabel(WORDS["axis"].get(lang))
    ax.set_title(_plain(data.title))
    ax.grid(axis="x", linestyle=":", linewidth=0.5)
    _paint_texts(fig, data, chart)
    handles = [_legend_handle(entry, colour) for entry in chart.legend]
    if handles:
        fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, chart.legend_box.y1 / chart.height),
                   ncol=chart.legend_columns, fontsize=SMALL, frameon=False, borderaxespad=0)


def _paint_texts(fig: Figure, data: ChartData, chart: ChartLayout) -> None:
    """The texts the layout placed, each at its box: bar labels, VC names, rejections and config switches."""
    points = _points(fig)
    pad = 0.15 * SMALL + 0.5
    for label in chart.labels:
        box = label.box
        middle = (box.y0 + box.y1) / 2
        style: dict[str, Any] = {"fontsize": SMALL, "va": "center", "transform": points, "zorder": 6}
        if label.place == "inside":
            fig.text((box.x0 + box.x1) / 2, middle, _plain(label.text), ha="center", color="white", **style)
        elif label.place == "right":
            fig.text(box.x0 + pad, middle, _plain(label.text), ha="left", color="#222222", bbox=_LABEL_BOX, **style)
        else:
            fig.text(box.x1 - pad, middle, _plain(label.text), ha="right", color="#222222", bbox=_LABEL_BOX, **style)
    switches = iter(data.switches)
    for text in chart.texts:
        box = text.box
        middle = (box.y0 + box.y1) / 2
        if text.kind == "vc":
            fig.text((box.x0 + box.x1) / 2, middle, _plain(text.text), ha="center", va="center", fontsize=VC_FONT,
                     color="#333333", transform=points)
        elif text.kind == "rejected":
            fig.text(box.x0, middle, _plain(text.text), ha="left", va="center", fontsize=SMALL,
                     color=_MARKS["rejected"][2], transform=points, zorder=6)
        elif text.kind == "switch":
            fig.text(box.x0, middle, _plain(text.text), ha="left", va="center", fontsize=SMALL,
                     color=_SWITCH_COLOUR[next(switches).kind], transform=points)


def _legend_handle(entry: LegendEntry, colour: dict[str, str]) -> Artist:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    label = _plain(entry.label)
    if entry.key.startswith("job:"):
        return Patch(facecolor=colour[entry.key[4:]], label=label)
    if entry.key == "waiting":
        return Patch(facecolor="none", edgecolor="#555555", hatch="///", label=label)
    if entry.key in _NODE_BANDS:
        tint, alpha, hatch = _NODE_BANDS[entry.key]
        return Patch(facecolor=tint, alpha=alpha, edgecolor=tint, hatch=hatch, label=label)
    if entry.key in _MARKS:
        shape, _, tint = _MARKS[entry.key]
        return Line2D([], [], marker=shape, color=tint, linestyle="none", label=label)
    return Line2D([], [], color=_SWITCH_COLOUR[entry.key], linestyle="-.", label=label)
