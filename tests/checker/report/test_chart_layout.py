"""Where a chart's marks and texts go: bars at once on one node on rows of their own, labels that never overlap, a
legend inside the canvas; checked on the layout the painter follows, for the contrast runs and for the five
experiments on the manual's hardware and the other layouts the lab supports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hivedlab.checker.report.charts import ChartData, Switch, TaskAttempt, chart_data, draw
from hivedlab.checker.report.inputs import load_run
from hivedlab.checker.report.timeline import timeline_for_chart
from hivedlab.cli.main import main
from tests.support.charts import chart_layout, collisions
from tests.support.paths import ROOT

CONTRAST = (("gang", "kube-batch"), ("gang", "default"), ("kubeflow-gang", None))
LAYOUTS = {"manual": (1, 1), "two-workers-4-gpus": (4, 4), "uneven-1-and-2-gpus": (1, 2)}


def _inventory(folder: Path, gpus: tuple[int, int]) -> Path:
    """The example inventory with its two workers' GPU counts changed."""
    head, carol, dan = (ROOT / "configs" / "group.example.yaml").read_text(encoding="utf-8").split("    gpus: 1")
    path = folder / f"group-{gpus[0]}-{gpus[1]}.yaml"
    path.write_text(f"{head}    gpus: {gpus[0]}{carol}    gpus: {gpus[1]}{dan}", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ChartData]:
    """Every chart of the contrast runs and of `run all` on each layout, by name."""
    out = tmp_path_factory.mktemp("charts")
    charts: dict[str, ChartData] = {}
    for experiment, scheduler in CONTRAST:
        assert main(["run", experiment, "--out", str(out / "contrast-runs"), "--no-report",
                     *(["--scheduler", scheduler] if scheduler else [])]) == 0
    for folder in sorted((out / "contrast-runs" / "contrast").glob("*@*")):
        timeline = timeline_for_chart(folder / "evidence.jsonl")
        charts[folder.name] = chart_data(folder.name, timeline.attempts, tuple(sorted(timeline.nodes)), {},
                                         timeline.end or None, timeline.switches, timeline.rejections,
                                         timeline.into_second)
    for name, gpus in LAYOUTS.items():
        assert main(["run", "all", "--out", str(out / name), "--no-report", "--inventory",
                     str(_inventory(out, gpus))]) == 0
        for exp in load_run(out / name).experiments:
            charts[f"{exp.id}-{name}"] = chart_data(exp.id, exp.timeline.attempts, exp.nodes, exp.vc_nodes,
                                                    exp.timeline.end or None, exp.timeline.switches,
                                                    exp.timeline.rejections, exp.timeline.into_second)
    return charts


def test_every_chart_of_the_contrast_runs_and_the_layouts_is_made(runs: dict[str, ChartData]) -> None:
    assert {"gang@kube-batch", "gang@default", "kubeflow-gang@default", "kubeflow-gang@kube-batch"} <= set(runs)
    assert len([name for name in runs if "@" not in name]) == 5 * len(LAYOUTS)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_no_text_overlaps_another_a_short_bar_or_a_mark_and_all_stays_on_the_canvas(
        runs: dict[str, ChartData], lang: str) -> None:
    problems = {name: collisions(chart_layout(data, lang)) for name, data in runs.items()}
    assert {name: found for name, found in problems.items() if found} == {}


def test_the_kubeflow_run_under_the_default_scheduler_labels_its_bars_apart(runs: dict[str, ChartData]) -> None:
    """The issue's chart: a node's parameter server and worker ran at once and were drawn over each other; now each
    node whose run bars overlap has a row per bar at once, the two 3-worker jobs' bars a label each, the legend every
    job in full."""
    data = runs["kubeflow-gang@default"]
    chart = chart_layout(data, "zh")
    shared = {lane for lane in range(len(data.lanes)) for a in data.bars for b in data.bars
              if a is not b and a.kind == b.kind == "run" and lane in a.lanes and lane in b.lanes
              and a.start < b.end and b.start < a.end}
    assert shared and all(chart.lane_rows[lane][1] >= 2 for lane in shared)
    together = [i for i, bar in enumerate(data.bars) if bar.kind == "run" and "deadlock" in bar.job]
    assert together and {label.bar for label in chart.labels} >= set(together)
    assert [entry.label for entry in chart.legend if entry.key.startswith("job:")] == list(data.jobs)


def test_bars_at_once_on_one_node_get_rows_of_their_own() -> None:
    attempts = [TaskAttempt("a", "ps-0", 0, "n1", (), 0, 50, "succeeded"),
                TaskAttempt("a", "worker-0", 0, "n1", (), 10, 60, "succeeded"),
                TaskAttempt("b", "worker-0", 0, "n1", (), 55, 90, "succeeded")]
    chart = chart_layout(chart_data("rows", attempts, ("n1",), {}, 100))
    assert chart.lane_rows == ((0, 2),) and chart.bar_rows == ((0,), (1,), (0,))  # b reuses the row a's ps-0 left
    assert not collisions(chart)


def test_job_names_lose_only_the_suffix_all_share() -> None:
    assert short_names_of("job-config-5-alice-gang-s1", "job-config-6-alice-gang-s1") == ["job-config-5",
                                                                                         "job-config-6"]
    assert short_names_of("a-x", "b-y") == ["a-x", "b-y"]
    assert short_names_of("solo-alice-gang-s1") == ["solo-alice-gang-s1"]  # one job: nothing to tell apart


def short_names_of(*jobs: str) -> list[str]:
    from hivedlab.checker.report.charts_layout import short_names

    return list(short_names(jobs).values())


def test_a_legend_of_many_long_names_takes_fewer_columns_and_stays_on_the_canvas() -> None:
    attempts = [TaskAttempt(f"tfjob-a-rather-long-job-name-number-{i}-of-the-group-{i}", "worker-0", 0, "n1", (),
                            10.0 * i, 10.0 * i + 5, "succeeded") for i in range(7)]
    chart = chart_layout(chart_data("legend", attempts, ("n1",), {}, 100), "en")
    assert chart.legend_columns < 4 and not collisions(chart)


@pytest.mark.parametrize(("name", "lang"), [("kubeflow-gang@default", "zh"), ("kubeflow-gang@kube-batch", "en"),
                                            ("priority-uneven-1-and-2-gpus", "zh"),
                                            ("incremental-two-workers-4-gpus", "en")])
def test_the_painted_texts_keep_to_the_layout(runs: dict[str, ChartData], name: str, lang: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """What matplotlib draws, measured on the figure itself: the texts placed on the canvas overlap nothing else
    placed there, and they, the lane labels and the legend stay on the canvas."""
    from matplotlib.figure import Figure

    seen: list[list[str]] = []
    save = Figure.savefig

    def measure_then_save(self: Figure, *args: Any, **kwargs: Any) -> Any:
        if not seen:
            self.draw_without_rendering()
            renderer = self._get_renderer()  # type: ignore[attr-defined]
            canvas = self.bbox
            placed = [(text.get_text(), text.get_window_extent(renderer)) for text in self.texts]
            lanes = [(t.get_text(), t.get_window_extent(renderer)) for t in self.axes[0].get_yticklabels()]
            legend = [("legend", legend.get_window_extent(renderer)) for legend in self.legends]
            problems = [f"{text!r} leaves the canvas" for text, box in [*placed, *lanes, *legend]
                        if box.x0 < canvas.x0 - 0.5 or box.x1 > canvas.x1 + 0.5 or box.y0 < canvas.y0 - 0.5
                        or box.y1 > canvas.y1 + 0.5]
            problems += [f"{a!r} overlaps {b!r}" for i, (a, box_a) in enumerate(placed) for b, box_b in placed[i + 1:]
                         if box_a.overlaps(box_b)]
            seen.append(problems)
        return save(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", measure_then_save)
    draw(runs[name], lang, salt=name)
    assert seen == [[]]


def test_config_switches_close_together_keep_their_labels_apart() -> None:
    attempts = [TaskAttempt("a", "train-0", 0, "n1", (0,), 0, 100, "succeeded")]
    switches = (Switch(40.0, "config", "one-vc"), Switch(41.0, "restart"), Switch(42.0, "config", "two-vc"))
    chart = chart_layout(chart_data("switches", attempts, ("n1",), {}, 100, switches), "zh")
    assert [t.kind for t in chart.texts].count("switch") == 3 and not collisions(chart)


def test_a_mark_sits_on_the_row_of_its_attempts_bar() -> None:
    """A re-created attempt that never waited is marked where it was created, before its bar starts, on its row."""
    attempts = [TaskAttempt("a", "ps-0", 0, "n1", (), 0, 100, "succeeded"),
                TaskAttempt("b", "worker-0", 0, "n1", (), 10, 50, "preempted", preempted=True),
                TaskAttempt("b", "worker-0", 1, "n1", (), 60, 90, "succeeded", recreated=True, created=55)]
    data = chart_data("marks", attempts, ("n1",), {}, 100)
    chart = chart_layout(data)
    assert [(m.kind, row) for m, row in zip(data.markers, chart.mark_rows, strict=True)] == [("preempted", 1),
                                                                                              ("recreated", 1)]
