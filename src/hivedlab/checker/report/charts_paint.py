"""Painting a timeline chart with matplotlib's headless Agg backend, in the report's language, with the packaged CJK
font (`hivedlab.checker.report.fonts`) so that Chinese text needs no system font; PNG and SVG."""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING

from hivedlab.checker.report.charts_layout import (
    VC_WORDS,
    WORDS,
    BarLabel,
    LegendEntry,
    bar_labels,
    lane_label,
    legend_entries,
    rejection_label,
    switch_label,
)
from hivedlab.checker.report.charts_model import ChartData
from hivedlab.checker.report.text import clock

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.text import Text as MplText

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
    from matplotlib.figure import Figure

    from hivedlab.checker.report.fonts import LATIN_FAMILY

    height = max(2.4, 0.55 * len(data.lanes) + 1.6)
    with matplotlib.rc_context({"svg.hashsalt": salt or data.title, "font.size": 9, "font.family": [LATIN_FAMILY]}):
        fig = Figure(figsize=(10, height))  # no pyplot: nothing keeps the figure once it is painted
        ax = fig.subplots()
        beside = _paint(ax, data, lang)
        _set_cjk_font(ax)
        fig.tight_layout()
        fig.set_layout_engine(None)  # tight_layout leaves a placeholder engine that makes each savefig lay out again
        _paint_inside_labels(ax, data, lang, beside)  # placed after the layout, clear of the labels beside
        _set_cjk_font(ax)
        png_buf, svg_buf = io.BytesIO(), io.StringIO()
        fig.savefig(png_buf, format="png", dpi=110, metadata={"Software": None})
        fig.savefig(svg_buf, format="svg", metadata={"Date": None, "Creator": None})
    return png_buf.getvalue(), _prefix_ids(svg_buf.getvalue(), salt or data.title)


def preload() -> None:
    """Import matplotlib's figure and both backends and register the CJK font, so that processes forked afterwards
    share them instead of each importing them again (about 0.4 s of CPU a process)."""
    import matplotlib.backends.backend_agg
    import matplotlib.backends.backend_svg
    import matplotlib.figure  # noqa: F401

    from hivedlab.checker.report.fonts import register_with_matplotlib

    register_with_matplotlib()


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
        ax.text(data.end * 1.095, (low + high) / 2, _plain(VC_WORDS.get(lang).format(band.vc)), va="center",
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
    ax.set_xlabel(WORDS["axis"].get(lang))
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
