"""The one judge: an evidence log judged by the rules of its experiment's plan.

`hivedlab check`, the runner, the report (for a run whose verdicts.json is missing) and the grader all judge through
here (`judge_file` for a log file, `judge_evidence` for a log already read), so a log gets the same verdict wherever
it is judged. The verdict machinery (`verdicts.judge_timeline`, the rules, the timeline) is internal to judging; what
a caller prints of a verdict is re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hivedlab.basics.errors import BilingualError
from hivedlab.basics.text import Text
from hivedlab.checker.judging.timeline import Timeline, TimelineBuilder, vc_cells_from_config, vc_nodes_from_config
from hivedlab.checker.judging.verdicts import (
    ExperimentVerdict,
    LogSummary,
    judge_timeline,
    render_json,
    render_text,
    to_json,
)
from hivedlab.evidence import EvidenceLog, iter_evidence
from hivedlab.plans.loader import ruleset_for
from hivedlab.rundir import RUN_HOMES, run_location

__all__ = ["ExperimentVerdict", "Judge", "Judgement", "judge_evidence", "judge_file", "render_json", "render_text",
           "to_json"]


@dataclass(frozen=True)
class Judgement:
    """A verdict result (verdict.schema.json) and the timeline it was judged from (reused for the report's facts)."""

    verdict: Mapping[str, Any]
    timeline: Timeline | None = None


# What the grader calls for each log; tests pass their own.
Judge = Callable[[EvidenceLog, str], Judgement]


def judge_file(path: str | Path, experiment: str | None = None,
               hived_config_text: str | None = None) -> ExperimentVerdict:
    """Judge a log file (streamed, constant memory). Raises BilingualError (exit 2; its message the English) when
    the log is unreadable, holds no record, names no plan or another one than `experiment`, or a plan there is not."""
    stream = iter_evidence(path)
    builder = TimelineBuilder()
    for record in stream:
        builder.feed(record)
    if stream.unreadable_said:
        raise BilingualError(stream.unreadable_said)
    if stream.count == 0:
        raise BilingualError(Text(f"{path}：不是证据日志（其中没有 JSON Lines 格式的证据记录）",
                                  f"{path}: not an evidence log (no JSON Lines evidence record in it)"))
    return _judge_folded(builder, experiment, hived_config_text, str(path),
                         lambda tl: LogSummary(log_name(Path(path)), stream.count, stream.chain_ok,
                                               stream.first_broken_seq, stream.said, tl.source, tl.end_status,
                                               stream.sources))


def log_name(log: Path) -> str:
    """A log as its verdicts name it: relative to its run directory (`experiments/<id>/evidence.jsonl`, never an
    absolute path of the machine that judged it); a log outside a run directory as given."""
    run_dir, _run = run_location(log)
    relative = log.resolve().relative_to(run_dir)
    return relative.as_posix() if relative.parts[0] in RUN_HOMES else str(log)


def judge_evidence(log: EvidenceLog, experiment: str) -> Judgement:
    """Judge a log the grader has already read whole and verified (`hivedlab.evidence.read_evidence`); the verdict
    names it as `judge_file`'s does (`log_name`)."""
    builder = TimelineBuilder()
    for record in log.records:
        builder.feed(record)
    result = _judge_folded(builder, experiment, None, log.path,
                           lambda tl: LogSummary(log_name(Path(log.path)), len(log.records), log.chain_ok,
                                                 log.first_broken_seq, log.said, tl.source, tl.end_status,
                                                 log.sources))
    return Judgement(to_json(result), result.timeline)


def _judge_folded(builder: TimelineBuilder, experiment: str | None, hived_config_text: str | None, path: str,
                  summarize: Callable[[Timeline], LogSummary]) -> ExperimentVerdict:
    named = builder.experiments[0] if builder.experiments else None
    if experiment and named and experiment != named:
        raise BilingualError(Text(f"{path} 是实验 {named!r} 的运行记录，不是 {experiment!r} 的",
                                  f"{path} is a run of experiment {named!r}, not {experiment!r}"))
    chosen = experiment or named
    if chosen is None:
        raise BilingualError(Text(f"{path} 没有写明实验计划（是 watch 日志？）：请用 --experiment ID 指定",
                                  f"{path} names no experiment plan (a watch log?): pass --experiment ID"))
    rules = ruleset_for(chosen)
    builder.set_job_names(rules.job_names)
    timeline = builder.result()
    if hived_config_text and not timeline.vc_nodes:
        timeline = replace(timeline, vc_nodes=vc_nodes_from_config(hived_config_text),
                           vc_cells=vc_cells_from_config(hived_config_text))
    if timeline.experiment is None:
        timeline = replace(timeline, experiment=chosen)
    return judge_timeline(timeline, rules, summarize(timeline))
