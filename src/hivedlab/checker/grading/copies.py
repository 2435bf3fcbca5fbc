"""Copies between groups: the one comparison across a batch.

Each evidence log has a content fingerprint (`provenance.content_fingerprint`): what a renaming cannot change — the
records' kinds, times relative to the first record, object uids and nodes by order of first appearance, resource
versions, GPU indices, phases and exits — with names, users, tags, absolute times and the hash chain set aside. Two
groups whose logs have the same fingerprint submitted the same run, whatever they renamed or re-sealed: the
simulator takes its seed together with the group's name (`runner.steps.group_seed`), so two honest groups never make
runs that only names tell apart, and a real cluster never makes the same run twice. Real-cluster logs are compared
on their final hash, pod uids and container ids too (a partial copy shares some of them), and simulator runs on their
inputs (inventory and seed).

Copies are reported as clusters: the groups that share a run (one cluster per set of groups, with every log and
value they share), flagged for a look in `grades.md`, which lists each cluster once. Students never see the other
groups' names (the finding kind `copy` is TA-only).

The groups' own explanations are compared too: two explanations of one experiment that are nearly the same text
(`SIMILAR` or more of difflib's ratio, once spaces and punctuation are set aside) are flagged the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher

from hivedlab.checker.grading.grade_findings import GradeFinding
from hivedlab.checker.grading.scoring import GroupGrade
from hivedlab.rundir import REPORT_MD

SIMILAR = 0.9  # difflib ratio from which two explanations count as copies of each other
MIN_COMPARED = 20  # characters: shorter explanations ("同上", "see above") are too short to call copies
_NOISE = re.compile(r"[\s\W_]+")

# identity kinds (GroupGrade.identity: kind, value, where): how each is said when shared
_KINDS = {
    "content": ("the same run by content", "内容相同的运行"),
    "log": ("identical log(s) (same final hash)", "份完全相同的日志（最后的哈希相同）"),
    "uid": ("shared pod/job uid(s)", "个相同的 Pod/任务 uid"),
    "container": ("shared container id(s)", "个相同的容器 ID"),
    "inputs": ("the same simulator inputs (inventory and seed)", "相同的模拟输入（清单和种子）"),
}
_COUNTED = ("log", "uid", "container")
_CONTENT_EN = ("times relative to the first record, uids and nodes by order of appearance, resource versions, "
               "GPU indices, phases and exits")
_CONTENT_ZH = "相对第一条记录的时间、按出现顺序的 uid 和节点、资源版本、GPU 编号、状态和退出码"


@dataclass(frozen=True)
class CopyCluster:
    """Groups that share a run: each shared value's kind, and where each group's copy of it is."""

    groups: tuple[str, ...]
    shared: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]  # (kind, value, ((group, where), ...))

    def count(self, kind: str, group: str) -> int:
        """How many values of this kind the group shares with others of the cluster."""
        return sum(1 for k, _, owners in self.shared if k == kind and any(g == group for g, _ in owners))

    def places(self, group: str) -> tuple[str, ...]:
        """Where this group's copies of the shared runs are: `file#seq=first-last`, in order."""
        return tuple(sorted({where for kind, _, owners in self.shared if kind == "content"
                             for owner, where in owners if owner == group}))


def copy_clusters(grades: Iterable[GroupGrade]) -> list[CopyCluster]:
    """The clusters of groups that share evidence (groups linked by any shared value, directly or through another
    group of the cluster), each once, in name order."""
    owners: dict[tuple[str, str], dict[str, str]] = {}
    for grade in grades:
        for kind, value, where in grade.identity:
            places = owners.setdefault((kind, value), {})
            places[grade.name] = min(places.get(grade.name, where), where)
    shared = {key: places for key, places in owners.items() if len(places) > 1}
    root: dict[str, str] = {}

    def find(group: str) -> str:
        while root.setdefault(group, group) != group:
            group = root[group] = root[root[group]]
        return group

    for places in shared.values():
        first, *rest = sorted(places)
        for other in rest:
            root[find(other)] = find(first)
    members: dict[str, list[tuple[str, str, tuple[tuple[str, str], ...]]]] = {}
    for (kind, value), places in shared.items():
        members.setdefault(find(next(iter(places))), []).append((kind, value, tuple(sorted(places.items()))))
    clusters = [CopyCluster(tuple(sorted({g for _, _, owners in entries for g, _ in owners})), tuple(sorted(entries)))
                for entries in members.values()]
    return sorted(clusters, key=lambda cluster: cluster.groups)


def describe(cluster: CopyCluster, group: str) -> tuple[str, str]:
    """What this group shares with the others of the cluster (English, Chinese)."""
    en: list[str] = []
    zh: list[str] = []
    places = cluster.places(group)
    if places:
        en.append(f"{_KINDS['content'][0]}: {', '.join(places)} match theirs record for record ({_CONTENT_EN})")
        zh.append(f"{_KINDS['content'][1]}：{'、'.join(places)} 与对方的记录逐条相同（{_CONTENT_ZH}）")
    for kind in _COUNTED:
        if cluster.count(kind, group):
            en.append(f"{cluster.count(kind, group)} {_KINDS[kind][0]}")
            zh.append(f"{cluster.count(kind, group)} {_KINDS[kind][1]}")
    if cluster.count("inputs", group):
        en.append(_KINDS["inputs"][0])
        zh.append(_KINDS["inputs"][1])
    return "; ".join(en), "；".join(zh)


def _finding(cluster: CopyCluster, number: int, group: str) -> GradeFinding:
    others = ", ".join(g for g in cluster.groups if g != group)
    en, zh = describe(cluster, group)
    places = cluster.places(group)
    file, _, seqs = places[0].partition("#seq=") if places else ("", "", "")
    return GradeFinding("copy", "copied-evidence",
                        f"copy cluster {number}: evidence shared with group(s) {others}: {en}",
                        f"证据相同的第 {number} 簇：与小组 {others} 的证据相同或重叠：{zh}", file,
                        int(seqs.split("-")[0]) if seqs else None)


def flag_copies(grades: Sequence[GroupGrade], clusters: Sequence[CopyCluster] | None = None) -> list[GroupGrade]:
    """Each grade with a `copy` finding per cluster of groups it shares evidence (or simulator inputs) with."""
    extra: dict[str, list[GradeFinding]] = {}
    for number, cluster in enumerate(copy_clusters(grades) if clusters is None else clusters, 1):
        for group in cluster.groups:
            extra.setdefault(group, []).append(_finding(cluster, number, group))
    return [replace(g, findings=g.findings + tuple(extra[g.name])) if g.name in extra else g for g in grades]


def _comparable(text: str) -> str:
    return _NOISE.sub("", text).lower()


def similar(first: str, second: str) -> bool:
    """Nearly the same explanation: the same words once spaces and punctuation are set aside, or almost."""
    return _similar(_comparable(first), _comparable(second))


def _similar(a: str, b: str) -> bool:
    if min(len(a), len(b)) < MIN_COMPARED:
        return False
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return matcher.real_quick_ratio() >= SIMILAR and matcher.quick_ratio() >= SIMILAR and matcher.ratio() >= SIMILAR


# two texts can reach SIMILAR only if the longer is at most this many times the shorter (difflib's
# real_quick_ratio, 2 * shorter / (shorter + longer), is an upper bound of the ratio)
_MAX_LENGTHS = 2 / SIMILAR - 1


def _similar_pairs(grades: Sequence[GroupGrade]) -> list[tuple[int, int, int, str]]:
    """(first group, second group, the explanation's position in the first's, experiment) of every pair of nearly
    the same explanations, first < second, in that order. Each text is made comparable once, and only texts of
    lengths that could reach SIMILAR are compared: a course of a thousand groups is a few thousand comparisons."""
    by_experiment: dict[str, list[tuple[int, int, int, str]]] = {}  # experiment -> (length, group, position, text)
    for index, grade in enumerate(grades):
        for position, explanation in enumerate(grade.explanations):
            text = _comparable(explanation.text) if explanation.text else ""
            if len(text) >= MIN_COMPARED:
                by_experiment.setdefault(explanation.experiment, []).append((len(text), index, position, text))
    pairs: list[tuple[int, int, int, str]] = []
    for experiment, texts in by_experiment.items():
        texts.sort()
        for at, (length, index, position, text) in enumerate(texts):
            for other_length, other, other_position, other_text in texts[at + 1:]:
                if other_length > length * _MAX_LENGTHS:
                    break
                if other != index and _similar(text, other_text):
                    first, second, where = ((index, other, position) if index < other
                                            else (other, index, other_position))
                    pairs.append((first, second, where, experiment))
    return sorted(set(pairs))


def flag_similar_explanations(grades: Iterable[GroupGrade]) -> list[GroupGrade]:
    """Each grade with a `copy` finding per other group whose explanation of an experiment is nearly the same."""
    grades = list(grades)
    extra: dict[str, list[GradeFinding]] = {}
    for first, second, _, experiment in _similar_pairs(grades):
        extra.setdefault(grades[first].name, []).append(_explanation_finding(grades[second].name, experiment))
        extra.setdefault(grades[second].name, []).append(_explanation_finding(grades[first].name, experiment))
    return [replace(g, findings=g.findings + tuple(extra[g.name])) if g.name in extra else g for g in grades]


def _explanation_finding(other: str, experiment: str) -> GradeFinding:
    return GradeFinding("copy", "copied-explanation", f"explanation of {experiment} nearly the same as group {other}'s",
                   f"对 {experiment} 的解释与小组 {other} 的几乎相同", REPORT_MD, None, experiment)
