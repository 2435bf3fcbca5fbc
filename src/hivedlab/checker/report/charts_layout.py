"""The words a timeline chart carries, in the report's language: lane labels, legend entries, bar labels and where
they go (inside a bar or beside it)."""

from __future__ import annotations

from dataclasses import dataclass

from hivedlab.basics.text import Text
from hivedlab.checker.report.charts_model import ChartData, Lane, Marker, Switch
from hivedlab.checker.report.text import clock

WORDS: dict[str, Text] = {
    "axis": Text("自实验开始起的时间（T+时:分:秒）", "time since the experiment began (T+h:mm:ss)"),
    "waiting": Text("等待（无法调度）", "waiting (unschedulable)"),
    "preempted": Text("被抢占", "preempted"),
    "recreated": Text("重新创建的尝试", "re-created attempt"),
    "rejected": Text("提交被拒绝", "submission rejected"),
    "config": Text("切换 HiveD 配置", "HiveD config switch"),
    "restart": Text("重启 HiveD", "HiveD restart"),
}
_LANE_WORDS = {"wait": Text("等待 {}", "waiting {}"), "rejected": Text("被拒绝 {}", "rejected {}")}
_SWITCH_WORDS = {"config": Text("切换到配置 {}", "config {}"), "restart": Text("重启 HiveD", "HiveD restart")}
VC_WORDS = Text("虚拟集群\n{}", "VC\n{}")
_TRY = Text("{task}（第 {n} 次）", "{task} (try {n})")
_REJECTED_AT = Text("{time} 提交，被拒绝（HTTP {status}）", "submitted {time}, rejected (HTTP {status})")
PLOT_PX = 600  # the plot's width in pixels per chart length, at the least (the lane labels take the rest)


@dataclass(frozen=True)
class LegendEntry:
    key: str  # job:<name> | waiting | preempted | recreated | rejected | config | restart
    label: str


@dataclass(frozen=True)
class BarLabel:
    lane: int
    x: float  # where the text is anchored, in seconds
    text: str
    place: str  # inside (centred on the bar) | right (beside its end) | left (beside its start)
    span: tuple[float, float] = (0.0, 0.0)  # the bar's start and end


def lane_label(lane: Lane, lang: str) -> str:
    words = _LANE_WORDS.get(lane.kind)
    return words.get(lang).format(lane.label) if words else lane.label


def switch_label(switch: Switch, lang: str) -> str:
    return _SWITCH_WORDS[switch.kind].get(lang).format(switch.name)


def legend_entries(data: ChartData, lang: str) -> tuple[LegendEntry, ...]:
    """One entry per kind of mark the chart draws, and none for a mark it does not."""
    drawn_jobs = {bar.job for bar in data.bars}
    entries = [LegendEntry(f"job:{job}", job) for job in data.jobs if job in drawn_jobs]
    kinds = [*(("waiting",) if any(b.kind == "wait" for b in data.bars) else ()),
             *(m.kind for m in data.markers), *(s.kind for s in data.switches)]
    entries += [LegendEntry(kind, WORDS[kind].get(lang)) for kind in WORDS if kind in kinds]
    return tuple(entries)


def bar_labels(data: ChartData, lang: str) -> tuple[BarLabel, ...]:
    """Labels of the run bars: inside a bar wide enough for its text (a first attempt's as just the task's name if
    need be); beside a shorter one (after its end, or before its start near the chart's right edge), naming the job
    too, since a short bar's colour is hard to see."""
    labels = []
    for bar in data.bars:
        if bar.kind != "run":
            continue
        text = _TRY.get(lang).format(task=bar.task, n=bar.attempt + 1) + (" …" if bar.open_end else "")
        room = (bar.end - bar.start) / data.end * PLOT_PX
        # a first attempt's label may leave out "try 1" to fit inside its bar
        inside = next((t for t in (text, bar.task if bar.attempt == 0 and not bar.open_end else "")
                       if t and room >= _text_px(t)), "")
        if inside:
            labels += [BarLabel(lane, (bar.start + bar.end) / 2, inside, "inside", (bar.start, bar.end))
                       for lane in bar.lanes]
        elif bar.end <= data.end * 0.75:
            labels.append(BarLabel(bar.lanes[0], bar.end, f"{bar.job} {text}", "right", (bar.start, bar.end)))
        else:
            labels.append(BarLabel(bar.lanes[0], bar.start, f"{bar.job} {text}", "left", (bar.start, bar.end)))
    return tuple(labels)


def _text_px(text: str) -> float:
    """About how wide a bar label is drawn (7 pt at the PNG's 110 dpi: ~6 px a Latin letter, ~11 px a Chinese one)."""
    return 10 + sum(11 if "\u2e80" <= char <= "\uffef" else 6 for char in text)


def rejection_label(marker: Marker, lang: str) -> str:
    status = marker.status if marker.status is not None else "?"
    return _REJECTED_AT.get(lang).format(time=clock(marker.time), status=status)
