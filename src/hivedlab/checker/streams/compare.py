"""Comparing two runs, each a run directory (every experiment both hold, contrast runs such as
`kubeflow-gang@default` among them) or one evidence log: the streams read, diffed and summed up
(docs/simulator-vs-rehearsal.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hivedlab.basics.errors import HivedlabError
from hivedlab.checker.streams.diff import Difference, diff_streams, side_of
from hivedlab.checker.streams.extract import extract
from hivedlab.checker.streams.known import KnownDifference, load_known
from hivedlab.checker.streams.stream_types import Stream
from hivedlab.evidence import read_evidence
from hivedlab.rundir import CONTRAST, EVIDENCE, EXPERIMENTS


@dataclass(frozen=True)
class ExperimentComparison:
    experiment: str
    sides: tuple[str, str]  # `sim` or `rehearsal`, for A and B
    differences: tuple[Difference, ...]
    missing: str = ""  # "A" or "B" when only one run holds the experiment

    @property
    def undocumented(self) -> int:
        return (1 if self.missing else 0) + sum(1 for d in self.differences if not d.documented)

    @property
    def documented(self) -> int:
        return sum(1 for d in self.differences if d.documented)


def read_stream(path: Path) -> Stream:
    """The stream of one evidence log; a one-line error when the log is unreadable or its chain is broken."""
    log = read_evidence(path)
    if log.unreadable:
        raise HivedlabError(f"{path}: {log.unreadable}")
    if not log.records:
        raise HivedlabError(f"{path}: no evidence record in this file")
    if not log.chain_ok:
        raise HivedlabError(f"{path}: the hash chain is broken at record {log.first_broken_seq}; it proves nothing")
    return extract(log.records)


def _logs(path: Path) -> dict[str, Path]:
    """run id -> its log: a run directory's `experiments/<id>/evidence.jsonl` and its contrast runs'
    `contrast/<id>@<scheduler>/evidence.jsonl`, or one log (named by its plan record: the experiment, with
    `@<scheduler>` for a contrast run)."""
    if path.is_dir():
        found = {log.parent.name: log for home in (EXPERIMENTS, CONTRAST)
                 for log in sorted((path / home).glob(f"*/{EVIDENCE}"))}
        if not found:
            raise HivedlabError(f"{path}: no {EXPERIMENTS}/*/{EVIDENCE} or {CONTRAST}/*/{EVIDENCE} in this directory")
        return found
    if not path.is_file():
        raise HivedlabError(f"{path}: no such run directory or evidence log")
    return {read_stream(path).run_id or path.stem: path}


def compare_runs(a: Path, b: Path, experiment: str | None = None,
                 known: tuple[KnownDifference, ...] | None = None) -> list[ExperimentComparison]:
    """Every experiment and contrast run of A and B (or only `experiment`, an experiment id or a contrast run's
    `<id>@<scheduler>`), compared; known differences from the shipped file."""
    table = load_known() if known is None else known
    logs_a, logs_b = _logs(a), _logs(b)
    single = not a.is_dir() and not b.is_dir()
    if single:  # two logs: compared whatever experiments they name
        (exp, log_a), log_b = next(iter(logs_a.items())), next(iter(logs_b.values()))
        logs_a, logs_b = {exp: log_a}, {exp: log_b}
    ids = [i for i in logs_a if i in logs_b] + [i for i in logs_a if i not in logs_b] + \
        [i for i in logs_b if i not in logs_a]
    if experiment is not None:
        if experiment not in logs_a and experiment not in logs_b:
            raise HivedlabError(f"experiment {experiment!r} is in neither run (they hold: {', '.join(ids)})")
        ids = [experiment]
    out = []
    for exp in ids:
        if exp not in logs_b or exp not in logs_a:
            out.append(ExperimentComparison(exp, ("", ""), (), missing="B" if exp not in logs_b else "A"))
            continue
        stream_a, stream_b = read_stream(logs_a[exp]), read_stream(logs_b[exp])
        out.append(ExperimentComparison(exp, (side_of(stream_a), side_of(stream_b)),
                                        tuple(diff_streams(stream_a, stream_b, table))))
    return out


def render_text(comparisons: list[ExperimentComparison]) -> str:
    lines = []
    for comp in comparisons:
        if comp.missing:
            lines.append(f"== {comp.experiment}: only in {'A' if comp.missing == 'B' else 'B'}")
            continue
        lines.append(f"== {comp.experiment} (A: {comp.sides[0]}, B: {comp.sides[1]})")
        lines += [f"  {d.line()}" for d in comp.differences]
        lines.append(f"  {comp.experiment}: {comp.undocumented} undocumented, {comp.documented} documented "
                     f"difference(s) / 未记录差异 {comp.undocumented} 处，已记录差异 {comp.documented} 处")
    total = sum(c.undocumented for c in comparisons)
    lines.append(f"{len(comparisons)} experiment(s) compared: {total} undocumented difference(s) / "
                 f"比较了 {len(comparisons)} 个实验：未记录差异 {total} 处")
    return "\n".join(lines) + "\n"


def render_json(comparisons: list[ExperimentComparison]) -> dict[str, Any]:
    return {
        "undocumented": sum(c.undocumented for c in comparisons),
        "experiments": [{"experiment": c.experiment, "sides": list(c.sides), "missing": c.missing or None,
                         "undocumented": c.undocumented, "documented": c.documented,
                         "differences": [d.as_json() for d in c.differences]} for c in comparisons],
    }
