"""Reading a chart back, for tests: the texts of a drawn SVG, and the overlaps in a chart's layout."""

from __future__ import annotations

import re

from hivedlab.checker.report.charts_layout import BarLabel, Box, ChartLayout, layout
from hivedlab.checker.report.charts_model import ChartData
from hivedlab.checker.report.charts_paint import font_measure

_COMMENT = re.compile(r"<!-- (.*?) -->", re.DOTALL)


def svg_texts(svg: str) -> list[str]:
    """Every text on the chart, one entry per line of text (matplotlib's SVG keeps each as a comment before its
    glyphs), in drawing order."""
    return [match.group(1) for match in _COMMENT.finditer(svg)]


def chart_layout(data: ChartData, lang: str = "en") -> ChartLayout:
    """The layout the painter follows, measured with the fonts it draws with."""
    return layout(data, lang, font_measure())


def bar_labels(data: ChartData, lang: str = "en") -> tuple[BarLabel, ...]:
    return chart_layout(data, lang).labels


def collisions(chart: ChartLayout) -> list[str]:
    """Everything illegible in a layout: texts that overlap each other, a label beside a bar over a short bar or a
    mark, an inside label outside its bar, anything outside the canvas."""
    canvas = Box(0, 0, chart.width, chart.height)
    texts: list[tuple[str, Box]] = [(f"{t.kind} {t.text!r}", t.box) for t in chart.texts]
    texts += [(f"{label.place} label {label.text!r}", label.box) for label in chart.labels]
    boxes = [*texts, ("legend", chart.legend_box), ("plot", chart.plot)]
    problems = [f"{name} leaves the canvas" for name, box in boxes if not box.within(canvas)]
    problems += [f"{a} overlaps {b}" for i, (a, box_a) in enumerate(texts) for b, box_b in texts[i + 1:]
                 if box_a.overlaps(box_b)]
    labelled = {label.bar for label in chart.labels if label.place == "inside"}
    rows = [(bar, row) for bar, bar_rows in enumerate(chart.bar_rows) for row in bar_rows]
    for label in chart.labels:
        if label.place == "inside":
            box = next(box for (bar, row), box in zip(rows, chart.bar_boxes, strict=True)
                       if bar == label.bar and box.y0 <= label.box.y0 and label.box.y1 <= box.y1)
            if not (box.x0 <= label.box.x0 and label.box.x1 <= box.x1):
                problems.append(f"inside label {label.text!r} leaves its bar")
            continue
        problems += [f"label {label.text!r} covers a short bar"
                     for (bar, _), box in zip(rows, chart.bar_boxes, strict=True)
                     if bar not in labelled and box.overlaps(label.box)]
        problems += [f"label {label.text!r} covers a mark" for box in chart.mark_boxes if box.overlaps(label.box)]
        if not label.box.within(chart.plot):
            problems.append(f"label {label.text!r} leaves the plot")
    return problems
