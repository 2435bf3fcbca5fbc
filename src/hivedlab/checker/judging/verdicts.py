"""Verdicts: judge one experiment's evidence log against HiveD v0.3.4's behaviour, rule by rule.

The rules are data in the experiment's plan (`labs/experiments/<id>.yaml`, `rules:`); each names a `kind`
implemented in `src/hivedlab/checker/judging/rules/` (one pure function per kind; its docstring says what it
checks); each kind, its parameters in parentheses, and when it is consistent:

- placement (jobs, vc): every bound task attempt of the jobs is in `vc`'s cells (docs/checker.md#cells-not-machines)
- waits-while-idle (jobs, reason, idle_vc): jobs that waited did so for `reason` (naming `idle_vc`'s idle cells), and
  were never placed outside their own VC's cells
- sequential (jobs): the jobs ran one after another, in submission order (ties within 1 s not judged)
- preempts (preemptor, victim): the victim was preempted after the preemptor's submission and the preemptor did not
  wait for it; or the preemptor ran, preempting nothing, on its VC's cells that were free at its submission
- retried-after (victim, after, reason?, preemptor?): the victim was re-created (same pod name, new uid), waited, ran
  after `after` ended (or at once on a cell no pod held), finished; given `preemptor`, a victim it spared (see
  `preempts`) ran on to its end
- starts-while-running (job, while, outside_vc?): `job` started while `while` still ran (and off the cells
  `outside_vc` owns outright)
- gang-waits (job, while, reason?): no task of `job` was bound while `while` ran; its tasks waited
- gang-together (job, tolerance_s {sim, k8s}): all tasks bound in one round, containers started within the tolerance
  (sim 0 s, k8s 30 s)
- incremental (job, while, reason?): a task started while `while` ran; the others waited and ran later, or never
  (job succeeded)
- partial-run (job, max_parallel): accepted; some tasks ran while others waited; never more than `max_parallel` at
  once
- rejected (job, status, message): the submission got HTTP `status` with `message` and no pod appeared
- survives-switch (jobs, config): every task running at the switch to `config` still ran at the next submission (or
  ended by itself)
- preempts-one-of (preemptor, jobs): `preempts` with any one of `jobs` as the victim (whichever HiveD picked)
- submission-after-switch (job, vc, config): submitted to the removed `vc` after the switch; accepted and never
  scheduled while a job of `vc` ran at the switch, else refused with HTTP 403
- stranded-after-switch (job, vc, config): the job of the removed `vc` was preempted after the switch and never bound
  again
- gpu-exclusive (every experiment, not in plans): no two pods held the same leaf cell at once
  (`rules/exclusivity.py`); an answer only when violated
- gang-start (job, expect, while): `partial`: some task of `job` held a node while another waited; `all-or-nothing`:
  every task bound in one round, none before; given `while`, inconclusive unless `job` had pods beside that job
  while it held all its nodes
- deadlock (jobs, expect): `true`: the jobs each held nodes while other tasks of theirs waited, until stopped;
  `false`: they all finished

A rule with `scheduler:` (one, or a list) judges only runs under that scheduler (the plan record's `scheduler`,
docs/other-schedulers.md); a run without HiveD is judged without the rules' `reason` (HiveD's own wait wording).

Every rule answers `consistent`, `inconsistent` (the answer says what happened, `expected` what HiveD does) or
`inconclusive` (`missing` says what evidence is lacking). An experiment is inconsistent if any answer is,
else inconclusive if any answer is, else consistent. A broken chain, a log holding several experiments, or pods on
nodes outside the log's HiveD config turn every answer inconclusive: such a log proves nothing.
Exit status of `hivedlab check`: `hivedlab.basics.errors.EXIT_TABLE` (0 all consistent, 1 any inconsistent,
3 inconclusive with nothing inconsistent, 2 unreadable log).

Internal to judging: outside code judges through `hivedlab.checker.judging.judge` (a file or a log already read),
which folds the log into a timeline and calls `judge_timeline`; what it prints of a verdict (`to_json`,
`render_json`, `render_text`) and the verdict vocabulary (`VERDICT_TEXT`, ...) are this module's to share.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from hivedlab.basics.errors import EXIT_FINDINGS, EXIT_INCONCLUSIVE, EXIT_OK
from hivedlab.basics.text import Text, english, pad
from hivedlab.checker.judging.rules import contrast, exclusivity, gang, incremental, no_wait, preemption, reconfig, vc
from hivedlab.checker.judging.rules.rule_base import (
    CONSISTENT,
    INCONCLUSIVE,
    INCONSISTENT,
    SPEAKERS,
    Context,
    Outcome,
    RuleCheck,
)
from hivedlab.checker.judging.timeline import Timeline
from hivedlab.plans.loader import RuleSet
from hivedlab.plans.rule_params import NoParams, Rule

# kind -> its rule; each takes the kind's parameters (`hivedlab.plans.rule_params.PARAMS`)
RULE_KINDS: dict[str, RuleCheck] = {**vc.RULES, **preemption.RULES, **no_wait.RULES, **gang.RULES, **incremental.RULES,
                                   **reconfig.RULES, **contrast.RULES}
VERDICTS = (CONSISTENT, INCONSISTENT, INCONCLUSIVE)
# The one vocabulary of verdicts, everywhere a verdict is printed: the word, the report's label, and the contrast
# table's "does HiveD's guarantee still hold?"
VERDICT_TEXT = {CONSISTENT: Text("一致", "consistent"), INCONSISTENT: Text("不一致", "inconsistent"),
                INCONCLUSIVE: Text("无法判断", "inconclusive")}
VERDICT_LABEL = {CONSISTENT: Text("与 HiveD 的行为一致", "consistent with HiveD's behaviour"),
                 INCONSISTENT: Text("与 HiveD 的行为不一致", "inconsistent with HiveD's behaviour"),
                 INCONCLUSIVE: VERDICT_TEXT[INCONCLUSIVE]}
HELD_TEXT = {CONSISTENT: Text("是", "yes"), INCONSISTENT: Text("否", "no"),
             INCONCLUSIVE: Text("无法判断", "cannot tell")}


@dataclass(frozen=True)
class Answer:
    rule: str
    kind: str
    question_index: int
    question: Text
    verdict: str
    answer: Text
    evidence: tuple[int, ...]
    expected: Text | None
    missing: tuple[Text, ...]
    facts: dict[str, Any] = field(default_factory=dict)
    summary: Text | None = None  # the answer in one short sentence (the report's results table)


@dataclass(frozen=True)
class LogSummary:
    path: str
    records: int
    chain_ok: bool
    first_broken_seq: int | None
    said: tuple[Text, ...]  # the reader's warnings about the log, each in both languages (`hivedlab.evidence`)
    source: str | None
    end_status: str | None
    sources: tuple[str, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        """The warnings in English, as verdicts.json holds them."""
        return english(self.said)


@dataclass(frozen=True)
class ExperimentVerdict:
    experiment: str
    title: Text
    verdict: str
    answers: tuple[Answer, ...]
    missing: tuple[Text, ...]
    log: LogSummary
    timeline: Timeline

    @property
    def exit_code(self) -> int:
        """`hivedlab.basics.errors.EXIT_TABLE`: 0 consistent, 1 inconsistent, 3 inconclusive."""
        return {CONSISTENT: EXIT_OK, INCONSISTENT: EXIT_FINDINGS}.get(self.verdict, EXIT_INCONCLUSIVE)


# applied to every experiment; an answer only when it finds two pods on one GPU (docs/checker.md)
_EXCLUSIVITY_RULE = Rule("gpu-exclusive", "gpu-exclusive", 0, exclusivity.EXPECTED, NoParams(),
                         question_text=exclusivity.QUESTION)


def _blockers(timeline: Timeline, log: LogSummary) -> list[Text]:
    found = []
    if not log.chain_ok:
        at = f" at record {log.first_broken_seq}" if log.first_broken_seq is not None else ""
        at_zh = f"（第 {log.first_broken_seq} 条记录）" if log.first_broken_seq is not None else ""
        found.append(Text(f"哈希链断裂{at_zh}：日志被修改、重排或截断",
                          f"the hash chain is broken{at}: the log was edited, reordered or truncated"))
    if len(log.sources) > 1:
        names = ", ".join(log.sources)
        found.append(Text(f"日志混合了不同来源的记录（{names}）",
                          f"the log mixes records of different sources ({names})"))
    if len(timeline.experiments_seen) > 1:
        names = ", ".join(timeline.experiments_seen)
        found.append(Text(f"日志混合了多个实验的运行（{names}）",
                          f"the log mixes runs of several experiments ({names})"))
    known = {node for nodes in timeline.vc_nodes.values() for node in nodes}
    strangers = [n for n in timeline.nodes_seen if known and n not in known]
    if strangers:
        names = ", ".join(strangers)
        found.append(Text(f"Pod 运行在 HiveD 配置之外的机器上（{names}）：日志来自另一个集群或混合了多个集群",
                          f"pods ran on machines outside the HiveD config ({names}): the log is from another cluster "
                          "or mixes clusters"))
    return found


def judge_timeline(timeline: Timeline, rules: RuleSet, log: LogSummary) -> ExperimentVerdict:
    """Apply a plan's rules to a timeline (pure). Internal to judging: outside code judges a log through
    `hivedlab.checker.judging.judge`, which builds the timeline and calls this."""
    ctx = Context(timeline, timeline.source or "k8s", run_finished=timeline.end_status == "finished")
    blockers = _blockers(timeline, log)
    exclusive = exclusivity.gpu_exclusive(timeline)
    every = (*rules.rules, *([_EXCLUSIVITY_RULE] if exclusive.verdict != CONSISTENT else []))
    answers = [_answer(ctx, rule, rules.questions, exclusive, blockers) for rule in every
               if rule.judges(timeline.scheduler)]  # a rule about another scheduler's run (docs/other-schedulers.md)
    cut = _cut_short(timeline)
    if cut is not None:
        answers = [_judged_before(answer, cut) for answer in answers]
    verdicts = {a.verdict for a in answers}
    overall = INCONSISTENT if INCONSISTENT in verdicts else INCONCLUSIVE if INCONCLUSIVE in verdicts or not answers \
        else CONSISTENT
    seen: dict[str, Text] = {}
    for answer in answers:
        for item in answer.missing:
            seen.setdefault(item.en, item)
    if timeline.end_status not in (None, "finished") and overall != CONSISTENT and cut is None:
        why = f": {timeline.end_reason}" if timeline.end_reason else ""
        seen.setdefault("end", Text(f"实验没有运行完（{timeline.end_status}{why}）",
                                    f"the run did not finish ({timeline.end_status}{why})"))
    return ExperimentVerdict(rules.experiment, rules.title, overall, tuple(answers), tuple(seen.values()), log,
                             timeline)


def _cut_short(timeline: Timeline) -> Text | None:
    """Why the run could not show what its plan asked, when the user or the rest-server cut it short: its end
    record's sentence (`hivedlab.rundir.RunOutcome`: `stopped` by the user, or `refused`)."""
    if timeline.end_status not in ("stopped", "refused") or not timeline.end_reason:
        return None
    return Text(timeline.end_reason_zh or timeline.end_reason, timeline.end_reason)


def _judged_before(answer: Answer, cut: Text) -> Answer:
    """An answer whose evidence was complete before the run was cut short stands; the others are inconclusive
    because of the cut, said in its one sentence, never inconsistent."""
    if answer.verdict == CONSISTENT:
        return answer
    return replace(answer, verdict=INCONCLUSIVE, answer=cut, summary=cut, missing=(cut,))


def _answer(ctx: Context, rule: Rule, questions: tuple[Text, ...], exclusive: Outcome,
            blockers: list[Text]) -> Answer:
    """One rule's answer; every answer inconclusive when the log proves nothing (`blockers`)."""
    if ctx.timeline.scheduler != "hived":
        rule = rule.without_reason()  # HiveD's wait wording is no guarantee
    outcome = exclusive if rule.kind == _EXCLUSIVITY_RULE.kind else RULE_KINDS[rule.kind](ctx, rule.params)
    if blockers:
        reason = Text("；".join(b.zh for b in blockers), "; ".join(b.en for b in blockers))
        outcome = replace(outcome, verdict=INCONCLUSIVE, missing=(*outcome.missing, *blockers), summary=None,
                          answer=Text(f"（{reason.zh}，不能作为证据）", f"({reason.en}; not evidence)")
                          + outcome.answer)
    question = rule.question_text or (questions[rule.question] if rule.question < len(questions) else Text("", ""))
    return Answer(rule=rule.id, kind=rule.kind, question_index=rule.question, question=question,
                  verdict=outcome.verdict, answer=outcome.answer, evidence=outcome.evidence, expected=rule.expected,
                  missing=outcome.missing, facts=outcome.facts, summary=outcome.summary)


# -- output ---------------------------------------------------------------------------------------------
def to_json(result: ExperimentVerdict) -> dict[str, Any]:
    """The verdict in `configs/schemas/verdict.schema.json`."""
    answers = []
    for a in result.answers:
        item: dict[str, Any] = {
            "rule": a.rule, "kind": a.kind, "question_index": a.question_index, "question": a.question.as_dict(),
            "answer": a.answer.as_dict(), "verdict": a.verdict, "evidence": list(a.evidence),
        }
        if a.expected is not None:
            item["expected"] = a.expected.as_dict()
        if a.missing:
            item["missing"] = [m.as_dict() for m in a.missing]
        if a.facts:
            item["facts"] = a.facts
        if a.summary is not None:
            item["summary"] = a.summary.as_dict()
        answers.append(item)
    log = result.log
    return {
        "experiment": result.experiment,
        "title": result.title.as_dict(),
        "verdict": result.verdict,
        "answers": answers,
        "missing": [m.as_dict() for m in result.missing],
        "log": {"path": log.path, "records": log.records, "chain_ok": log.chain_ok,
                "first_broken_seq": log.first_broken_seq, "warnings": list(log.warnings), "source": log.source,
                "end": log.end_status},
    }


def render_json(results: list[ExperimentVerdict]) -> str:
    data: Any = to_json(results[0]) if len(results) == 1 else [to_json(r) for r in results]
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def render_text(result: ExperimentVerdict, lang: str = "zh") -> str:
    """A readable report: a summary table of the rules, then each answer in full."""
    zh = lang == "zh"
    log = result.log
    chain = ("哈希链完整" if log.chain_ok else f"哈希链断裂于第 {log.first_broken_seq} 条") if zh else (
        "chain intact" if log.chain_ok else f"chain broken at record {log.first_broken_seq}")
    lines = [
        f"{result.experiment} — {result.title.get(lang)}: {VERDICT_TEXT[result.verdict].get(lang)}",
        (f"日志 {log.path}：{log.records} 条记录，{chain}，"
         f"来源 {log.source}，结束 {log.end_status or '无记录'}" if zh else
         f"log {log.path}: {log.records} records, {chain}, "
         f"source {log.source}, end {log.end_status or 'not recorded'}"),
    ]
    if result.timeline.sessions > 1:  # a resumed run (docs/evidence.md)
        lines.append(f"  {result.timeline.sessions} 个运行会话（续跑追加）" if zh else
                     f"  {result.timeline.sessions} sessions (a resumed run appended to the log)")
    lines += [f"  ! {w.get(lang)}" for w in log.said[:5]]
    if len(log.said) > 5:
        more = len(log.said) - 5
        lines.append(f"  ! … 另有 {more} 条警告" if zh else f"  ! … {more} more")
    rule_width = max([len(a.rule) for a in result.answers] + [4])
    header = ("问题", "规则", "结论", "证据（记录序号）") if zh else ("Q", "rule", "verdict", "evidence (record seq)")
    lines += ["", f"  {pad(header[0], 4)} {pad(header[1], rule_width)}  {pad(header[2], 14)} {header[3]}"]
    for a in result.answers:
        evidence = ",".join(str(s) for s in a.evidence[:12]) + ("…" if len(a.evidence) > 12 else "")
        lines.append(f"  {a.question_index + 1:<4} {a.rule:<{rule_width}}  "
                     f"{pad(VERDICT_TEXT[a.verdict].get(lang), 14)} {evidence or '-'}")
    for a in result.answers:
        lines += ["", f"[{VERDICT_TEXT[a.verdict].get(lang)}] {'问题' if zh else 'Q'}{a.question_index + 1}: "
                  f"{a.question.get(lang)}", f"  {a.answer.get(lang)}"]
        if a.verdict != CONSISTENT and a.expected is not None:
            lines.append(f"  {_expected_label(result.timeline.scheduler, zh)}: {a.expected.get(lang)}")
    if result.missing:
        lines += ["", "缺少的证据：" if zh else "Missing evidence:"] + [f"  - {m.get(lang)}" for m in result.missing]
    return "\n".join(lines) + "\n"


def _expected_label(scheduler: str, zh: bool) -> str:
    """Whose behaviour a rule's `expected` describes: HiveD's, or the contrast run's scheduler's."""
    if scheduler in ("", "hived"):
        return "HiveD 的行为" if zh else "HiveD would"
    name = SPEAKERS.get(scheduler, Text(scheduler, scheduler))
    return f"预期（{name.zh}）" if zh else f"what {name.en} would do"


def combined_verdict(verdicts: Iterable[str]) -> str:
    """One verdict for several runs of an experiment (each member's turn, docs/evidence.md): inconsistent when any
    run is, consistent when every run is (and there is one), else inconclusive."""
    found = list(verdicts)
    if INCONSISTENT in found:
        return INCONSISTENT
    return CONSISTENT if found and all(v == CONSISTENT for v in found) else INCONCLUSIVE
