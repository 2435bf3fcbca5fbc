"""Charts without matplotlib, for tests about everything but the chart.

Importing matplotlib takes about 0.35 s and drawing one timeline chart about 0.15 s; a run of the five experiments
draws five. A test about a report's text, a run's flow or a verdict puts a tiny valid PNG/SVG in the chart's place
(the chart files are still written and still inlined); the charts themselves are drawn for real in
tests/checker/report/test_charts.py and in the session's shared simulated run (tests/support/sim_lab.py).
"""

from __future__ import annotations

import pytest

from hivedlab.checker.report.charts import ChartData

TINY_PNG = b"\x89PNG\r\n\x1a\n"
TINY_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><rect width="1" height="1"/></svg>'


def tiny_chart(data: ChartData, lang: str = "en", salt: str = "") -> tuple[bytes, str]:
    return TINY_PNG, TINY_SVG


def stub_charts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace the chart drawing for as long as `monkeypatch` lasts (a test, or a `MonkeyPatch.context()`)."""
    monkeypatch.setattr("hivedlab.checker.report.charts.draw", tiny_chart)
    monkeypatch.setattr("hivedlab.checker.report.charts_paint.draw", tiny_chart)
