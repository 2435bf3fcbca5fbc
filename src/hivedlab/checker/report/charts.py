"""Timeline charts of an experiment: Gantt-style, one lane per node (or per GPU), one bar per task attempt.

The chart is made in three steps, one module each: its data (`charts_model.chart_data`: task attempts -> lanes, bars,
markers, VC bands, config switches, rejected submissions, nodes not Ready), its words (`charts_layout`: lane labels,
legend entries, bar labels), its painting (`charts_paint.draw`: PNG and SVG with matplotlib). This module is what the
report uses: those names, and `draw_many`, which draws a report's charts in forked worker processes.
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
    NotReady,
    NotReadyBand,
    Rejection,
    Switch,
    TaskAttempt,
    VcBand,
    chart_data,
    merge_shared,
)
from hivedlab.checker.report.charts_paint import draw

__all__ = ["Bar", "ChartData", "Lane", "Marker", "NotReady", "NotReadyBand", "Rejection", "Switch", "TaskAttempt",
           "VcBand", "chart_data", "draw", "draw_many", "merge_shared", "PARALLEL_FROM"]


PARALLEL_FROM = 8  # charts: fewer are drawn in this process (forked workers cost more CPU than they save wall time)


def draw_many(jobs: Sequence[tuple[ChartData, str, str]],
              parallel_from: int = PARALLEL_FROM) -> list[tuple[bytes, str]]:
    """`draw(data, lang, salt)` for each job, in order. Drawing is most of a report's time. A few charts (the five
    experiments' of `run all`) are drawn one after the other in this process: forked workers would each warm up
    matplotlib's caches again and copy the pages they touch, about a quarter more CPU for the same charts. From
    `parallel_from` charts on (every member's turn: 17), where the platform forks and this process runs no other
    thread (a fork copies no lock another thread may hold), they are drawn in forked worker processes, one per core,
    matplotlib loaded once before the fork, which shortens the wait. Either way the same bytes."""
    workers = min(len(jobs), os.cpu_count() or 1)
    if len(jobs) < parallel_from or workers < 2 or "fork" not in multiprocessing.get_all_start_methods() \
            or threading.active_count() > 1:
        return [charts_paint.draw(*job) for job in jobs]
    charts_paint.preload()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(_draw_job, jobs))


def _draw_job(job: tuple[ChartData, str, str]) -> tuple[bytes, str]:
    return charts_paint.draw(*job)  # looked up when called: a forked worker draws with what the parent process has
