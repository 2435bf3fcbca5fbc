"""The one judge: an evidence log judged by the rules of its experiment's plan.

`hivedlab check`, the runner, the report (for a run whose verdicts.json is missing) and the grader all judge through
here, so a log gets the same verdict wherever it is judged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hivedlab.checker.judging.timeline import Timeline
from hivedlab.checker.judging.verdicts import ExperimentVerdict, check_evidence, check_log, to_json
from hivedlab.evidence import EvidenceLog
from hivedlab.plans.loader import ruleset_for


@dataclass(frozen=True)
class Judgement:
    """A verdict result (verdict.schema.json) and the timeline it was judged from (reused for the report's facts)."""

    verdict: Mapping[str, Any]
    timeline: Timeline | None = None


# What the grader calls for each log; tests pass their own.
Judge = Callable[[EvidenceLog, str], Judgement]


def judge_file(path: str | Path, experiment: str | None = None,
               hived_config_text: str | None = None) -> ExperimentVerdict:
    """Judge a log file (streamed, constant memory). Raises HivedlabError when the log is unusable."""
    return check_log(path, ruleset_for, experiment, hived_config_text)


def judge_evidence(log: EvidenceLog, experiment: str) -> Judgement:
    """Judge a log the grader has already read and verified."""
    result = check_evidence(log, ruleset_for, experiment)
    return Judgement(to_json(result), result.timeline)
