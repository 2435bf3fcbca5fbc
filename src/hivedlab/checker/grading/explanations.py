"""The groups' own explanations (report.md's `explanation-<experiment>` free-text blocks) beside what the machine
observed in the same evidence, for the TA: the rubric's `explanation` check scores their length, grades.md shows them,
and `copies.flag_similar_explanations` compares them between groups."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hivedlab.basics.text import Text, first_statement
from hivedlab.checker.grading.submission import free_text


@dataclass(frozen=True)
class Explanation:
    experiment: str
    text: str  # the group's own words, markup and the template's placeholder removed ("" when left empty)
    observed: Text  # what the checker found in the group's evidence, one short sentence per answer

    @property
    def empty(self) -> bool:
        return not self.text


def length(text: str) -> int:
    """Characters of an explanation, spaces not counted (a Chinese and an English text compare fairly)."""
    return len(re.sub(r"\s", "", text))


def _observed(verdict: Mapping[str, Any] | None) -> Text:
    if not verdict:
        return Text("（没有可复核的证据）", "(no evidence to re-judge)")
    answers = [a for a in verdict.get("answers") or [] if isinstance(a, Mapping)]
    zh, en = [], []
    for answer in answers:
        summary, full = answer.get("summary"), answer.get("answer")
        if isinstance(summary, Mapping):
            zh.append(_sentence(str(summary.get("zh") or ""), "。"))
            en.append(_sentence(str(summary.get("en") or ""), "."))
        elif isinstance(full, Mapping):  # a verdict without summaries: each answer's first statement
            zh.append(_sentence(first_statement(str(full.get("zh") or ""), "zh"), "。"))
            en.append(_sentence(first_statement(str(full.get("en") or ""), "en"), "."))
    return Text("".join(zh) or "（没有回答）", " ".join(e for e in en if e) or "(no answer)")


def _sentence(text: str, stop: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in "。！？.!?" else text + stop


def explanations_of(report_md: str | None, verdicts: Mapping[str, Mapping[str, Any] | None],
                    experiments: tuple[str, ...]) -> tuple[Explanation, ...]:
    """Per experiment, the group's explanation and the machine's observation (`verdicts`: the re-judged verdicts)."""
    written = free_text(report_md or "", "explanation-")
    return tuple(Explanation(exp, written.get(exp, ""), _observed(verdicts.get(exp))) for exp in experiments)
