"""One `hivedlab trace` run: replay the workload under each policy, measure, write the output folder.

The folder holds `trace.json` (what identifies it as this command's output, with every table's numbers),
`report.en.md`, `report.zh.md`, `report.html` in the chosen language and `charts/`. A folder holding anything else
is refused; an earlier trace output is moved to `replaced/<UTC time>/` by `replace`, never deleted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hivedlab.basics.files import write_atomic
from hivedlab.rundir import REPLACED, REPORT_HTML, RunDir
from hivedlab.trace.cells import VcCells, derive_cells
from hivedlab.trace.metrics import PolicyRow, measure
from hivedlab.trace.policies.registry import build
from hivedlab.trace.report import ReportInput, markdown
from hivedlab.trace.simulate import Outcome, Progress, simulate
from hivedlab.trace.workload import TraceInputError, Workload

MARKER = "trace.json"
KIND = "hivedlab-trace"
REPORT_MD = {"en": "report.en.md", "zh": "report.zh.md"}


@dataclass(frozen=True)
class TraceResult:
    workload: Workload
    cells: VcCells
    outcomes: Mapping[str, Outcome]
    rows: Mapping[str, PolicyRow]
    seconds: Mapping[str, float]


def replay(workload: Workload, policies: Sequence[str],
           progress: Callable[[str], Progress | None] | None = None) -> TraceResult:
    """Every policy on the same workload; the private cluster first, since the others are measured against it."""
    cells = derive_cells(workload.server_types, workload.shares)
    order = sorted(policies, key=lambda p: p != "private")
    outcomes: dict[str, Outcome] = {}
    seconds: dict[str, float] = {}
    for name in order:
        began = time.process_time()
        outcomes[name] = simulate(workload, build(name, workload, cells), progress(name) if progress else None)
        seconds[name] = time.process_time() - began
    private = outcomes.get("private")
    rows = {name: measure(outcomes[name], workload.shares, private) for name in policies}
    return TraceResult(workload, cells, {p: outcomes[p] for p in policies}, rows, {p: seconds[p] for p in policies})


def assumptions(params_text: str) -> list[str]:
    """The parameter file's comment paragraphs that state an assumption, one line each."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in params_text.splitlines() + [""]:
        stripped = line.strip()
        if stripped.startswith("#"):
            current.append(stripped.lstrip("#").strip())
            continue
        if current:
            paragraphs.append(" ".join(part for part in current if part))
            current = []
    return [p for p in paragraphs if "assumption" in p.lower() and not p.startswith("Sources:")]


def prepare_folder(out: Path, replace: bool) -> Path | None:
    """Refuse a folder with another kind of output; move an earlier trace output aside when asked. Returns where
    the earlier output went, or None."""
    if not out.exists():
        return None
    if not out.is_dir():
        raise TraceInputError(f"{out} is a file, not a folder")
    entries = [e for e in out.iterdir() if e.name != REPLACED]
    if not entries:
        return None
    marker = out / MARKER
    if not _is_trace_output(marker):
        raise TraceInputError(f"{out} holds another kind of output (no {MARKER} of `hivedlab trace`): choose an "
                              "empty or new folder with --out")
    if not replace:
        raise TraceInputError(f"{out} holds an earlier trace report: pass --replace to move it to "
                              f"{out / REPLACED}/<time>/, or choose another --out")
    aside = RunDir(out).replaced_folder(datetime.now(timezone.utc).strftime("%Y%m%dt%H%M%S%f"))  # as `run` does
    aside.mkdir(parents=True)
    for entry in entries:
        entry.rename(aside / entry.name)
    return aside


def _is_trace_output(marker: Path) -> bool:
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("kind") == KIND


def write_output(out: Path, result: TraceResult, lang: str, assumed: Sequence[str], charts: bool) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    data = ReportInput(result.workload, result.cells, result.rows, assumed)
    written: list[Path] = []
    links: list[tuple[str, str]] = []
    if charts:  # in the chosen language; both Markdown files show them
        from hivedlab.trace.charts import cdf_chart, excess_chart, utilization_chart

        for stem, png in (("queuing-cdf", cdf_chart(result.outcomes, lang)),
                          ("excess-per-vc", excess_chart(result.rows, lang)),
                          ("utilization", utilization_chart(result.outcomes, lang))):
            path = out / "charts" / f"{stem}.png"
            write_atomic(path, png)
            written.append(path)
            links.append((stem, f"charts/{path.name}"))
    texts = {language: markdown(data, language, links) for language in ("en", "zh")}
    for language, text in texts.items():
        path = out / REPORT_MD[language]
        write_atomic(path, text)
        written.append(path)
    html = out / REPORT_HTML  # named as a run directory's report
    write_atomic(html, _html(texts[lang], lang, out))
    written.append(html)
    marker = out / MARKER
    write_atomic(marker, json.dumps(summary(result), ensure_ascii=False, indent=1) + "\n")
    written.append(marker)
    return written


def summary(result: TraceResult) -> dict[str, Any]:
    w = result.workload
    return {
        "kind": KIND,
        "source": w.source,
        "jobs": len(w.jobs),
        "left_out": len(w.left_out),
        "servers": [asdict(st) for st in w.server_types],
        "shares": dict(w.shares),
        "cells": {vc: {w.server_types[t].name: list(sizes) for t, sizes in per.items()}
                  for vc, per in result.cells.cells.items()},
        "policies": {name: asdict(row) for name, row in result.rows.items()},
        "cpu_seconds": {name: round(s, 2) for name, s in result.seconds.items()},
    }


def _html(text: str, lang: str, out: Path) -> str:
    import markdown as md

    body = md.markdown(text, extensions=["tables"])
    font = ""
    if lang == "zh":
        from hivedlab.checker.report.fonts import CJK_FAMILY, REPORT_FONT, copy_report_font

        copy_report_font(out)
        font = f"@font-face {{ font-family: '{CJK_FAMILY}'; src: url('{REPORT_FONT}'); }}\n"
    style = (font + "body { font-family: 'DejaVu Sans', 'Noto Sans SC', sans-serif; max-width: 70em; margin: 2em "
             "auto; }\ntable { border-collapse: collapse; font-size: 0.9em; } td, th { border: 1px solid #bbb; "
             "padding: 0.2em 0.5em; text-align: right; }\nimg { max-width: 100%; }\n")
    title = "多租户负载重放" if lang == "zh" else "Multi-tenant trace replay"
    return (f"<!DOCTYPE html>\n<html lang=\"{lang}\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n"
            f"<style>\n{style}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")
