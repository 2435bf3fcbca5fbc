"""The report's charts (PNG, matplotlib's headless Agg backend, the packaged CJK font for Chinese labels): the CDF
of queuing delay per policy, each VC's excess delay over its private cluster, GPU utilization over time."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hivedlab.checker.report.fonts import register_with_matplotlib
from hivedlab.trace.metrics import PolicyRow
from hivedlab.trace.report import NAMES
from hivedlab.trace.simulate import Outcome

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WORDS = {
    "en": {"cdf": "Queuing delay, CDF per policy", "delay": "queuing delay (minutes, log scale)",
           "fraction": "fraction of jobs", "excess": "Mean queuing delay beyond the private cluster, per VC",
           "minutes": "minutes", "util": "GPU utilization over time", "days": "days", "used": "GPUs in use (%)"},
    "zh": {"cdf": "排队时间的累积分布（各策略）", "delay": "排队时间（分钟，对数刻度）", "fraction": "作业比例",
           "excess": "各 VC 比独占集群多等的平均排队时间", "minutes": "分钟", "util": "GPU 利用率随时间变化",
           "days": "天", "used": "使用中的 GPU (%)"},
}


def _figure(lang: str) -> Figure:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    family = [register_with_matplotlib(), "DejaVu Sans"] if lang == "zh" else ["DejaVu Sans"]
    matplotlib.rcParams["font.family"] = family
    return Figure(figsize=(8, 4.5), dpi=100)


def _png(fig: Figure, ax: Axes, title: str) -> bytes:
    """The chart with its title and legend, as PNG bytes."""
    ax.set_title(title)
    ax.legend()
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def cdf_chart(outcomes: Mapping[str, Outcome], lang: str) -> bytes:
    fig = _figure(lang)
    ax, w = fig.add_subplot(), WORDS[lang]
    for name, outcome in outcomes.items():
        delays = sorted(max(r.queuing / 60, 0.01) for r in outcome.results)
        if delays:
            ys = [(i + 1) / len(delays) for i in range(len(delays))]
            ax.step(delays, ys, where="post", label=NAMES[lang][name])
    ax.set_xscale("log")
    ax.set_xlabel(w["delay"])
    ax.set_ylabel(w["fraction"])
    return _png(fig, ax, w["cdf"])


def excess_chart(rows: Mapping[str, PolicyRow], lang: str) -> bytes:
    fig = _figure(lang)
    ax, w = fig.add_subplot(), WORDS[lang]
    policies = [p for p in rows if p != "private"]
    vcs = sorted({row.vc for p in policies for row in rows[p].vcs})
    width = 0.8 / max(len(policies), 1)
    for k, p in enumerate(policies):
        by_vc = {row.vc: row.excess for row in rows[p].vcs}
        xs = [i + k * width for i in range(len(vcs))]
        ax.bar(xs, [(by_vc.get(vc) or 0.0) / 60 for vc in vcs], width, label=NAMES[lang][p])
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(vcs))], vcs, rotation=45, ha="right")
    ax.axhline(0, color="#444444", linewidth=0.8)
    ax.set_ylabel(w["minutes"])
    return _png(fig, ax, w["excess"])


def utilization_chart(outcomes: Mapping[str, Outcome], lang: str) -> bytes:
    fig = _figure(lang)
    ax, w = fig.add_subplot(), WORDS[lang]
    for name, outcome in outcomes.items():
        if not outcome.samples or not outcome.total_gpus:
            continue
        origin = outcome.samples[0].time
        ax.plot([(s.time - origin) / 86400 for s in outcome.samples],
                [100 * s.used_gpus / outcome.total_gpus for s in outcome.samples], label=NAMES[lang][name],
                linewidth=0.9)
    ax.set_xlabel(w["days"])
    ax.set_ylabel(w["used"])
    ax.set_ylim(0, 100)
    return _png(fig, ax, w["util"])
