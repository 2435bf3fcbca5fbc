"""The report's section on runs without HiveD (`out/contrast/<id>@<scheduler>/`, docs/other-schedulers.md): per
run, the scheduler, each rule's answer (for a lab experiment: whether HiveD's guarantee held) with the records it
rests on, a timeline chart, and `kubectl get pod`-style tables at the telling moments. Ungraded: no claims."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hivedlab.basics.clock import elapsed, whole_seconds
from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import read_json, write_atomic
from hivedlab.checker.judging.timeline import WAIT_REASONS
from hivedlab.checker.judging.verdicts import HELD_TEXT, VERDICT_TEXT
from hivedlab.checker.report import charts as chart_module
from hivedlab.checker.report.timeline import timeline_for_chart
from hivedlab.checker.report.wording import clock
from hivedlab.evidence import parse_time
from hivedlab.plans.loader import load_plan
from hivedlab.rundir import CHART_PNG, CHART_SVG, RunDir, evidence_path, verdicts_path

SNAPSHOT_AFTER_WAIT_S = 20.0  # a table shows the pods this long after an episode's first FailedScheduling
EPISODE_GAP_S = 60.0
MAX_TABLES = 3
SCHEDULER_TEXT = {
    "default": ("Kubernetes 默认调度器（1.14/1.15）", "Kubernetes' default scheduler (1.14/1.15)"),
    "kube-batch": ("kube-batch（v0.4）", "kube-batch (v0.4)"),
    "volcano": ("Volcano", "Volcano"),
}
HEADINGS = {
    "zh": ("## 对比：不用 HiveD 的运行（不计分）",
           "以下运行由 HiveD 以外的调度器决定 Pod 的位置（模拟集群，或用 --cluster k8s 时的普通 Kubernetes 集群；"
           "docs/other-schedulers.md），不计入上面的五个实验和成绩。"
           "“一致”表示该调度器下出现了规则所述的行为；对实验手册的实验而言，即 HiveD 的保证在该调度器下仍然成立。"),
    "en": ("## Contrast: runs without HiveD (ungraded)",
           "These runs let another scheduler than HiveD place the pods (on the simulated cluster, or on a plain "
           "Kubernetes cluster with --cluster k8s; docs/other-schedulers.md); they "
           "are not among the five experiments above and not graded. \"consistent\" means the rule's behaviour showed "
           "under that scheduler; for the lab's experiments: HiveD's guarantee still held under it."),
}


@dataclass(frozen=True)
class PodRow:
    name: str
    status: str
    node: str
    since: float


def _records(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            break
    return rows


def _seconds(text: str) -> float:
    moment = parse_time(text)
    return moment.timestamp() if moment is not None else 0.0


def _pod_name(pod: dict[str, Any], jobs: dict[str, str]) -> str:
    labels = pod.get("metadata", {}).get("labels") or {}
    if "FC_FRAMEWORK_NAME" not in labels:  # a TFJob's pod on a plain Kubernetes cluster: its own name says it
        return str(pod.get("metadata", {}).get("name", "?"))
    job = jobs.get(labels.get("FC_FRAMEWORK_NAME", ""), labels.get("FC_FRAMEWORK_NAME", "?"))
    return f"{job}-{labels.get('FC_TASKROLE_NAME', '?')}-{labels.get('FC_TASK_INDEX', '?')}"


def _status(pod: dict[str, Any], watch: str) -> str:
    if watch == "DELETED":
        return ""
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return "Terminating"
    phase = pod.get("status", {}).get("phase", "Pending")
    return "Completed" if phase == "Succeeded" else "Error" if phase == "Failed" else phase


def snapshot(records: list[dict[str, Any]], at: float) -> list[PodRow]:
    """The pods as `kubectl get pod` would list them at `at` (seconds since the epoch)."""
    jobs = {r["action"]["framework_name"]: r["action"]["job_name"] for r in records
            if r.get("kind") == "action" and r["action"].get("type") == "submit"}
    pods: dict[str, PodRow] = {}
    for record in records:
        if _seconds(record.get("time", "")) > at:
            break
        watch = record.get("watch") or {}
        if record.get("kind") != "object" or watch.get("resource") != "pods":
            continue
        pod = watch["object"]
        name = _pod_name(pod, jobs)
        status = _status(pod, watch.get("type", ""))
        if not status:
            pods.pop(name, None)
            continue
        created = _seconds(pod.get("metadata", {}).get("creationTimestamp", ""))
        pods[name] = PodRow(name, status, pod.get("spec", {}).get("nodeName") or "<none>", created)
    return sorted(pods.values(), key=lambda row: row.name)


def moments(records: list[dict[str, Any]]) -> list[float]:
    """When to look: shortly after a pod first waits, once per episode of waiting (a wait more than
    `EPISODE_GAP_S` after the previous episode began starts a new one), at most `MAX_TABLES`."""
    found: list[float] = []
    for record in records:
        watch = record.get("watch") or {}
        if (record.get("kind") == "object" and watch.get("resource") == "events" and watch.get("type") == "ADDED"
                and watch["object"].get("reason") in WAIT_REASONS
                and (watch["object"].get("involvedObject") or {}).get("kind", "Pod") == "Pod"):  # not a PodGroup's
            at = _seconds(record["time"])
            if not found or at - (found[-1] - SNAPSHOT_AFTER_WAIT_S) > EPISODE_GAP_S:
                found.append(at + SNAPSHOT_AFTER_WAIT_S)
    return found[:MAX_TABLES]


def pod_table(rows: list[PodRow], at: float) -> str:
    """kubectl's layout: each column as wide as its widest cell plus 3 spaces (its tabwriter's padding), so a long
    node name never runs into AGE."""
    if not rows:
        return "No resources found."
    table = [("NAME", "READY", "STATUS", "NODE", "AGE")]
    table += [(row.name, "1/1" if row.status == "Running" else "0/1", row.status, row.node,
               f"{elapsed(row.since, at)}s") for row in rows]
    widths = [max(len(line[i]) for line in table) + 3 for i in range(4)]
    return "\n".join("".join(f"{cell:<{w}}" for cell, w in zip(line[:4], widths, strict=True)) + line[4]
                     for line in table)


def _cell(text: Any, lang: str) -> str:
    return (text or {}).get(lang, "").replace("|", "\\|") if isinstance(text, dict) else ""


def _verdict(verdict: Any, lang: str) -> str:
    word = VERDICT_TEXT.get(str(verdict))
    return word.get(lang) if word else str(verdict)


def _seqs(answer: dict[str, Any]) -> str:
    return ", ".join(str(s) for s in answer.get("evidence", [])[:12]) or "-"


def _lab_experiment(experiment: str) -> bool:
    """One of the lab's own experiments (its rules state HiveD's guarantees), not a contrast-only plan."""
    try:
        return "hived" in load_plan(experiment).schedulers
    except HivedlabError:
        return False


def _guarantees(answers: list[dict[str, Any]], lang: str) -> list[str]:
    """Each of HiveD's guarantees the experiment tests (its rules' `expected`), and whether it held here."""
    zh = lang == "zh"
    held = sum(1 for a in answers if a.get("verdict") == "consistent")
    lines = [f"- HiveD 的保证在此成立：{held}/{len(answers)}" if zh else
             f"- HiveD's guarantees that held here: {held}/{len(answers)}", ""]
    lines += ["| HiveD 的保证 | 成立？ | 实际发生 | 证据（记录序号） |" if zh else
              "| HiveD's guarantee | held? | what happened | evidence (record seq) |", "| --- | --- | --- | --- |"]
    for answer in answers:
        word = HELD_TEXT.get(str(answer.get("verdict", "")))
        mark = word.get(lang) if word else "?"
        lines.append(f"| {_cell(answer.get('expected'), lang)} | {mark} | {_cell(answer.get('answer'), lang)} | "
                     f"{_seqs(answer)} |")
    return lines


def _chart(folder: Path, out_dir: Path, lang: str) -> tuple[str, list[Path]]:
    """Draw a run's timeline under the report's contrast/<run>/; returns its Markdown image ("" without pods)."""
    log = evidence_path(folder)
    timeline = timeline_for_chart(log) if log.is_file() else None
    if timeline is None or not timeline.attempts:
        return "", []
    run_id = folder.name
    # these schedulers know nodes, not HiveD's VCs: the lanes are the nodes in name order, with no VC bands
    data = chart_module.chart_data(run_id, timeline.attempts, tuple(sorted(timeline.nodes)), {}, timeline.end or None,
                                   timeline.switches, timeline.rejections, timeline.into_second)
    png, svg = chart_module.draw(data, lang, salt=run_id)
    folder_out = RunDir(out_dir).run_folder(run_id, contrast=True)
    png_path, svg_path = folder_out / CHART_PNG, folder_out / CHART_SVG
    write_atomic(png_path, png)
    write_atomic(svg_path, svg)
    return f"![{run_id}]({png_path.relative_to(out_dir).as_posix()})", [png_path, svg_path]


def _run_section(folder: Path, lang: str) -> list[str]:
    zh = lang == "zh"
    run_id = folder.name
    experiment, _, scheduler = run_id.partition("@")
    lines = [f"#### {run_id}", ""]
    names = SCHEDULER_TEXT.get(scheduler, (scheduler, scheduler))
    lines.append(f"- 调度器：{names[0]}" if zh else f"- Scheduler: {names[1]}")
    try:
        verdict = read_json(verdicts_path(folder))
    except HivedlabError as exc:
        return [*lines, "", f"- {exc}", ""]
    answers = verdict.get("answers") or []
    if _lab_experiment(experiment):
        lines += _guarantees(answers, lang)
    else:
        lines += [f"- 判定：{_verdict(verdict.get('verdict'), lang)}" if zh else
                  f"- Verdict: {_verdict(verdict.get('verdict'), lang)}", ""]
        lines += ["| 规则 | 结论 | 回答 | 证据（记录序号） |" if zh else
                  "| rule | verdict | answer | evidence (record seq) |",
                  "| --- | --- | --- | --- |"]
        lines += [f"| {a.get('rule')} | {_verdict(a.get('verdict'), lang)} | "
                  f"{_cell(a.get('answer'), lang)} | {_seqs(a)} |"
                  for a in answers]
    lines.append("")
    log = evidence_path(folder)
    records = _records(log) if log.is_file() else []
    zero = whole_seconds(_seconds(records[0]["time"])) if records else 0
    for at in moments(records):
        lines += [f"`kubectl get pod` ({'' if zh else 'at '}{clock(at - zero)}):", "", "```",
                  pod_table(snapshot(records, at), at), "```", ""]
    return lines


def _side_by_side(runs: list[Path], out_dir: Path, lang: str) -> tuple[list[str], list[Path]]:
    """The runs' charts in one table row, one column per scheduler."""
    images, files = [], []
    for run in runs:
        image, drawn = _chart(run, out_dir, lang)
        images.append(image or "—")
        files += drawn
    if not files:
        return [], []
    header = " | ".join(run.name.partition("@")[2] for run in runs)
    return [f"| {header} |", "|" + " --- |" * len(runs), f"| {' | '.join(images)} |", ""], files


def contrast_section(run_dir: Path, out_dir: Path, lang: str) -> tuple[str, tuple[Path, ...]]:
    """The Markdown section (empty without contrast runs) and the chart files it wrote: per experiment, its runs'
    charts side by side, then each run's answers and pod tables."""
    folder = RunDir(run_dir).home(contrast=True)
    runs = sorted(p for p in folder.iterdir() if p.is_dir() and "@" in p.name) if folder.is_dir() else []
    if not runs:
        return "", ()
    heading, intro = HEADINGS[lang]
    lines = [heading, "", intro, ""]
    files: list[Path] = []
    for experiment in dict.fromkeys(run.name.partition("@")[0] for run in runs):
        group = [run for run in runs if run.name.partition("@")[0] == experiment]
        charts, drawn = _side_by_side(group, out_dir, lang)
        lines += [f"### {experiment}", "", *charts]
        files += drawn
        for run in group:
            lines += _run_section(run, lang)
    return "\n".join(lines).rstrip() + "\n", tuple(files)
