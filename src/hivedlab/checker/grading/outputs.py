"""The four outputs, as text: grades.csv, grades.md (TA), feedback.md and results.json (per group, students).

Pure functions from grades to strings; writing them (atomically, inside the output folder) is the batch's job.
Students' outputs (feedback, Gradescope results, self-check) never show hidden items, nor findings of a kind only
hidden penalties count.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from hivedlab.checker.grading.copies import copy_clusters, describe
from hivedlab.checker.grading.grade_findings import GradeFinding
from hivedlab.checker.grading.rubric import Rubric
from hivedlab.checker.grading.scoring import GroupGrade

MAX_REFS = 50  # evidence references listed per deduction
BUCKETS = ((90, "90–100"), (80, "80–89"), (70, "70–79"), (60, "60–69"), (0, "0–59"))


@dataclass(frozen=True)
class Skipped:
    """An entry of the submissions folder that is not a group folder (a stray file, an escaping symlink)."""

    name: str
    reason: str


def _num(value: float) -> str:
    return f"{value:g}"


def _md(text: str) -> str:
    """Escape what Markdown tables and HTML would interpret in students' text. Paired backticks stay code spans
    (hivedlab's own sentences name commands that way), whose content is literal in Markdown: only `|` is escaped
    there, for the tables."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code span at all
        out = _escape_text(text).replace("`", "\\`")
    else:
        out = "`".join(_escape_code(part) if index % 2 else _escape_text(part) for index, part in enumerate(parts))
    return " ".join(out.split())


def _escape_text(text: str) -> str:
    out = text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
    for char in "*_[]":
        out = out.replace(char, "\\" + char)
    return out


def _escape_code(text: str) -> str:
    return text.replace("|", "\\|")


def _hidden_kinds(rubric: Rubric) -> frozenset[str]:
    """GradeFinding kinds only hidden penalties count: never shown to students."""
    kinds = {"broken-chain": "chain", "forgery": "forgery", "unsupported-claim": "claim", "foreign-jobs": "foreign"}
    hidden = {kinds[p.check] for p in rubric.penalties if p.hidden and p.check in kinds}
    visible = {kinds[p.check] for p in rubric.penalties if not p.hidden and p.check in kinds}
    if any(item.hidden and item.check == "claims-supported" for item in rubric.items):
        hidden.add("claim")
    return frozenset((hidden - visible) | {"copy"})  # a copy finding names another group: TA only


def visible_findings(grade: GroupGrade, rubric: Rubric) -> tuple[GradeFinding, ...]:
    hidden = _hidden_kinds(rubric)
    return tuple(f for f in grade.findings if f.kind not in hidden)


def grades_csv(grades: Sequence[GroupGrade], rubric: Rubric) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["group", *(i.id for i in rubric.items), *(f"-{p.id}" for p in rubric.penalties), "total",
                     "max", "sources", "needs_look", "flags"])
    for grade in grades:
        writer.writerow([
            grade.name,
            *(_num(s.points) for s in grade.items),
            *(_num(p.points) for p in grade.penalties),
            _num(grade.total()),
            _num(grade.max_total()),
            ";".join(s or "-" for s in grade.sources),
            "yes" if grade.needs_look else "no",
            ";".join(grade.flags),
        ])
    return buffer.getvalue()


def _distribution(totals: Sequence[float], maximum: float) -> list[str]:
    if not totals:
        return ["No groups graded. / 没有可评分的小组。"]
    lines = [
        f"- groups / 小组数: {len(totals)}",
        f"- mean / 平均: {statistics.mean(totals):.1f}; median / 中位数: {statistics.median(totals):.1f}; "
        f"min / 最低: {min(totals):g}; max / 最高: {max(totals):g}"
        + (f"; stdev / 标准差: {statistics.stdev(totals):.1f}" if len(totals) > 1 else ""),
        "",
        "| % of max / 得分率 | groups / 组数 | |",
        "| --- | ---: | --- |",
    ]
    counts = {label: 0 for _, label in BUCKETS}
    for total in totals:
        percent = 100 * total / maximum if maximum else 0
        label = next(label for low, label in BUCKETS if percent >= low)
        counts[label] += 1
    lines += [f"| {label} | {counts[label]} | {'█' * counts[label]} |" for _, label in BUCKETS]
    return lines


def grades_md(grades: Sequence[GroupGrade], rubric: Rubric, skipped: Sequence[Skipped] = ()) -> str:
    lines = [f"# {rubric.title.zh} / {rubric.title.en}", "", "## Grades / 成绩", ""]
    lines += ["| group / 小组 | total / 总分 | sources / 证据来源 | flags / 标记 |", "| --- | ---: | --- | --- |"]
    for grade in grades:
        sources = ", ".join(s or "-" for s in grade.sources)
        lines.append(f"| {_md(grade.name)} | {_num(grade.total())} / {_num(grade.max_total())} | {sources} | "
                     f"{_md(', '.join(grade.flags)) or '—'} |")
    hardware = [g for g in grades if g.hardware is not None]
    if hardware:
        lines += ["", "## Hardware / 硬件", ""]
        for grade in hardware:
            excuse = grade.hardware
            assert excuse is not None
            en, zh = (("not penalised (rubric rule)", "不扣分（评分规则）") if excuse.shown
                      else ("not confirmed: penalised, needs a look", "无法确认：扣分，需人工查看"))
            lines.append(f"- **{_md(grade.name)}**: {_md(excuse.en)}; {en} / {_md(excuse.zh)}；{zh}")
    lines += ["", "## Distribution / 分布", ""]
    lines += _distribution([g.total() for g in grades], rubric.max_points())
    look = [g for g in grades if g.needs_look]
    lines += ["", "## Needs a look / 需要人工查看", ""]
    if not look and not skipped:
        lines.append("None. / 无。")
    for grade in look:
        lines.append(f"- **{_md(grade.name)}**")
        lines += [f"  - {_md(reason)}" for reason in grade.needs_look[:10]]
        if len(grade.needs_look) > 10:
            lines.append(f"  - … {len(grade.needs_look) - 10} more (see grades.csv flags)")
    for entry in skipped:
        lines.append(f"- **{_md(entry.name)}** (not graded / 未评分): {_md(entry.reason)}")
    lines += _copies(grades)
    lines += _explanations(grades)
    return "\n".join(lines) + "\n"


def _copies(grades: Sequence[GroupGrade]) -> list[str]:
    """Each cluster of groups that share evidence, once, with what each group's copy is (TA only)."""
    clusters = copy_clusters(grades)
    lines = ["", "## Copies / 证据相同的小组", ""]
    if not clusters:
        return [*lines, "None. / 无。"]
    for number, cluster in enumerate(clusters, 1):
        lines.append(f"- **cluster {number} / 第 {number} 簇**: {_md(', '.join(cluster.groups))}")
        lines += [f"  - {_md(group)}: {_md(describe(cluster, group)[0])}" for group in cluster.groups]
    return lines


def _explanations(grades: Sequence[GroupGrade]) -> list[str]:
    """Each group's own explanations beside what the checker observed in its evidence (TA only); empty ones flagged."""
    lines = ["", "## Explanations / 小组的解释", ""]
    shown = [g for g in grades if g.explanations]
    if not shown:
        return [*lines, "None in the rubric's experiments. / 无。"]
    for grade in shown:
        empty = [e.experiment for e in grade.explanations if e.empty]
        flag = f" — **empty / 未填写: {_md(', '.join(empty))}**" if empty else ""
        lines += [f"### {_md(grade.name)}{flag}", "",
                  "| experiment / 实验 | observed / 证据显示 | explanation / 小组的解释 |", "| --- | --- | --- |"]
        for item in grade.explanations:
            words = _md(item.text) if item.text else "**(empty / 未填写)**"
            lines.append(f"| {_md(item.experiment)} | {_md(item.observed.zh)}<br>{_md(item.observed.en)} | {words} |")
        lines.append("")
    return lines


def _score_parts(grade: GroupGrade) -> list[str]:
    """How the score adds up, so that it equals grades.csv: the items and deductions below, the items and deductions
    the TA reviews (not itemised here), and the floor."""
    shown = sum(s.points for s in grade.items if not s.item.hidden)
    lost = sum(p.points for p in grade.penalties if not p.penalty.hidden)
    reviewed = sum(s.points for s in grade.items if s.item.hidden)
    reviewed_max = sum(s.item.points for s in grade.items if s.item.hidden)
    reviewed_lost = sum(p.points for p in grade.penalties if p.penalty.hidden)
    floor = grade.total() - (shown - lost + reviewed - reviewed_lost)
    zh = [f"下表各项 {_num(round(shown, 2))} 分", f"扣分 −{_num(round(lost, 2))}"]
    en = [f"the items below {_num(round(shown, 2))}", f"deductions below −{_num(round(lost, 2))}"]
    if reviewed_max or reviewed_lost:
        zh.append(f"助教复核的项目 {_num(round(reviewed, 2))} / {_num(reviewed_max)} 分（此处不逐项列出）")
        en.append(f"items the TA reviews {_num(round(reviewed, 2))} of {_num(reviewed_max)} (not itemised here)")
    if reviewed_lost:
        zh.append(f"助教复核的扣分 −{_num(round(reviewed_lost, 2))}")
        en.append(f"deductions the TA reviews −{_num(round(reviewed_lost, 2))}")
    if abs(floor) >= 0.005:
        zh.append(f"总分不低于 {_num(grade.floor)}：+{_num(round(floor, 2))}")
        en.append(f"the total never goes below {_num(grade.floor)}: +{_num(round(floor, 2))}")
    return [f"得分组成：{'；'.join(zh)}。 / Made up of: {'; '.join(en)}.", ""]


def _hardware_note(grade: GroupGrade) -> list[str]:
    """Why some runs are the simulator's on the manual's hardware, and what the rubric made of it."""
    excuse = grade.hardware
    if excuse is None:
        return []
    verdict = (("按评分规则不扣分：本组的硬件放不下实验的 HiveD 配置",
                "Not penalised, by the rubric's rule: the group's hardware cannot hold the lab's HiveD configs")
               if excuse.shown else
               ("环境记录没有显示这样的硬件，因此按模拟集群证据扣分，并请助教查看",
                "The environment records do not show such hardware, so the simulator evidence is penalised and a TA "
                "takes a look"))
    return [f"> {_md(excuse.zh)}。{verdict[0]}。<br>{_md(excuse.en)}. {verdict[1]}.", ""]


def feedback_md(grade: GroupGrade, rubric: Rubric) -> str:
    """A group's feedback in Chinese and English: each visible item with its points, why, and the evidence."""
    lines = [f"# {rubric.title.zh} — {_md(grade.name)}", f"# {rubric.title.en} — {_md(grade.name)}", "",
             f"**得分 / Score: {_num(grade.total())} / {_num(grade.max_total())}**", ""]
    lines += _score_parts(grade)
    if any(s == "sim" for s in grade.sources):
        lines += ["> 部分证据来自模拟集群，而不是真实集群。/ Some evidence comes from the simulated cluster, "
                  "not a real cluster.", ""]
    lines += _hardware_note(grade)
    lines += ["| 项目 / Item | 得分 / Points | 说明 / Why | 证据 / Evidence |", "| --- | ---: | --- | --- |"]
    for score in grade.items:
        if score.item.hidden:
            continue
        evidence = ", ".join(f"`{ref}`" for ref in score.evidence[:4]) or "—"
        lines.append(f"| {_md(score.item.title.zh)}<br>{_md(score.item.title.en)} | "
                     f"{_num(score.points)} / {_num(score.item.points)} | "
                     f"{_md(score.zh)}<br>{_md(score.en)} | {evidence} |")
    penalties = [p for p in grade.penalties if p.count and not p.penalty.hidden]
    if penalties:
        lines += ["", "## 扣分 / Deductions", ""]
        for penalty in penalties:
            evidence = ", ".join(f"`{ref}`" for ref in penalty.evidence[:MAX_REFS])
            if len(penalty.evidence) > MAX_REFS:
                evidence += f", … {len(penalty.evidence) - MAX_REFS} more / 另有 {len(penalty.evidence) - MAX_REFS} 个"
            lines.append(f"- −{_num(penalty.points)}: {_md(penalty.penalty.title.zh)} / {_md(penalty.penalty.title.en)}"
                         f" — {_md(penalty.zh)} / {_md(penalty.en)}" + (f" ({evidence})" if evidence else ""))
    right = [s for s in grade.items if not s.item.hidden and s.fraction >= 1]
    missing = [s for s in grade.items if not s.item.hidden and s.fraction < 1]
    lines += ["", "## 做得好的 / What was right", ""]
    lines += [f"- {_md(s.item.title.zh)} / {_md(s.item.title.en)}" for s in right] or ["- —"]
    lines += ["", "## 缺少或需要改进的 / What was missing", ""]
    lines += [f"- {_md(s.item.title.zh)}：{_md(s.zh)}<br>{_md(s.item.title.en)}: {_md(s.en)}"
              for s in missing] or ["- —"]
    if grade.ungraded:
        lines += ["", "## 不计分的对比运行 / Ungraded contrast runs", ""]
        lines += [f"- `{_md(run)}`" for run in grade.ungraded]
    findings = visible_findings(grade, rubric)
    if findings:
        lines += ["", "## 发现的问题 / Findings", ""]
        for finding in findings[:30]:
            where = f" (`{finding.where()}`)" if finding.where() else ""
            lines.append(f"- {_md(finding.zh)} / {_md(finding.en)}{where}")
    return "\n".join(lines) + "\n"


def results_json(grade: GroupGrade, rubric: Rubric) -> str:
    """Gradescope's autograder results: hidden items carry visibility "hidden"; deductions are negative tests."""
    tests = [
        {
            "name": f"{score.item.title.en} / {score.item.title.zh}",
            "score": score.points,
            "max_score": score.item.points,
            "output": f"{score.en}\n{score.zh}" + (f"\nEvidence / 证据: {', '.join(score.evidence[:6])}"
                                                   if score.evidence else ""),
            "visibility": "hidden" if score.item.hidden else "visible",
        }
        for score in grade.items
    ]
    tests += [
        {
            "name": f"Deduction: {p.penalty.title.en} / 扣分：{p.penalty.title.zh}",
            "score": -p.points,
            "max_score": 0,
            "output": f"{p.en}\n{p.zh}",
            "visibility": "hidden" if p.penalty.hidden else "visible",
        }
        for p in grade.penalties
        if p.count
    ]
    result = {
        "score": grade.total(),
        "output": f"Graded from the evidence by hivedlab; max {_num(grade.max_total())} points.\n"
                  f"由 hivedlab 根据证据评分；满分 {_num(grade.max_total())} 分。",
        "visibility": "visible",
        "tests": tests,
    }
    return json.dumps(result, ensure_ascii=False, indent=2) + "\n"
