"""Timeline charts of an experiment: Gantt-style, one lane per node (or per GPU), one bar per task attempt.

The chart is made in three steps, one module each: its data (`charts_model.chart_data`: task attempts -> lanes, bars,
markers, VC bands, config switches, rejected submissions), its words (`charts_layout`: lane labels, legend entries,
bar labels), its painting (`charts_paint.draw`: PNG and SVG with matplotlib). This module is what the report uses:
those names, and `draw_many`, which draws a report's charts in forked worker processes.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from hivedlab.checker.report import charts_paint
from hivedlab.checker.report.charts_model import (
    Bar,
    ChartData,
    Lane,
    Marker,
    Rejection,
    Switch,
    TaskAttempt,
    VcBand,
    chart_data,
    merge_shared,
)
from hivedlab.checker.report.charts_paint import draw

__all__ = ["Bar", "ChartData", "Lane", "Marker", "Rejection", "Switch", "TaskAttempt", "VcBand", "chart_data", "draw",
           "draw_many", "merge_shared"]


def draw_many(jobs: Sequence[tuple[ChartData, str, str]]) -> list[tuple[bytes, str]]:
    """`draw(data, lang, salt)` for each job, in order. Drawing is most of a report's time, so where the platform
    forks and this process runs no other thread (a fork copies no lock another thread may hold), the charts are
    drawn in forked worker processes, one per core, matplotlib imported once before the fork; elsewhere one after
    the other. Either way the same bytes."""
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return [charts_paint.draw(*job) for job in jobs]
    charts_paint.preload()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(_draw_job, jobs))


def _draw_job(job: tuple[ChartData, str, str]) -> tuple[bytes, str]:
    return charts_paint.draw(*job)  # looked up when called: a forked worker draws with what the parent process has
