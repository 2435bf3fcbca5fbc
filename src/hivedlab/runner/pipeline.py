"""After the runs: the post-run pipeline, declared once (`PIPELINE`): judge each run's log and write its verdicts,
then the report. The verdicts stay in memory for whoever ran the pipeline; nothing reads them back from disk."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import write_atomic
from hivedlab.checker.judging.judge import ExperimentVerdict, judge_file, to_json
from hivedlab.rundir import EVIDENCE, RUN_HOMES, verdicts_path
from hivedlab.runner.run_types import ExperimentRun


@dataclass
class PipelineResult:
    notes: dict[str, str] = field(default_factory=dict)
    verdicts: dict[str, ExperimentVerdict] = field(default_factory=dict)  # by run id


@dataclass(frozen=True)
class PipelineStep:
    name: str
    run: Callable[[Path, Sequence[ExperimentRun], str, PipelineResult], str]  # (out, runs, lang, so far) -> a note


def _verdicts_step(out: Path, runs: Sequence[ExperimentRun], lang: str, result: PipelineResult) -> str:
    """verdicts.json per run, judged by the plan's rules."""
    failed = []
    for run in runs:
        try:
            verdict = judge_file(run.evidence, run.experiment)
        except HivedlabError as exc:
            failed.append(f"{run.experiment}: {exc}")
            continue
        result.verdicts[run.run_id] = verdict
        write_verdicts(run.evidence, verdict)
    if failed:
        raise HivedlabError("; ".join(failed))
    return f"{len(runs)} verdict file(s)"


def write_verdicts(log: Path, verdict: ExperimentVerdict) -> None:
    """A run's verdicts.json, beside its log."""
    write_atomic(verdicts_path(log.parent), json.dumps(to_json(verdict), ensure_ascii=False, indent=2) + "\n")


def run_logs(out: Path) -> list[Path]:
    """Every run's log in a run directory: `experiments/<id>/`, a member's turn `experiments/<id>/<user>/`, and
    `contrast/<id>@<scheduler>/`."""
    homes = [out / home for home in RUN_HOMES]
    return sorted(log for home in homes for log in (*home.glob(f"*/{EVIDENCE}"), *home.glob(f"*/*/{EVIDENCE}")))


def judge_again(out: Path) -> tuple[list[str], list[str]]:
    """Judge the logs of a run directory whose verdicts.json is missing or older than the log, and write it exactly
    as a run's pipeline does (so that a run finished by `hivedlab report` after a Ctrl-C grades as one that was never
    interrupted). Returns the logs judged and the lines for those that could not be."""
    judged, failed = [], []
    for log in run_logs(out):
        verdicts = verdicts_path(log.parent)
        if verdicts.is_file() and verdicts.stat().st_mtime >= log.stat().st_mtime:
            continue
        try:
            write_verdicts(log, judge_file(log))
        except (HivedlabError, OSError) as exc:
            failed.append(f"{log}: {exc}")
            continue
        judged.append(str(log.relative_to(out)))
    return judged, failed


def _report_step(out: Path, runs: Sequence[ExperimentRun], lang: str, result: PipelineResult) -> str:
    from hivedlab.checker.report.build import build_report  # matplotlib loads only when a report is made

    report = build_report(out, lang)
    return f"report: {Path(report.markdown_path).name}, {Path(report.html_path).name}, charts {len(report.charts)}"


PIPELINE: tuple[PipelineStep, ...] = (
    PipelineStep("verdicts", _verdicts_step),
    PipelineStep("report", _report_step),  # writes the charts, report.md/html and claims.json
)


def run_pipeline(out: Path, runs: Sequence[ExperimentRun], lang: str = "zh") -> PipelineResult:
    """Run every PIPELINE step in order; a step that fails is noted and the next still runs."""
    result = PipelineResult()
    for step in PIPELINE:
        try:
            result.notes[step.name] = step.run(out, runs, lang, result)
        except HivedlabError as exc:
            result.notes[step.name] = f"failed: {exc}"
    return result
