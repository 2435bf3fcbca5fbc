"""Copies between groups: the one comparison across a batch.

Real-cluster evidence is unique to the run that recorded it: each log's final hash fingerprints the whole log, and
Kubernetes' pod uids and the runtime's container ids never repeat. Two groups sharing any of them share evidence.
A simulator run is deterministic, so two groups with the same inputs (inventory and seed) have the same run; for
simulator evidence the inputs are compared instead. Each pair is flagged for a look in `grades.md`, naming both
groups; students never see the other group's name (the finding kind `copy` is TA-only).

The groups' own explanations are compared too: two explanations of one experiment that are nearly the same text
(`SIMILAR` or more of difflib's ratio, once spaces and punctuation are set aside) are flagged the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from difflib import SequenceMatcher

from hivedlab.checker.grading.grade_findings import GradeFinding
from hivedlab.checker.grading.scoring import GroupGrade
from hivedlab.rundir import REPORT_MD

SIMILAR = 0.9  # difflib ratio from which two explanations count as copies of each other
MIN_COMPARED = 20  # characters: shorter explanations ("同上", "see above") are too short to call copies
_NOISE = re.compile(r"[\s\W_]+")

_KINDS = {
    "log": ("identical log(s) (same final hash)", "份完全相同的日志（最后的哈希相同）"),
    "uid": ("shared pod/job uid(s)", "个相同的 Pod/任务 uid"),
    "container": ("shared container id(s)", "个相同的容器 ID"),
    "inputs": ("the same simulator inputs (inventory and seed)", "相同的模拟输入（清单和种子）"),
}


def _pairs(identities: Mapping[str, frozenset[tuple[str, str]]]) -> dict[tuple[str, str], dict[str, int]]:
    """(group a, group b) -> {kind: how many values they share}, a < b."""
    owners: dict[tuple[str, str], list[str]] = {}
    for group, identity in identities.items():
        for key in identity:
            owners.setdefault(key, []).append(group)
    shared: dict[tuple[str, str], dict[str, int]] = {}
    for (kind, _), groups in owners.items():
        unique = sorted(set(groups))
        for index, first in enumerate(unique):
            for second in unique[index + 1:]:
                counts = shared.setdefault((first, second), {})
                counts[kind] = counts.get(kind, 0) + 1
    return shared


def _finding(other: str, counts: Mapping[str, int]) -> GradeFinding:
    parts_en = [f"{n} {_KINDS[k][0]}" if k != "inputs" else _KINDS[k][0] for k, n in sorted(counts.items())]
    parts_zh = [f"{n} {_KINDS[k][1]}" if k != "inputs" else _KINDS[k][1] for k, n in sorted(counts.items())]
    return GradeFinding("copy", "copied-evidence", f"evidence shared with group {other}: {', '.join(parts_en)}",
                   f"与小组 {other} 的证据相同或重叠：{'，'.join(parts_zh)}")


def flag_copies(grades: Iterable[GroupGrade], identities: Mapping[str, frozenset[tuple[str, str]]]) -> list[GroupGrade]:
    """Each grade with a `copy` finding per other group it shares evidence (or simulator inputs) with."""
    extra: dict[str, list[GradeFinding]] = {}
    for (first, second), counts in sorted(_pairs(identities).items()):
        extra.setdefault(first, []).append(_finding(second, counts))
        extra.setdefault(second, []).append(_finding(first, counts))
    return [replace(g, findings=g.findings + tuple(extra[g.name])) if g.name in extra else g for g in grades]


def _comparable(text: str) -> str:
    return _NOISE.sub("", text).lower()


def similar(first: str, second: str) -> bool:
    """Nearly the same explanation: the same words once spaces and punctuation are set aside, or almost."""
    a, b = _comparable(first), _comparable(second)
    if min(len(a), len(b)) < MIN_COMPARED:
        return False
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return matcher.real_quick_ratio() >= SIMILAR and matcher.quick_ratio() >= SIMILAR and matcher.ratio() >= SIMILAR


def flag_similar_explanations(grades: Iterable[GroupGrade]) -> list[GroupGrade]:
    """Each grade with a `copy` finding per other group whose explanation of an experiment is nearly the same."""
    grades = list(grades)
    extra: dict[str, list[GradeFinding]] = {}
    for index, first in enumerate(grades):
        for second in grades[index + 1:]:
            theirs = {e.experiment: e.text for e in second.explanations if e.text}
            for mine in first.explanations:
                if mine.text and mine.experiment in theirs and similar(mine.text, theirs[mine.experiment]):
                    extra.setdefault(first.name, []).append(_explanation_finding(second.name, mine.experiment))
                    extra.setdefault(second.name, []).append(_explanation_finding(first.name, mine.experiment))
    return [replace(g, findings=g.findings + tuple(extra[g.name])) if g.name in extra else g for g in grades]


def _explanation_finding(other: str, experiment: str) -> GradeFinding:
    return GradeFinding("copy", "copied-explanation", f"explanation of {experiment} nearly the same as group {other}'s",
                   f"对 {experiment} 的解释与小组 {other} 的几乎相同", REPORT_MD, None, experiment)
