"""The report's claims against the re-judged verdicts: a claim the evidence does not support is a finding.

The claims block (`claims.json`, written by `hivedlab report`) holds, per experiment, the verdict the report states
and per question the answer's verdict. Only claims that say more than the evidence does are flagged: a report that
calls an experiment (or an answer) consistent when the re-judgement finds it inconsistent or inconclusive.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hivedlab.checker.grading.grade_findings import GradeFinding
from hivedlab.rundir import CLAIMS

RANK = {"consistent": 2, "inconclusive": 1, "inconsistent": 0}


@dataclass(frozen=True)
class Claim:
    experiment: str
    verdict: str | None
    answers: tuple[tuple[int, str], ...] = ()  # (position in the verdict's answers, verdict): the report lists
    # the verdict's answers in order (`hivedlab.checker.report.context`)
    facts: tuple[Mapping[str, Any], ...] = ()  # per task attempt: job, task, attempt, node, preempted…
    cited: tuple[int, ...] = ()  # the evidence records its answers and facts cite (seq numbers)


def question_index(answer: Mapping[str, Any], position: int) -> int:
    """The question an answer is about: `question_index` (verdict schema), an int `question`, else its position."""
    for key in ("question_index", "question"):
        value = answer.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return position


def _verdict(value: Any) -> str | None:
    return value if isinstance(value, str) and value in RANK else None


def _entries(block: Any) -> Iterable[tuple[str, Mapping[str, Any]]]:
    if isinstance(block, Mapping):
        experiments = block.get("experiments", block)
        if isinstance(experiments, Mapping):
            for key, value in experiments.items():
                if isinstance(value, Mapping):
                    yield str(value.get("experiment") or value.get("id") or key), value
            return
        block = experiments
    if isinstance(block, list):
        for value in block:
            if isinstance(value, Mapping) and isinstance(value.get("experiment") or value.get("id"), str):
                yield str(value.get("experiment") or value.get("id")), value


def parse_claims(block: Any) -> tuple[Claim, ...]:
    """Claims from a claims block: a mapping experiment -> claim, {"experiments": [...]} or a list; tolerant."""
    claims = []
    for experiment, entry in _entries(block):
        answers = []
        given_answers = entry.get("answers")
        raw_answers: list[Any] = given_answers if isinstance(given_answers, list) else []
        for index, answer in enumerate(raw_answers):
            if isinstance(answer, Mapping) and _verdict(answer.get("verdict")):
                answers.append((index, answer["verdict"]))
        facts = (tuple(f for f in entry.get("facts", []) if isinstance(f, Mapping))
                 if isinstance(entry.get("facts"), list) else ())
        cited = _seqs([a for a in raw_answers if isinstance(a, Mapping)])
        cited += tuple(f["seq"] for f in facts if isinstance(f.get("seq"), int) and not isinstance(f["seq"], bool))
        claims.append(Claim(experiment, _verdict(entry.get("verdict")), tuple(answers), facts,
                            tuple(sorted(set(cited)))))
    return tuple(claims)


def _seqs(answers: Iterable[Mapping[str, Any]]) -> tuple[int, ...]:
    found: list[int] = []
    for answer in answers:
        raw_evidence = answer.get("evidence")
        evidence: list[Any] = raw_evidence if isinstance(raw_evidence, list) else []
        found += [seq for seq in evidence if isinstance(seq, int)]
    return tuple(sorted(set(found)))


def compare_claim(claim: Claim, rejudged: Mapping[str, Any] | None, evidence_file: str,
                  where: str = CLAIMS) -> tuple[bool, tuple[GradeFinding, ...]]:
    """(supported, findings) for one experiment's claim; `rejudged` is the verdict result re-computed from the log."""
    if rejudged is None:
        if claim.verdict == "consistent":
            return False, (GradeFinding("claim", "claim-without-evidence",
                                   f"{where}: {claim.experiment} is claimed consistent but has no usable evidence",
                                   f"{where}：声称 {claim.experiment} 与 HiveD 行为一致，但没有可用的证据",
                                   evidence_file, None, claim.experiment),)
        return True, ()
    actual = _verdict(rejudged.get("verdict"))
    answers = [a for a in rejudged.get("answers", []) if isinstance(a, Mapping)]
    findings: list[GradeFinding] = []
    if claim.verdict == "consistent" and actual and actual != "consistent":
        bad = [a for a in answers if _verdict(a.get("verdict")) != "consistent"] or answers
        seqs = _seqs(bad)
        findings.append(GradeFinding(
            "claim", "claim-contradicted",
            f"{where}: {claim.experiment} is claimed {claim.verdict}, the evidence says {actual}"
            + (f" (records {', '.join(map(str, seqs[:8]))})" if seqs else ""),
            f"{where}：报告称 {claim.experiment} 为 {claim.verdict}，证据复核结果为 {actual}"
            + (f"（记录 {', '.join(map(str, seqs[:8]))}）" if seqs else ""),
            evidence_file, seqs[0] if seqs else None, claim.experiment))
    for position, verdict in claim.answers:
        match = answers[position] if position < len(answers) else None
        question = question_index(match, position) if match is not None else position
        actual_answer = _verdict(match.get("verdict")) if match else None
        if match is not None and verdict == "consistent" and actual_answer and actual_answer != "consistent" \
                and not findings:
            seqs = _seqs([match])
            findings.append(GradeFinding(
                "claim", "answer-contradicted",
                f"{where}: {claim.experiment} question {question + 1} is claimed {verdict}, the evidence says "
                f"{actual_answer}",
                f"{where}：{claim.experiment} 第 {question + 1} 问声称 {verdict}，证据复核为 {actual_answer}",
                evidence_file, seqs[0] if seqs else None, claim.experiment))
    return not findings, tuple(findings)
