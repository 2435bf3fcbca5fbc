"""The report's content as plain data: a pure function of the run's inputs, the language and where files are.

Every string a template prints comes out of here already escaped for Markdown (`md` and `cell` of
`src/hivedlab/checker/report/wording.py`); the templates hold only the manual's fixed wording and layout. `build_claims`
gives the same facts unescaped, for claims.json.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from hivedlab.basics.clock import date_time
from hivedlab.basics.text import Text, first_statement
from hivedlab.checker.judging.rules.rule_base import INCONCLUSIVE
from hivedlab.checker.judging.verdicts import VERDICT_LABEL, VERDICT_TEXT, combined_verdict
from hivedlab.checker.report.charts import TaskAttempt
from hivedlab.checker.report.environment import environment, hardware
from hivedlab.checker.report.faults import (
    CORDONED,
    cordon_claims,
    fault_claims,
    fault_lines,
    fault_row,
    touched_note,
)
from hivedlab.checker.report.inputs import ExperimentInputs, RunInputs, Said
from hivedlab.checker.report.timeline import Rejection
from hivedlab.checker.report.whose import first_turn, in_inventory, whose_phrase, whose_runs
from hivedlab.checker.report.wording import (
    EXPLANATION_PROMPT_OTHER,
    EXPLANATION_PROMPTS,
    cell,
    clock,
    in_lang,
    md,
    pick,
)
from hivedlab.evidence import parse_time
from hivedlab.rundir import CHART_PNG, EVIDENCE

Link = Callable[[str], str]  # run-dir-relative path -> href relative to the report

# ---------------------------------------------------------------- experiments


def experiment_name(exp: ExperimentInputs, lang: str) -> str:
    if exp.plan.row_name:
        return exp.plan.row_name.get(lang)
    title = exp.plan.title_zh if lang == "zh" else exp.plan.title_en
    return title or exp.plan.title_en or exp.plan.title_zh or exp.id


def run_verdict(exp: ExperimentInputs) -> str:
    """The verdict of one run (this object's own log)."""
    value = exp.verdict.get("verdict") if exp.verdict else None
    return value if value in VERDICT_LABEL else INCONCLUSIVE


def verdict_of(exp: ExperimentInputs) -> str:
    """The experiment's verdict: of its one run, or over every member's turn (`combined_verdict`)."""
    return combined_verdict(run_verdict(t) for t in exp.turns) if exp.turns else run_verdict(exp)


def _turn(turn: ExperimentInputs, names: Mapping[str, str], lang: str, link: Link, chart: str | None) -> dict[str, Any]:
    """One member's turn in an experiment's section: whose, its verdict, its first answer, its files."""
    verdict = run_verdict(turn)
    items = answers(turn, lang)
    files = [f"[{EVIDENCE}]({link(turn.evidence)})"] if turn.evidence else []
    if chart:
        files.append(f"[{CHART_PNG}]({chart})")
    known = [names.get(u, u) for u in turn.submitters if in_inventory(u, names)]
    member = names.get(turn.member, turn.member) if in_inventory(turn.member, names) else ""
    who = ", ".join(known) or member
    if not turn.member:  # beside the members' turns: the run made without --member (the first member's)
        who += "（未指定 --member 的运行）" if lang == "zh" else " (the run without --member)"
    return {
        "member": md(who),
        "verdict": verdict,
        "verdict_label": md(VERDICT_LABEL[verdict].get(lang)),
        "answer": md(next((item["summary"] for item in items if item["summary"]), "")),
        "reasons": [md(r) for r in inconclusive_reasons(turn, lang)] if verdict == "inconclusive" else [],
        "files": " ".join(files),
    }


def problem_line(problem: Said, lang: str) -> str:
    """A problem with the run directory as a note in the report's language: `注意：…` in Chinese only when it is
    said in Chinese (an English text, from an exception, keeps an English `Note:`)."""
    if isinstance(problem, Text) and lang == "zh":
        return "注意：" + md(problem.zh)
    return "Note: " + md(problem.en if isinstance(problem, Text) else problem)


def inconclusive_reasons(exp: ExperimentInputs, lang: str) -> list[str]:
    """Why an experiment could not be judged: the verdict's `missing` list, else the inputs' problems."""
    reasons = []
    if exp.verdict:
        for item in exp.verdict.get("missing") or []:
            reasons.append(pick(item, lang) if not isinstance(item, dict) or "zh" in item or "en" in item
                           else ", ".join(f"{k}: {v}" for k, v in item.items()))
    if not reasons:
        reasons = [p.get(lang) if isinstance(p, Text) else p for p in exp.problems]
    if not reasons:
        reasons = [in_lang(lang, "判定结果未说明原因", "the verdict gives no reason")]
    return reasons


def run_span(started: str, finished: str) -> dict[str, str]:
    """The header's `started – finished`: the end alone when it is the start's second ("运行于 00:22:52 – 00:22:52"
    said one instant twice), its clock time alone on the same day."""
    if finished == started:
        finished = ""
    elif finished[:11] == started[:11] and " " in finished:
        finished = finished.split(" ", 1)[1]
    return {"started": md(started), "finished": md(finished)}


def instant(text: str) -> str:
    """An RFC 3339 time from the run or the evidence as the report prints it: to the second, in UTC."""
    when = parse_time(text)
    return date_time(when) if when else text


def _zero_clock(started: str) -> str:
    """The experiment's first record time as `HH:MM:SS UTC` (the verdicts' answers use clock times)."""
    printed = instant(started)
    return printed.split(" ", 1)[1] if " " in printed else ""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _question_text(question: object, exp: ExperimentInputs, lang: str) -> str:
    questions = exp.plan.questions_zh if lang == "zh" else exp.plan.questions_en
    if isinstance(question, int) and not isinstance(question, bool) and 0 <= question < len(questions):
        return questions[question]
    return pick(question, lang)


def answers(exp: ExperimentInputs, lang: str) -> list[dict[str, Any]]:
    result = []
    for raw in (exp.verdict or {}).get("answers") or []:
        if not isinstance(raw, dict):
            continue
        evidence = [e for e in raw.get("evidence") or [] if _is_int(e)]
        verdict = raw.get("verdict") if raw.get("verdict") in VERDICT_LABEL else INCONCLUSIVE
        index = next((raw.get(k) for k in ("question_index", "question") if _is_int(raw.get(k))), None)
        answer = pick(raw.get("answer"), lang)
        result.append({
            "question_id": index,
            "question": _question_text(raw.get("question"), exp, lang),
            "answer": answer,
            "summary": pick(raw.get("summary"), lang) if raw.get("summary") else first_statement(answer, lang),
            "verdict": verdict,
            "expected": pick(raw.get("expected"), lang) if raw.get("expected") else "",
            "evidence": evidence,
            "missing": [pick(m, lang) for m in raw.get("missing") or [] if pick(m, lang)],
        })
    return result


def _node_text(a: TaskAttempt, lang: str) -> str:
    gpus = ",".join(str(g) for g in a.gpus)
    return f"{a.node}" + (f" (GPU {gpus})" if gpus else "")


_OUTCOMES = {
    "preempted": ("被抢占", "preempted"),
    "succeeded": ("成功", "succeeded"),
    "failed": ("失败", "failed"),
    "deleted": ("被删除", "deleted"),
    "job-completed": ("任务已完成，被停止", "stopped: the job had completed"),
    "stopped": ("被用户停止", "stopped by the user"),
    "running": ("运行中", "running"),
    "waiting": ("等待中", "waiting"),
    "bound": ("已绑定节点", "bound to a node"),
}


def _outcome(a: TaskAttempt, lang: str) -> str:
    outcome = "preempted" if a.preempted else a.outcome
    labels = _OUTCOMES.get(outcome)
    return (labels[0] if lang == "zh" else labels[1]) if labels else outcome


Since = Callable[[float | None], str]  # seconds after the log's first record -> the T+ time printed


def since_start(exp: ExperimentInputs) -> Since:
    """How the experiment's times print as T+: counted from the whole second of its first record (the T+0 the report
    names), so that a T+ time and the clock time of the same instant show the same second (`hivedlab.basics.clock`)."""
    into_second = exp.timeline.into_second
    return lambda seconds: clock(None if seconds is None else seconds + into_second)


def _rejection_row(r: Rejection, lang: str, since: Since) -> list[str]:
    status = f"HTTP {r.status}" if r.status is not None else ""
    how = in_lang(lang, f"{since(r.time)} 提交时被拒绝（{status or '无回复'}）",
             f"rejected at submission at {since(r.time)} ({status or 'no reply'})")
    return [cell(r.job), "—", "—", "—", "—", "—", "—", cell(how)]


def _attempt_rows(exp: ExperimentInputs, lang: str) -> list[list[str]]:
    since = since_start(exp)
    faults = exp.timeline.faults
    rows = []
    for a in exp.timeline.attempts:
        waited = "; ".join(f"{since(s)}–{since(e) if e is not None else '…'}" for s, e in a.waiting)
        fault = touched_note(faults, a.job, a.task, a.attempt, since, lang) if faults else ""
        rows.append([cell(a.job), cell(a.task), str(a.attempt + 1), cell(_node_text(a, lang) if a.node else "—"),
                     since(a.start) or "—", since(a.end) or ("…" if a.start is not None else "—"), cell(waited or "—"),
                     cell(_outcome(a, lang) + (in_lang(lang, "；", "; ") + fault if fault else ""))])
    return rows + [_rejection_row(r, lang, since) for r in exp.timeline.rejections] + \
        [fault_row(f, since, lang) for f in faults]


def experiment(exp: ExperimentInputs, number: int, lang: str, link: Link, chart: str | None,
               names: Mapping[str, str] | None = None, charts: Mapping[str, str] | None = None) -> dict[str, Any]:
    """An experiment's row and section; `names` maps users to the members' names, `charts` a turn's folder to its
    chart (each member's turn, when members took turns)."""
    names = names or {}
    verdict = verdict_of(exp)
    label = VERDICT_LABEL[verdict].get(lang)
    items = answers(exp, lang)
    questions = _by_question(items, lang)
    whose = whose_phrase(exp, names, lang)
    sentences = [f"**{md(label)}**" + (in_lang(lang, "", " ") + md(whose) if whose else "")]
    said = dict.fromkeys(item["summary"] for item in items if item["summary"])  # each sentence once
    if said:
        sentences.append(in_lang(lang, "", " ").join(md(summary) for summary in said))
    sentences += [md(in_lang(lang, "预期：", "Expected: ") + item["expected"]) for item in items
                  if item["expected"] and item["verdict"] == "inconsistent"]
    reasons = [reason for reason in inconclusive_reasons(exp, lang) if reason not in said]
    if verdict == "inconclusive" and reasons:
        sentences.append(md(in_lang(lang, "原因：", "Why: ") + "; ".join(reasons)))
    faults = [md(line) for line in fault_lines(exp.timeline.faults, names, since_start(exp), lang)]
    sentences += [in_lang(lang, "节点故障：", "Node fault: ") + line for line in faults]
    cordons = [md(line) for line in fault_lines(exp.timeline.faults, names, since_start(exp), lang, CORDONED)]
    sentences += [in_lang(lang, "节点封锁：", "Node cordoned: ") + line for line in cordons]
    if exp.timeline.source == "sim":
        sentences.append(md(in_lang(lang, "（证据来自模拟集群）", "(evidence from the simulated cluster)")))
    files = [f"[{md(path.rsplit('/', 1)[-1])}]({link(path)})" for path in exp.job_files]
    if exp.evidence:
        files.append(f"[{EVIDENCE}]({link(exp.evidence)})")
    if chart:
        files.append(f"[{CHART_PNG}]({chart})")
    return {
        "id": exp.id,
        "free_text_id": "observations-" + re.sub(r"[^A-Za-z0-9_.-]", "-", exp.id),  # a valid marker name
        "anchor": f"exp-{number}",
        "number": number,
        "name": cell(experiment_name(exp, lang)),
        "heading": md(experiment_name(exp, lang)),
        # the manual's own questions are trusted Markdown (they quote `default`); a plan's are escaped
        "question": exp.plan.row_question.get(lang) if exp.plan.row_question else md(" ".join(
            exp.plan.questions_zh if lang == "zh" else exp.plan.questions_en)),
        "verdict": verdict,
        "verdict_label": md(label),
        "phenomenon": "<br/>".join(sentences),
        "files": "<br/>".join(files) or md(in_lang(lang, "（无）", "(none)")),
        "questions": questions,
        "answers": [answer for group in questions for answer in group["answers"]],
        "zero": _zero_clock(exp.timeline.started),
        "reasons": [md(r) for r in inconclusive_reasons(exp, lang)] if verdict == "inconclusive" else [],
        "chart": chart,
        "attempts": _attempt_rows(exp, lang),
        "faults": faults,
        "cordons": cordons,
        "started": md(instant(exp.timeline.started)) if exp.timeline.started else "",
        "simulated": exp.timeline.source == "sim",
        "explanation_id": "explanation-" + re.sub(r"[^A-Za-z0-9_.-]", "-", exp.id),
        "explanation_prompt": in_lang(lang, *EXPLANATION_PROMPTS.get(exp.id, EXPLANATION_PROMPT_OTHER)),
        "problems": [problem_line(p, lang) for p in exp.problems],
        "whose": md(whose),
        # each member's turn (when members took turns); the fields above are then the first run's
        "turns": [_turn(t, names, lang, link, (charts or {}).get(t.folder)) for t in exp.turns],
        "first_turn": first_turn(exp, names, lang) if exp.turns else "",
        "optional": exp.plan.optional,
        "first_optional": False,  # set by build_context on the first optional experiment (its section's heading)
    }


def _lead(question: str, lang: str) -> str:
    """A question as the label of its answers: in italics, then a colon unless it already ends in punctuation."""
    if not question:
        return ""
    sep = " " if question[-1] in "？?）)：:。." else in_lang(lang, "：", ": ")
    return f"*{md(question)}*{sep}"


def _by_question(items: list[dict[str, Any]], lang: str) -> list[dict[str, Any]]:
    """The answers under their questions, each question once, in the order the verdict first answers it."""
    groups: dict[object, dict[str, Any]] = {}
    for item in items:
        key = item["question_id"] if item["question_id"] is not None else item["question"]
        group = groups.setdefault(key, {"lead": _lead(item["question"], lang), "answers": []})
        group["answers"].append({
            **item, "answer": md(item["answer"]), "missing": [md(m) for m in item["missing"]],
            "expected": md(item["expected"]),
            "verdict_label": md(VERDICT_LABEL[item["verdict"]].get(lang)),
        })
    return list(groups.values())


def member_names(inputs: RunInputs) -> dict[str, str]:
    """OpenPAI user -> the member's name (the inventory's), for sentences about whose runs."""
    return {m.user: m.name for m in inputs.members if m.user}


def build_context(inputs: RunInputs, lang: str, link: Link, charts: dict[str, str]) -> dict[str, Any]:
    """Everything the report template prints. `charts` maps experiment id (and each run's folder) -> PNG href."""
    main = [e for e in inputs.experiments if not e.plan.optional]
    extra = [e for e in inputs.experiments if e.plan.optional]
    names = member_names(inputs)
    experiments = [experiment(e, i + 1, lang, link, charts.get(e.id), names, charts) for i, e in enumerate(main)]
    optional = [{**experiment(e, len(main) + i + 1, lang, link, charts.get(e.id), names, charts),
                 "first_optional": i == 0} for i, e in enumerate(extra)]
    record = inputs.record
    return {
        "lang": lang,
        "inconclusive_word": VERDICT_TEXT[INCONCLUSIVE].get(lang),
        "rehearsal": inputs.rehearsal,
        "emulated_nodes": [md(n) for n in inputs.emulated_nodes],
        "group": md(record.group if record else ""),
        "version": md(record.hivedlab_version if record else ""),
        "cluster": inputs.cluster,
        "seed": md(str(record.seed) if record else ""),
        **run_span(instant(record.started if record else ""), instant(record.finished or "" if record else "")),
        "openpai_version": md(inputs.openpai_version),
        "hardware": hardware(inputs, lang),
        "env": environment(inputs, lang),
        "experiments": experiments,  # the manual's table: the main experiments
        "optional": optional,  # optional plans (e.g. reconfig): a section of their own after the main ones
        "smoke": experiment(inputs.smoke, 0, lang, link, None) if inputs.smoke else None,
        "inconclusive": [e for e in experiments + optional if e["verdict"] == "inconclusive"],
        "problems": [problem_line(p, lang) for p in inputs.problems],
    }


# ---------------------------------------------------------------- claims.json


def build_claims(inputs: RunInputs, lang: str, files: dict[str, dict[str, object]]) -> dict[str, Any]:
    """The report's claims, machine-readable (claims.json): per experiment the verdict and the key facts claimed."""
    experiments = []
    names = member_names(inputs)
    for exp in inputs.experiments:
        verdict = verdict_of(exp)
        faults, cordons = fault_claims(exp.timeline.faults), cordon_claims(exp.timeline.faults)
        experiments.append({
            "id": exp.id,
            "title": experiment_name(exp, lang),
            "verdict": verdict,
            "inconclusive_reasons": inconclusive_reasons(exp, lang) if verdict == "inconclusive" else [],
            # `question` as the verdict gives it (the plan's question index), its text beside it
            "answers": [{**{k: v for k, v in a.items() if k != "question_id"}, "question": a["question_id"],
                         "question_text": a["question"]} for a in answers(exp, lang)],
            "facts": [
                {
                    "job": a.job, "task": a.task, "attempt": a.attempt, "node": a.node, "gpus": list(a.gpus),
                    "bound_s": a.bound, "start_s": a.start, "end_s": a.end, "outcome": a.outcome,
                    "preempted": a.preempted,
                    "recreated": a.recreated, "waiting_s": [[s, e] for s, e in a.waiting],
                }
                for a in exp.timeline.attempts
            ],
            "rejections": [{"job": r.job, "time_s": r.time, "status": r.status, "message": r.message}
                           for r in exp.timeline.rejections],
            # each only when its log has one (a simulator's never has): claims.json otherwise as before
            **({"node_faults": faults} if faults else {}),
            **({"node_cordons": cordons} if cordons else {}),
            "evidence_source": exp.timeline.source or None,
            "started": exp.timeline.started or None,
            "files": files.get(exp.id, {}),
            "members": whose_runs(exp, names),  # whose runs the experiment covers
            # each member's turn, when members took turns (facts and answers above are the first one's)
            "turns": [{"member": names.get(t.member, t.member) if t.member else None,
                       "submitted_by": [names.get(u, u) for u in t.submitters], "verdict": run_verdict(t),
                       "evidence": t.evidence, "started": t.timeline.started or None} for t in exp.turns],
        })
    return {
        "format": "hivedlab-claims/1",
        "lang": lang,
        "cluster": inputs.cluster,
        "simulated": inputs.cluster == "sim",
        "rehearsal": inputs.rehearsal,
        "openpai_version": inputs.openpai_version or None,
        "run": {k: v for k, v in (inputs.record.to_json() if inputs.record else {}).items()
                if k in ("hivedlab_version", "seed", "started", "finished")},
        "experiments": experiments,
    }

