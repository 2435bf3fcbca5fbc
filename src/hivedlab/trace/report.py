"""The trace report: the answers to the lecture's two questions, the tables they come from, the jobs left out, the
assumptions and the charts; Markdown in both languages (docs/trace.md#the-report).

Every number in the answers is a cell of the tables, formatted by the same function (tests/trace/test_report.py
checks each one), and every comparison in them ("the shortest", "chosen") is computed from the rows here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hivedlab.trace.cells import VcCells
from hivedlab.trace.metrics import TOLERANCE_FRACTION, TOLERANCE_SECONDS, PolicyRow
from hivedlab.trace.workload import Workload

SHARED = ("fifo", "quota", "hived", "drf")
NAMES = {
    "en": {"fifo": "FIFO", "quota": "quota VCs", "hived": "HiveD", "drf": "DRF", "private": "each VC alone"},
    "zh": {"fifo": "FIFO", "quota": "配额 VC", "hived": "HiveD", "drf": "DRF", "private": "各 VC 独占"},
}

# what each policy is built to optimize: a statement of its design, no number in it
DESIGN = {
    "en": {
        "fifo": "serves jobs in arrival order over the whole cluster, without groups",
        "quota": "guarantees each group a count of GPUs and lends what is idle",
        "hived": "guarantees each group its cells, the shape of its private cluster, and lends what is idle",
        "drf": "equalizes the groups' dominant shares of GPUs, CPU and memory, without preemption",
    },
    "zh": {
        "fifo": "在整个集群上按到达顺序服务作业，不分组",
        "quota": "保证每组的 GPU 个数，并借出空闲的部分",
        "hived": "保证每组的单元（即其独占集群的形状），并借出空闲的部分",
        "drf": "使各组在 GPU、CPU、内存上的主导份额相等，不抢占",
    },
}

TEXT = {
    "en": {
        "title": "# Multi-tenant trace: why HiveD exists",
        "trace": "Trace: {source}; {jobs} jobs replayed, {left} left out; {vcs} VCs; cluster: {servers} = {gpus} GPUs.",
        "method": "Each VC's cells: on each server type, the type's GPUs are split between the VCs by largest "
                  "remainder on their shares, then made into whole servers and the largest cells below a server the "
                  "rest needs. The same cells are the quota VCs' quotas (their GPU count) and each VC's private "
                  "cluster. Queuing delay = completion - submit - duration - runs lost to preemption (time in a "
                  "queue). A VC waits longer than alone when its mean queuing delay exceeds its private cluster's by "
                  "more than {tol}, whichever is larger; a job, when its own delay does.",
        "answers": "## Answers to the lecture's questions",
        "q1": "**Compare what each algorithm optimizes.**",
        "q2": "**In a heterogeneous cluster, which algorithm would an administrator who wants fairness between groups "
              "choose?**",
        "per_policy": "{name} ({design}): mean wait {mean} min (p95 {p95} min), GPU utilization {util} %, {pre} "
                      "preemptions; {vcs} of {n} VCs and {jobs} jobs wait longer than alone.",
        "compare": "Shortest mean wait: {fast} ({fast_mean} min); highest GPU utilization: {busy} ({busy_util} %); "
                   "most jobs waiting longer than alone: {worst} ({worst_jobs}).",
        "no_private": "Without the private cluster replayed (--policies without private) no policy can be compared "
                      "with each VC alone.",
        "rule": "Ranked by VCs waiting longer than alone, then jobs waiting longer than alone, then the share the "
                "worst served waiting VC holds, the choice is {choice}: {vcs} of {n} VCs and {jobs} jobs wait longer "
                "than alone, the worst served waiting VC holds {worst} of its share (Jain's index {jain}).",
        "tie": "Ranked by VCs waiting longer than alone, then jobs waiting longer than alone, then the share the "
               "worst served waiting VC holds, this trace does not tell {choice} apart: under each, {vcs} of {n} VCs "
               "and {jobs} jobs wait longer than alone, the worst served waiting VC holds {worst} of its share.",
        "other": "{name}: {vcs} of {n} VCs and {jobs} jobs wait longer than alone, worst VC {worst} of its share, "
                 "Jain's index {jain}.",
        "why": "A count of GPUs is no guarantee in a heterogeneous cluster: a quota's GPUs can be scattered over "
               "servers that other groups' jobs share, so a group's multi-GPU job waits although its quota is free; "
               "cells per server type keep the shape as well as the count.",
        "policies": "## Policies",
        "policies_note": "Stranded GPUs: free GPUs that no job at the head of a queue can use, averaged over the "
                         "samples. Jain's index and the worst VC ratio: GPUs held over the GPUs of the share, among "
                         "the VCs with a waiting job, averaged over the samples.",
        "per_vc": "## Waiting beyond the private cluster, per VC",
        "per_vc_note": "[n]: the VC's jobs that wait longer than alone. ⚠: the VC waits longer than alone. Excess = "
                       "mean over the VC's jobs of (queuing delay - queuing delay alone).",
        "named": "## Jobs that waited longer than alone (longest first)",
        "fair": "## Share held while waiting, per VC",
        "left": "## Jobs left out",
        "none": "none",
        "assumptions": "## Assumptions",
        "charts": "## Charts",
    },
    "zh": {
        "title": "# 多租户负载重放：HiveD 为何存在",
        "trace": "负载：{source}；重放 {jobs} 个作业，剔除 {left} 个；{vcs} 个 VC；集群：{servers} = {gpus} 个 GPU。",
        "method": "各 VC 的单元：在每种服务器上按份额用最大余数法分配该类型的 GPU，再组成整台服务器和服务器以下所需的"
                  "最大单元。同一组单元也是配额 VC 的配额（其 GPU 数）和每个 VC 的独占集群。排队时间 = 完成 - 提交 - "
                  "运行时长 - 被抢占而丢失的运行（即在队列中的时间）。某 VC 的平均排队时间比其独占集群多出 {tol}（取较"
                  "大者）以上，称它比独占时等得更久；作业同理。",
        "answers": "## 课程问题的回答",
        "q1": "**对比不同算法的侧重点。**",
        "q2": "**如果在异构集群环境下，管理员倾向于组间的资源使用的公平性，会倾向于选择哪种调度算法？**",
        "per_policy": "{name}（{design}）：平均排队 {mean} 分钟（p95 {p95} 分钟），GPU 利用率 {util} %，抢占 {pre} 次"
                      "；{n} 个 VC 中有 {vcs} 个、共 {jobs} 个作业比独占时等得更久。",
        "compare": "平均排队最短：{fast}（{fast_mean} 分钟）；GPU 利用率最高：{busy}（{busy_util} %）；比独占时等得更"
                   "久的作业最多：{worst}（{worst_jobs} 个）。",
        "no_private": "没有重放独占集群（--policies 中没有 private），无法与各 VC 独占相比。",
        "rule": "依次按比独占时等得更久的 VC 数、作业数、等待时得到份额最少的 VC 所得份额排序，应选 {choice}：{n} 个 V"
                "C 中有 {vcs} 个、共 {jobs} 个作业比独占时等得更久，等待时得到份额最少的 VC 有其份额的 {worst}（Jain "
                "指数 {jain}）。",
        "tie": "依次按比独占时等得更久的 VC 数、作业数、等待时得到份额最少的 VC 所得份额排序，这份负载分不出 {choice} "
               "的高下：在每一种之下，{n} 个 VC 中有 {vcs} 个、共 {jobs} 个作业比独占时等得更久，等待时得到份额最少的 "
               "VC 有其份额的 {worst}。",
        "other": "{name}：{n} 个 VC 中有 {vcs} 个、共 {jobs} 个作业比独占时等得更久，最差 VC 有其份额的 {worst}，Jain "
                 "指数 {jain}。",
        "why": "在异构集群中，GPU 个数不等于保证：配额里的 GPU 可能散落在与其他组作业共享的服务器上，于是即使配额空闲"
               "，该组的多 GPU 作业也只能等待；按服务器类型划分的单元同时保证了个数与形状。",
        "policies": "## 各策略",
        "policies_note": "闲置碎片 GPU：空闲但没有任何队首作业能用的 GPU，按采样平均。Jain 指数与最差 VC 比值：有作业"
                         "等待的 VC 所持 GPU 与其份额对应 GPU 之比，按采样平均。",
        "per_vc": "## 各 VC 比独占集群多等的时间",
        "per_vc_note": "[n]：该 VC 比独占时等得更久的作业数。⚠：该 VC 比独占时等得更久。多等 = 该 VC 各作业（排队时间 "
                       "- 独占时排队时间）的平均。",
        "named": "## 比独占时等得更久的作业（多等最久的在前）",
        "fair": "## 等待时所得份额（各 VC）",
        "left": "## 剔除的作业",
        "none": "无",
        "assumptions": "## 假设",
        "charts": "## 图表",
    },
}

POLICY_HEADER = {
    "en": ["policy", "jobs", "mean wait (min)", "p50 (min)", "p95 (min)", "max (min)", "mean JCT (h)",
           "GPU utilization (%)", "stranded GPUs", "Jain's index", "worst VC ratio", "VCs longer than alone",
           "jobs longer than alone", "preemptions", "GPU hours lost"],
    "zh": ["策略", "作业数", "平均排队 (分钟)", "p50 (分钟)", "p95 (分钟)", "最大 (分钟)", "平均完成时间 (小时)",
           "GPU 利用率 (%)", "闲置碎片 GPU", "Jain 指数", "最差 VC 比值", "比独占更久的 VC", "比独占更久的作业",
           "抢占次数", "损失的 GPU 小时"],
}
VC_HEADER = {"en": ["VC", "share (%)", "cells (GPUs)", "alone: mean wait (min)"],
             "zh": ["VC", "份额 (%)", "单元 (GPU)", "独占: 平均排队 (分钟)"]}
EXCESS_HEADER = {"en": "{name}: excess (min)", "zh": "{name}: 多等 (分钟)"}
FAIR_HEADER = {"en": ["VC", "share (%)"], "zh": ["VC", "份额 (%)"]}


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f}"


def hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f}"


def percent(fraction: float) -> str:
    return f"{100 * fraction:.1f}"


def ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def share(value: float) -> str:
    return f"{100 * value:.2f}"


@dataclass(frozen=True)
class ReportInput:
    workload: Workload
    cells: VcCells
    rows: Mapping[str, PolicyRow]  # policy -> row, in the order asked for
    assumptions: Sequence[str]


def _table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in body]


def _has_private(data: ReportInput) -> bool:
    return "private" in data.rows


def _longer(data: ReportInput, name: str, count: int) -> str:
    return "-" if name == "private" or not _has_private(data) else str(count)


def policy_table(data: ReportInput, lang: str) -> list[str]:
    body = []
    for name, row in data.rows.items():
        body.append([NAMES[lang][name], str(row.delays.count), minutes(row.delays.mean), minutes(row.delays.p50),
                     minutes(row.delays.p95), minutes(row.delays.max), hours(row.jct.mean), percent(row.utilization),
                     f"{row.stranded_mean:.1f}", ratio(row.jain), ratio(row.worst_ratio),
                     _longer(data, name, len(row.anomalous_vcs)), _longer(data, name, row.longer_jobs),
                     str(row.preemptions), f"{row.lost_gpu_hours:.1f}"])
    return _table(POLICY_HEADER[lang], body)


def vc_table(data: ReportInput, lang: str) -> list[str]:
    policies = [p for p in data.rows if p != "private"]
    header = VC_HEADER[lang] + [EXCESS_HEADER[lang].format(name=NAMES[lang][p]) for p in policies]
    private = data.rows.get("private")
    body = []
    for vc in sorted(data.workload.shares):
        alone = next((r for r in private.vcs if r.vc == vc), None) if private else None
        row = [vc, share(data.workload.shares[vc]), str(data.cells.gpus(vc)),
               minutes(alone.delays.mean) if alone and alone.delays.count else "-"]
        for p in policies:
            mine = next((r for r in data.rows[p].vcs if r.vc == vc), None)
            row.append("-" if mine is None or mine.excess is None
                       else f"{minutes(mine.excess)} [{mine.longer_than_private}]" + (" ⚠" if mine.anomalous else ""))
        body.append(row)
    return _table(header, body)


def fairness_table(data: ReportInput, lang: str) -> list[str]:
    header = FAIR_HEADER[lang] + [NAMES[lang][p] for p in data.rows]
    body = []
    for vc in sorted(data.workload.shares):
        row = [vc, share(data.workload.shares[vc])]
        for p in data.rows:
            mine = next((r for r in data.rows[p].vcs if r.vc == vc), None)
            row.append(ratio(mine.fair_ratio if mine else None))
        body.append(row)
    return _table(header, body)


def answers(data: ReportInput, lang: str) -> tuple[list[str], list[str]]:
    """The two answers' sentences; each number is a table cell, each comparison computed here."""
    rows = {p: r for p, r in data.rows.items() if p in SHARED}
    t, names = TEXT[lang], NAMES[lang]
    n = len(data.workload.shares)
    if not rows:
        return [], []
    first = [t["per_policy"].format(name=names[p], design=DESIGN[lang][p], mean=minutes(r.delays.mean),
                                    p95=minutes(r.delays.p95), util=percent(r.utilization), pre=r.preemptions,
                                    vcs=_longer(data, p, len(r.anomalous_vcs)), n=n,
                                    jobs=_longer(data, p, r.longer_jobs))
             for p, r in rows.items()]
    fast = _extreme(rows, lambda r: minutes(r.delays.mean), lambda r: r.delays.mean, lowest=True)
    busy = _extreme(rows, lambda r: percent(r.utilization), lambda r: r.utilization, lowest=False)
    worst = _extreme(rows, lambda r: str(r.longer_jobs), lambda r: r.longer_jobs, lowest=False)
    first.append(t["compare"].format(
        fast=_names(fast, lang), fast_mean=minutes(rows[fast[0]].delays.mean), busy=_names(busy, lang),
        busy_util=percent(rows[busy[0]].utilization), worst=_names(worst, lang),
        worst_jobs=_longer(data, worst[0], rows[worst[0]].longer_jobs)))
    if not _has_private(data):
        return first, [t["no_private"], t["why"]]
    key = {p: (len(r.anomalous_vcs), r.longer_jobs, -(r.worst_ratio or 0.0)) for p, r in rows.items()}
    best = [p for p in rows if key[p] == min(key.values())]
    c = rows[best[0]]
    template = t["rule"] if len(best) == 1 else t["tie"]
    second = [template.format(choice=_names(best, lang), vcs=len(c.anomalous_vcs), n=n, jobs=c.longer_jobs,
                              worst=ratio(c.worst_ratio), jain=ratio(c.jain))]
    second += [t["other"].format(name=names[p], vcs=len(r.anomalous_vcs), n=n, jobs=r.longer_jobs,
                                 worst=ratio(r.worst_ratio), jain=ratio(r.jain))
               for p, r in rows.items() if p not in best]
    second.append(t["why"])
    return first, second


def _extreme(rows: Mapping[str, PolicyRow], shown: Callable[[PolicyRow], str], value: Callable[[PolicyRow], float],
             lowest: bool) -> list[str]:
    """The policies with the lowest (or highest) value, ties as the report shows the values (equal when printed
    equal)."""
    pick = min if lowest else max
    target = shown(rows[pick(rows, key=lambda p: value(rows[p]))])
    return [p for p in rows if shown(rows[p]) == target]


def _names(policies: Sequence[str], lang: str) -> str:
    return (" / ").join(NAMES[lang][p] for p in policies)


def markdown(data: ReportInput, lang: str, charts: Sequence[tuple[str, str]] = ()) -> str:
    w = data.workload
    t = TEXT[lang]
    first, second = answers(data, lang)
    tol = f"{TOLERANCE_FRACTION * 100:.0f} %" + (" or " if lang == "en" else " 或 ") + f"{TOLERANCE_SECONDS:.0f} s"
    servers = ", ".join(f"{st.count} × {st.gpus} GPU ({st.name})" for st in w.server_types)
    lines = [t["title"], "",
             t["trace"].format(source=w.source, jobs=len(w.jobs), left=len(w.left_out), vcs=len(w.shares),
                               servers=servers, gpus=w.total_gpus), "",
             t["method"].format(tol=tol), "",
             t["answers"], "", t["q1"], ""]
    lines += [f"- {s}" for s in first] + ["", t["q2"], ""]
    lines += [f"- {s}" for s in second] + ["", t["policies"], ""]
    lines += policy_table(data, lang) + ["", t["policies_note"], "", t["per_vc"], ""]
    lines += vc_table(data, lang) + ["", t["per_vc_note"], "", t["named"], ""]
    named = [(p, row) for p, row in data.rows.items() if p != "private" and row.named_jobs]
    for p, row in named:
        listed = ", ".join(f"{job} ({vc}, +{minutes(extra)} min)" for job, vc, extra in row.named_jobs)
        lines.append(f"- {NAMES[lang][p]}: {listed}")
    if not named:
        lines.append(f"- {t['none']}")
    lines += ["", t["fair"], ""] + fairness_table(data, lang) + ["", t["left"], ""]
    reasons: dict[str, int] = {}
    for item in w.left_out:
        reasons[item.reason] = reasons.get(item.reason, 0) + 1
    lines += [f"- {count} × {reason}" for reason, count in sorted(reasons.items())]
    lines += [f"- {NAMES[lang][p]}: {count} × {reason}" for p, row in data.rows.items()
              for reason, count in row.left_out.items()]
    if not reasons and not any(row.left_out for row in data.rows.values()):
        lines.append(f"- {t['none']}")
    lines += ["", t["assumptions"], ""]
    lines += [f"- {a}" for a in data.assumptions] or [f"- {t['none']}"]
    if charts:
        lines += ["", t["charts"], ""] + [f"![{title}]({path})" for title, path in charts]
    lines.append("")
    return "\n".join(lines)
