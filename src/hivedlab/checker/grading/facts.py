"""The report's key facts (claims.json `facts`: per task attempt its node, outcome, preemption) against the log.

The facts the evidence shows come from the checker's timeline (`hivedlab.checker.judging.timeline.build_timeline`)
keyed the way the report keys them (`hivedlab.checker.report.timeline`: display job name, `<taskRole>-<index>`,
attempt number in creation order), so an edited claims.json is caught with the record that shows what really happened.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hivedlab.checker.grading.grade_findings import GradeFinding
from hivedlab.checker.judging.timeline import build_timeline, display_names
from hivedlab.evidence import Record


@dataclass(frozen=True)
class AttemptFact:
    job: str
    task: str
    attempt: int
    node: str | None
    outcome: str
    seq: int | None  # the record that shows the node (bind) or, failing that, the pod's creation


def attempt_facts(records: Sequence[Record], experiment: str, run_tag: str,
                  timeline: Any = None) -> tuple[AttemptFact, ...] | None:
    """Each task attempt's facts as the report names them (from `timeline` when the judge already built it);
    None when no timeline can be built."""
    try:
        timeline = timeline if timeline is not None else build_timeline(records)
        names = display_names(timeline.jobs, timeline.experiment or experiment, run_tag)
    except Exception:  # a log the timeline cannot fold is judged elsewhere; facts are then unchecked
        return None
    facts = []
    for job in timeline.jobs:
        seen: dict[str, int] = {}
        ordered = sorted(job.attempts, key=lambda a: a.created.seq if a.created else 1 << 62)
        for attempt in ordered:
            task = f"{attempt.task_role or 'task'}-{attempt.task_index if attempt.task_index is not None else 0}"
            index = seen.get(task, 0)
            seen[task] = index + 1
            mark = attempt.bound or attempt.created
            facts.append(AttemptFact(names.get(job.framework_name, job.framework_name), task, index, attempt.node,
                                     attempt.outcome, mark.seq if mark else None))
    return tuple(facts)


def check_facts(claimed: Any, actual: Sequence[AttemptFact], experiment: str, evidence_file: str,
                where: str) -> tuple[int, tuple[GradeFinding, ...]]:
    """(facts checked, findings for the facts the evidence contradicts)."""
    if not isinstance(claimed, list):
        return 0, ()
    index = {(f.job, f.task, f.attempt): f for f in actual}
    findings: list[GradeFinding] = []
    checked = 0
    for fact in claimed:
        if not isinstance(fact, Mapping) or not isinstance(fact.get("job"), str):
            continue
        checked += 1
        attempt = fact.get("attempt")
        key = (fact["job"], str(fact.get("task")), attempt if isinstance(attempt, int) else 0)
        label = f"{key[0]} {key[1]} attempt {key[2] + 1}"
        real = index.get(key)
        if real is None:
            findings.append(GradeFinding("claim", "fact-not-in-evidence",
                                         f"{where}: {experiment}: {label} is claimed but "
                                    "the evidence has no such task attempt",
                                    f"{where}：{experiment}：声称的 {label} 在证据中不存在",
                                    evidence_file, None, experiment))
            continue
        node = fact.get("node")
        if node and node != real.node:
            findings.append(GradeFinding("claim", "fact-contradicted",
                                    f"{where}: {experiment}: {label} is claimed on {node}; "
                                    f"the evidence puts it on {real.node or 'no node'}",
                                    f"{where}：{experiment}：声称 {label} 运行在 {node}，"
                                    f"证据显示为 {real.node or '未绑定'}",
                                    evidence_file, real.seq, experiment))
        elif isinstance(fact.get("preempted"), bool) and fact["preempted"] != (real.outcome == "preempted"):
            findings.append(GradeFinding("claim", "fact-contradicted", f"{where}: {experiment}: {label} is claimed "
                                    f"{'preempted' if fact['preempted'] else 'not preempted'}; the evidence says "
                                    f"{real.outcome}",
                                    f"{where}：{experiment}：{label} 的抢占情况与证据不符（证据：{real.outcome}）",
                                    evidence_file, real.seq, experiment))
    return checked, tuple(findings)
