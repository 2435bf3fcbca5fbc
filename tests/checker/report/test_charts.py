"""The data behind the timeline charts (lanes, bars, markers, VC bands), and that drawing it works headless."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hivedlab.checker.judging.timeline import vc_nodes_from_config
from hivedlab.checker.report.build import build_report
from hivedlab.checker.report.charts import ChartData, Rejection, Switch, TaskAttempt, chart_data, draw, merge_shared
from hivedlab.checker.report.charts_layout import free_part, legend_entries
from hivedlab.checker.report.timeline import timeline_for_chart
from hivedlab.checker.report.wording import clock
from tests.support.charts import bar_labels, chart_layout, svg_texts
from tests.support.paths import FIXTURES, ROOT

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
    from hivedlab.cli.main import main

    data = chart_data("switch", _priority_attempts(), NODES, TWO_VC, 600, (Switch(700.0, "config", "one-vc"),))
    assert data.switches == (Switch(700.0, "config", "one-vc"),) and data.end == 700.0  # the line is inside the chart
    assert "config one-vc" in svg_texts(draw(data, "en", salt="switch")[1])
    assert "切换到配置 one-vc" in svg_texts(draw(data, "zh", salt="switch")[1])
    assert main(["run", "reconfig", "--out", str(tmp_path), "--no-report"]) == 0
    chart = timeline_for_chart(tmp_path / "experiments" / "reconfig" / "evidence.jsonl")
    assert [(s.kind, s.name) for s in chart.switches] == [("config", "one-vc")]
    assert 0 < chart.switches[0].time < chart.end


def _short_first_attempt() -> list[TaskAttempt]:
    """Priority's shape: the low job's first attempt runs 3 s of a 740 s chart before it is preempted."""
    return [
        TaskAttempt("low", "train-0", 0, "hostname-dan", (0,), 5, 8, "preempted", preempted=True, created=2),
        TaskAttempt("high", "train-0", 0, "hostname-dan", (0,), 15, 375, "succeeded", waiting=((8, 10),), created=8),
        TaskAttempt("low", "train-0", 1, "hostname-dan", (0,), 378, 740, "succeeded", waiting=((11, 375),),
                    recreated=True, created=11),
    ]


def test_a_chart_for_the_chinese_report_says_everything_in_chinese():
    data = chart_data("优先级和抢占", _short_first_attempt(), NODES, TWO_VC, 740, (Switch(400.0, "restart"),),
                      (Rejection("big", 20.0, 400, "too big"),))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a glyph missing from every font would warn
        texts = svg_texts(draw(data, "zh", salt="zh")[1])
    for words in ("优先级和抢占", "自实验开始起的时间（T+时:分:秒）", "等待 high/train-0", "被拒绝 big", "虚拟集群",
                  "train-0（第 2 次）", "low train-0（第 1 次）", "等待（无法调度）", "被抢占", "重新创建的尝试",
                  "提交被拒绝", "重启 HiveD", "T+0:00:20 提交，被拒绝（HTTP 400）"):
        assert words in texts
    english = re.compile(r"\b(waiting|preempted|re-created|rejected|submitted|try|time since|VC|config)\b")
    assert not [t for t in texts if english.search(t)]


def test_the_chinese_text_is_set_in_the_packaged_cjk_font():
    svg = draw(chart_data("弹性调度", _short_first_attempt(), NODES, TWO_VC, 740), "zh", salt="font")[1]
    assert 'id="font-NotoSansSC-Regular-' in svg  # the glyphs come from Noto Sans SC, no system font


def test_the_english_chart_keeps_its_english_words():
    texts = svg_texts(draw(chart_data("Priority", _short_first_attempt(), NODES, TWO_VC, 740), "en", salt="en")[1])
    for words in ("time since the experiment began (T+h:mm:ss)", "waiting high/train-0", "VC", "train-0 (try 2)",
                  "low train-0 (try 1)", "waiting (unschedulable)", "preempted", "re-created attempt"):
        assert words in texts
    assert not [t for t in texts if re.search(r"[\u4e00-\u9fff]", t)]


def test_the_legend_lists_only_the_marks_the_chart_draws():
    plain = [TaskAttempt("a", "t-0", 0, "n1", (0,), 0, 50, "succeeded"),
             TaskAttempt("b", "t-0", 0, waiting=((1, 100),), outcome="waiting")]
    data = chart_data("plain", plain, ("n1",), {}, 100)
    assert [e.key for e in legend_entries(data, "en")] == ["job:a", "job:b", "waiting"]
    texts = svg_texts(draw(data, "en", salt="plain")[1])
    assert "preempted" not in texts and "re-created attempt" not in texts and "HiveD config switch" not in texts
    full = chart_data("full", _short_first_attempt(), NODES, TWO_VC, 740, (Switch(400.0, "config", "one-vc"),),
                      (Rejection("big", 20.0, 400, ""),))
    assert [e.key for e in legend_entries(full, "en")] == [
        "job:low", "job:high", "waiting", "preempted", "recreated", "rejected", "config"]


def test_a_job_that_only_was_rejected_gets_no_colour_in_the_legend():
    data = chart_data("rejected", [], ("n1",), {}, 100, rejections=(Rejection("big", 20.0, 400, ""),))
    assert [e.key for e in legend_entries(data, "zh")] == ["rejected"]


def test_a_short_bar_is_labelled_beside_it_and_a_wide_one_inside():
    data = chart_data("priority", _short_first_attempt(), NODES, TWO_VC, 740)
    labels = {(label.text, label.place) for label in bar_labels(data, "en")}
    assert labels == {("low train-0 (try 1)", "right"), ("train-0 (try 1)", "inside"), ("train-0 (try 2)", "inside")}
    chart = chart_layout(data, "en")
    beside = next(label for label in chart.labels if label.place == "right")
    assert data.lanes[beside.lane].key == "hostname-dan"
    assert beside.box.x0 > chart.mark_boxes[0].x1 > chart.x(8)  # after the bar's end, past the ✖ there
    inside = next(label for label in chart.labels if label.text == "train-0 (try 1)")
    assert inside.box.x0 > beside.box.x1  # the wide bar's own label in the part the label beside leaves free
    assert "low train-0 (try 1)" in svg_texts(draw(data, "en", salt="short")[1])


def test_a_short_bar_near_the_right_edge_is_labelled_before_it():
    data = chart_data("late", [TaskAttempt("late", "train-0", 0, "n1", (0,), 95, 98, "succeeded")], ("n1",), {}, 100)
    chart = chart_layout(data, "zh")
    assert [label.place for label in chart.labels] == ["left"] and chart.labels[0].box.x1 < chart.x(95)


def test_a_wide_bar_label_keeps_clear_of_a_label_beside():
    assert free_part((15, 375), [(8, 90)]) == (90, 375)
    assert free_part((0, 100), [(30, 40)]) == (40, 100)
    assert free_part((10, 20), [(0, 30)]) == (10, 10)  # nothing left free


def test_a_rejected_submission_is_marked_at_its_submit_time():
    data = chart_data("incremental", [], NODES, TWO_VC, 1000, rejections=(Rejection("big", 367.7, 400, "quota"),))
    lane = next(i for i, lane in enumerate(data.lanes) if lane.kind == "rejected")
    assert data.lanes[lane].label == "big"
    assert [(m.kind, m.lane, m.time, m.status) for m in data.markers] == [("rejected", lane, 367.7, 400)]
    texts = svg_texts(draw(data, "en", salt="rejected")[1])
    assert "rejected big" in texts and f"submitted {clock(367.7)}, rejected (HTTP 400)" in texts  # the one clock


def test_the_report_draws_the_incremental_rejection_in_its_language(tmp_path: Path):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    build_report(run, "zh")
    zh = svg_texts((run / "experiments" / "incremental" / "timeline.svg").read_text(encoding="utf-8"))
    assert "被拒绝 job-over-quota-gang" in zh and "弹性调度 (Incremental Scheduling)" in zh
    row = next(line for line in (run / "report.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| job-over-quota-gang |"))
    when = re.search(r"T\+\d:\d\d:\d\d", row)
    assert when and f"{when.group(0)} 提交，被拒绝（HTTP 400）" in zh  # the same second the report's table prints
    build_report(run, "en", out_dir=tmp_path / "en")
    en = svg_texts((tmp_path / "en" / "experiments" / "incremental" / "timeline.svg").read_text(encoding="utf-8"))
    assert "rejected job-over-quota-gang" in en and "Incremental Scheduling" in en


def test_a_chart_counts_from_the_reports_t0():
    """The report's T+0 is the first record's whole second: a chart of times 0.6 s into it is drawn shifted."""
    data = chart_data("origin", _short_first_attempt(), NODES, TWO_VC, 740, (Switch(400.0, "restart"),),
                      (Rejection("big", 20.0, 400, ""),), origin=0.6)
    runs = [(b.start, b.end) for b in data.bars if b.kind == "run"]
    assert runs == [(5.6, 8.6), (15.6, 375.6), (378.6, 740.6)] and data.end == 740.6
    assert data.switches[0].time == 400.6 and [m.time for m in data.markers if m.kind == "rejected"] == [20.6]


def test_charts_drawn_in_forked_workers_are_the_bytes_drawn_one_by_one():
    """`draw_many` forks only in a process without other threads (a pytest-xdist worker has some) and from
    `parallel_from` charts on, so the parallel path is taken in a fresh interpreter; both paths must give the same
    files."""
    script = (
        "import pickle, sys\n"
        "from hivedlab.checker.report import charts\n"
        "from tests.checker.report.test_charts import JOBS, jobs\n"
        "pools = []\n"
        "class Pool(charts.ProcessPoolExecutor):\n"
        "    def __init__(self, *args, **kwargs):\n"
        "        pools.append(args)\n"
        "        super().__init__(*args, **kwargs)\n"
        "charts.ProcessPoolExecutor = Pool\n"
        "drawn = charts.draw_many(jobs(), parallel_from=2)\n"
        "sys.stdout.buffer.write(pickle.dumps((len(pools), drawn)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    pools, forked = pickle.loads(done.stdout)
    assert pools == (1 if (os.cpu_count() or 1) > 1 else 0)
    assert forked == [draw(*job) for job in jobs()]
    assert len(forked) == len(JOBS)


JOBS = (("a", "zh"), ("b", "en"), ("c", "zh"))


def jobs() -> list[tuple[ChartData, str, str]]:
    return [(chart_data(name, _priority_attempts(), NODES, TWO_VC, 670), lang, name) for name, lang in JOBS]
