"""The data behind the timeline charts (lanes, bars, markers, VC bands), and that drawing it works headless."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hivedlab.checker.report.charts import TaskAttempt, chart_data, draw, merge_shared
from hivedlab.checker.report.timeline import timeline_for_chart
from hivedlab.checker.timeline import vc_nodes_from_config
from tests.support.paths import FIXTURES

REPORT_FIXTURES = FIXTURES / "report"
RUN = REPORT_FIXTURES / "run-sim"
TWO_VC: dict[str, tuple[str, ...]] = {"default": ("hostname-carol",), "vc1": ("hostname-dan",)}
NODES = ("hostname-carol", "hostname-dan")


def _priority_attempts() -> list[TaskAttempt]:
    return [
        TaskAttempt("low", "train-0", 0, "hostname-dan", (0,), 5, 62, "preempted", preempted=True, created=0.5),
        TaskAttempt("high", "train-0", 0, "hostname-dan", (0,), 65, 365, "succeeded", created=60.5),
        TaskAttempt("low", "train-0", 1, "hostname-dan", (0,), 368, 668, "succeeded", waiting=((65, 366),),
                    recreated=True, created=64),
    ]


def test_one_bar_per_task_attempt_on_its_node_with_its_times():
    data = chart_data("priority", _priority_attempts(), NODES, TWO_VC, 670)
    runs = [b for b in data.bars if b.kind == "run"]
    assert [(b.job, b.attempt, data.lanes[b.lanes[0]].node, b.start, b.end) for b in runs] == [
        ("low", 0, "hostname-dan", 5, 62),
        ("high", 0, "hostname-dan", 65, 365),
        ("low", 1, "hostname-dan", 368, 668),
    ]
    assert data.end == 670


def test_idle_nodes_get_a_lane_and_vc_bands_follow_the_config():
    data = chart_data("priority", _priority_attempts(), NODES, TWO_VC, 670)
    node_lanes = [lane.key for lane in data.lanes if lane.kind == "node"]
    assert node_lanes == ["hostname-carol", "hostname-dan"]
    assert [(band.vc, data.lanes[band.first].key, data.lanes[band.last].key) for band in data.vc_bands] == [
        ("default", "hostname-carol", "hostname-carol"),
        ("vc1", "hostname-dan", "hostname-dan"),
    ]


def test_waiting_spans_preemption_and_recreation_are_marked():
    data = chart_data("priority", _priority_attempts(), NODES, TWO_VC, 670)
    waits = [b for b in data.bars if b.kind == "wait"]
    assert [(b.job, b.attempt, b.start, b.end, data.lanes[b.lanes[0]].kind) for b in waits] == [
        ("low", 1, 65, 366, "wait")
    ]
    marks = {(m.kind, m.job, m.attempt, m.time) for m in data.markers}
    assert ("preempted", "low", 0, 62) in marks
    assert ("recreated", "low", 1, 64) in marks
    assert data.jobs == ("low", "high")


def test_open_bars_run_to_the_end_of_the_log():
    attempts = [
        TaskAttempt("a", "t-0", 0, "n1", (0,), 10, None, "running"),
        TaskAttempt("b", "t-0", 0, waiting=((20, None),), outcome="waiting"),
    ]
    data = chart_data("open", attempts, ("n1",), {}, 100)
    run = next(b for b in data.bars if b.kind == "run")
    wait = next(b for b in data.bars if b.kind == "wait")
    assert (run.end, run.open_end, wait.end, wait.open_end) == (100, True, 100, True)


def test_nodes_with_several_gpus_get_one_lane_per_gpu():
    attempts = [
        TaskAttempt("a", "t-0", 0, "big", (0, 1), 0, 10, "succeeded"),
        TaskAttempt("b", "t-0", 0, "big", (2,), 5, 15, "succeeded"),
    ]
    data = chart_data("gpus", attempts, ("big",), {}, 20)
    assert [lane.key for lane in data.lanes] == ["big/gpu0", "big/gpu1", "big/gpu2"]
    bars = {b.job: b for b in data.bars}
    assert bars["a"].lanes == (0, 1) and bars["b"].lanes == (2,)


@pytest.mark.parametrize(
    ("config", "bands"),
    [
        ("two-vc", [("default", ["hostname-carol"]), ("vc1", ["hostname-dan"])]),
        ("one-vc", [("default", ["hostname-carol", "hostname-dan"])]),
    ],
)
def test_vc_bands_of_the_lab_configs(config, bands):
    vc_nodes = vc_nodes_from_config((RUN / "hived" / f"{config}.yaml").read_text(encoding="utf-8"))
    data = chart_data(config, [], (), vc_nodes, 10)
    assert [(b.vc, [lane.key for lane in data.lanes[b.first:b.last + 1]]) for b in data.vc_bands] == bands


def test_vcs_sharing_nodes_share_one_band():
    assert merge_shared({"a": ("n1", "n2"), "b": ("n2", "n1"), "c": ("n3",), "d": ()}) == {
        "a+b": ("n1", "n2"), "c": ("n3",)}


def test_timeline_from_the_fixture_evidence():
    timeline = timeline_for_chart(RUN / "experiments" / "priority" / "evidence.jsonl", run_tag="s1")
    assert timeline.source == "sim" and not timeline.problems
    facts = [(a.job, a.attempt, a.node, a.start, a.end, a.preempted, a.recreated) for a in timeline.attempts]
    # the bar of the preempted attempt ends at the Preempted event (61), before the pod's deletion record
    assert facts == [
        ("job-config-1", 0, "hostname-dan", 5, 61, True, False),
        ("job-config-2", 0, "hostname-dan", 65, 365, False, False),
        ("job-config-1", 1, "hostname-dan", 368, 668, False, True),
    ]
    assert timeline.attempts[2].waiting == ((65, 366),)
    assert timeline.vc_nodes == {"default": ("hostname-carol",), "vc1": ("hostname-dan",)}
    assert timeline.config_name == "two-vc" and timeline.end_status == "finished"


def test_draw_gives_png_and_well_formed_svg_even_with_mathtext_in_names():
    attempts = [TaskAttempt("$x^2$ <script>", "t_0", 0, "n$1", (0,), 0, 10, "succeeded")]
    png, svg = draw(chart_data("$title$", attempts, ("n$1",), {"v$c": ("n$1",)}, 12), salt="t")
    assert png.startswith(b"\x89PNG")
    root = ET.fromstring(svg.encode("utf-8"))
    assert root.tag.endswith("svg")


def test_drawing_is_deterministic_and_salted_ids_differ():
    data = chart_data("priority", _priority_attempts(), NODES, TWO_VC, 670)
    first, second = draw(data, salt="priority"), draw(data, salt="priority")
    assert first == second  # re-rendering a report does not churn its files
    ids = set(re.findall(r'id="([^"]+)"', first[1]))
    other = set(re.findall(r'id="([^"]+)"', draw(data, salt="gang")[1]))
    assert ids and not ids & other  # two charts inline in one HTML page never share an id


def test_a_config_switch_is_a_line_on_the_chart(tmp_path: Path) -> None:
    from hivedlab.checker.report.charts import Switch
    from hivedlab.cli.main import main

    data = chart_data("switch", _priority_attempts(), NODES, TWO_VC, 600, (Switch(700.0, "config one-vc"),))
    assert data.switches == (Switch(700.0, "config one-vc"),) and data.end == 700.0  # the line is inside the chart
    png, svg = draw(data, salt="switch")
    assert png.startswith(b"\x89PNG") and "config one-vc" in svg
    assert main(["run", "reconfig", "--out", str(tmp_path), "--no-report"]) == 0
    chart = timeline_for_chart(tmp_path / "experiments" / "reconfig" / "evidence.jsonl")
    assert [s.label for s in chart.switches] == ["config one-vc"] and 0 < chart.switches[0].time < chart.end
