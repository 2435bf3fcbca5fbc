"""`hivedlab report`: a run directory -> report.md (+ PNG charts), a self-contained report.html, claims.json.

The pipeline, declared once: read the run (`report_inputs.load_run`) -> chart data and drawings per experiment
(`charts`) -> the report's content (`context`) -> Markdown from the templates -> the students' free text put
back (`freetext`) -> HTML with the charts inline as SVG -> files written whole (`write_atomic`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

import jinja2
import markdown
from markupsafe import Markup

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import write_atomic
from hivedlab.basics.resources import REPORT_TEMPLATES
from hivedlab.basics.text import Text
from hivedlab.checker.report import charts as chart_module
from hivedlab.checker.report.context import build_claims, build_context, experiment_name
from hivedlab.checker.report.contrast import contrast_section
from hivedlab.checker.report.fonts import CJK_FAMILY, REPORT_FONT, copy_report_font
from hivedlab.checker.report.freetext import block, extract, merge
from hivedlab.checker.report.inputs import ExperimentInputs, RunInputs, load_run
from hivedlab.rundir import CHART_PNG, CHART_SVG, CONTRAST, EXPERIMENTS, RunDir, run_folder_name

LANGS = ("zh", "en")
_DEFAULT_FREE_TEXT = {
    "zh": "（在此填写。）",
    "en": "(Write here.)",
}
_ORPHANS = {
    "zh": "## 保留的自由文本（这些位置已不在报告中）",
    "en": "## Kept free text (these places are no longer in the report)",
}


@dataclass(frozen=True)
class ReportResult:
    markdown_path: Path
    html_path: Path
    claims_path: Path
    charts: tuple[Path, ...]
    inconclusive: tuple[str, ...]
    problems: tuple[str, ...]  # in the report's language where hivedlab words them (`inputs.Said`)


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(REPORT_TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=jinja2.select_autoescape(enabled_extensions=("html",), default_for_string=False),
    )


def _href(out_dir: Path, run_dir: Path, rel: str) -> str:
    """A link from the report's folder to a file of the run directory, URL-quoted."""
    target = os.path.relpath(run_dir / rel, out_dir).replace(os.sep, "/")
    return quote(target, safe="/._-~")


def _chart_data(exp: ExperimentInputs, lang: str) -> chart_module.ChartData | None:
    """A run's timeline chart, its text in `lang`; None when the run has nothing to draw."""
    if not exp.timeline.attempts and not exp.nodes:
        return None
    return chart_module.chart_data(
        experiment_name(exp, lang), exp.timeline.attempts, exp.nodes, exp.vc_nodes, exp.timeline.end or None,
        exp.timeline.switches, exp.timeline.rejections, exp.timeline.into_second,
        tuple(chart_module.NotReady(f.node, f.start, f.end, f.kind) for f in exp.timeline.faults),
    )


def _draw_charts(runs: list[ExperimentInputs], out_dir: Path, lang: str) -> dict[str, tuple[Path, Path]]:
    """Draw each run's timeline as timeline.png and .svg in its folder (experiments/<id>/, or a member's turn's
    experiments/<id>/<user>/) under the report's folder; by folder, the files written."""
    jobs: list[tuple[str, str, chart_module.ChartData]] = []  # (folder, the SVG ids' salt, data)
    for run in runs:
        data = _chart_data(run, lang)
        if data is not None:
            jobs.append((run.folder or run_folder_name(run.id), run.folder or run.id, data))
    drawn = chart_module.draw_many([(data, lang, salt) for _, salt, data in jobs])
    written: dict[str, tuple[Path, Path]] = {}
    for (folder, _, _), (png, svg) in zip(jobs, drawn, strict=True):
        png_path, svg_path = out_dir / folder / CHART_PNG, out_dir / folder / CHART_SVG
        write_atomic(png_path, png)
        write_atomic(svg_path, svg)
        written[folder] = (png_path, svg_path)
    return written


def render_markdown(inputs: RunInputs, lang: str, out_dir: Path, charts: dict[str, str], previous: str | None) -> str:
    """report.md's text; `previous` is the existing report.md (its free text is kept)."""
    context = build_context(inputs, lang, lambda rel: _href(out_dir, inputs.run_dir, rel), charts)
    template = _environment().get_template(f"report.{lang}.md.j2")
    text = template.render(**context, free_text=lambda block_id: block(block_id, _DEFAULT_FREE_TEXT[lang]))
    text = re.sub(r"\n{3,}", "\n\n", text)
    if previous is not None:
        written = {block_id: body for block_id, body in extract(previous).items() if not is_placeholder(body)}
        text = merge(text, written, _ORPHANS[lang])
    return text


def is_placeholder(body: str) -> bool:
    """A free-text block still holding the template's default text (in any language): not the students' words, so a
    re-render writes its own language's default there."""
    return body.strip() in _DEFAULT_FREE_TEXT.values()


_IMG = re.compile(
    rf'(?P<p><p>\s*)?<img alt="[^"]*" src="(?P<src>(?:{EXPERIMENTS}|{CONTRAST})/[^"]+/{re.escape(CHART_PNG)})"\s*/?>'
    r'(?P<end>\s*</p>)?'
)


def _inline_svg(svg: str) -> str:
    """An SVG file's text, made fit to sit inside HTML (no XML prolog or DOCTYPE)."""
    svg = re.sub(r"^\s*<\?xml[^>]*\?>\s*", "", svg)
    svg = re.sub(r"<!DOCTYPE[^>]*>\s*", "", svg, flags=re.IGNORECASE)
    return f'<figure class="chart">{svg.strip()}</figure>'


def render_html(md_text: str, lang: str, out_dir: Path, title: str) -> str:
    """report.md as one HTML page, the timeline charts inline as SVG; it needs only the CJK font beside it
    (`fonts.copy_report_font`)."""
    body = markdown.markdown(md_text, extensions=["tables", "sane_lists"], output_format="html")

    def inline(match: re.Match[str]) -> str:
        svg_path = (out_dir / unquote(match.group("src"))).with_suffix(".svg")
        try:
            figure = _inline_svg(svg_path.read_text(encoding="utf-8"))
        except OSError:
            return match.group(0)
        if match.group("p") and match.group("end"):
            return figure  # a figure may not sit inside a <p>
        return (match.group("p") or "") + figure + (match.group("end") or "")

    body = _IMG.sub(inline, body)
    template = _environment().get_template("report.html.j2")
    return template.render(lang=lang, title=title, body=Markup(body), font_family=CJK_FAMILY, font_url=REPORT_FONT)


def build_report(
    run_dir: Path, lang: str = "zh", out_dir: Path | None = None
) -> ReportResult:
    """Write report.md, report.html, claims.json and the charts for a run directory; an experiment whose
    verdicts.json is missing is judged from its evidence log."""
    if lang not in LANGS:
        raise HivedlabError(f"unknown language '{lang}' (choose zh or en)")
    out_dir = out_dir or run_dir
    inputs = load_run(run_dir)
    md_path = RunDir(out_dir).report_md
    previous = None
    if md_path.is_file():
        try:
            previous = md_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise HivedlabError(f"{md_path}: cannot read the existing report to keep its free text ({exc})") from None
        if previous.strip() and not extract(previous, str(md_path)):  # broken markers raise here, before any write
            raise HivedlabError(f"{md_path} exists but is not a hivedlab report (no free-text markers): move it "
                                "away or write the report elsewhere with --out, so that nothing of it is lost")
    chart_files: list[Path] = []
    chart_links: dict[str, str] = {}
    claim_files: dict[str, dict[str, object]] = {}
    runs = [run for exp in inputs.experiments for run in exp.turns or (exp,)]  # a chart for each member's turn
    charts = _draw_charts(runs, out_dir, lang)
    for exp in inputs.experiments:
        files: dict[str, object] = {"jobs": list(exp.job_files), "evidence": exp.evidence}
        for run in exp.turns or (exp,):  # the first turn's chart is the experiment's
            folder = run.folder or run_folder_name(exp.id)
            if folder not in charts:
                continue
            chart_files += charts[folder]
            chart_links[folder] = quote(f"{folder}/{CHART_PNG}", safe="/._-~")
            if run is exp or run.folder == exp.folder:
                chart_links[exp.id] = chart_links[folder]
                files.update(chart_png=f"{folder}/{CHART_PNG}", chart_svg=f"{folder}/{CHART_SVG}")
        claim_files[exp.id] = files
    md_text = render_markdown(inputs, lang, out_dir, chart_links, previous)
    contrast, contrast_charts = contrast_section(run_dir, out_dir, lang)  # runs without HiveD: ungraded
    if contrast:
        md_text = md_text.rstrip("\n") + "\n\n" + contrast
        chart_files += contrast_charts
    title = "Lab 6 实验报告" if lang == "zh" else "Lab 6 report"
    html_text = render_html(md_text, lang, out_dir, title)
    claims = build_claims(inputs, lang, claim_files)
    claims_path, html_path = RunDir(out_dir).claims, RunDir(out_dir).report_html
    write_atomic(claims_path, json.dumps(claims, ensure_ascii=False, indent=2) + "\n")
    copy_report_font(out_dir)
    write_atomic(html_path, html_text)
    write_atomic(md_path, md_text)
    inconclusive = tuple(e["id"] for e in claims["experiments"] if e["verdict"] == "inconclusive")
    problems = tuple(p.get(lang) if isinstance(p, Text) else p
                     for p in (*inputs.problems, *(q for e in inputs.experiments for q in e.problems)))
    return ReportResult(md_path, html_path, claims_path, tuple(chart_files), inconclusive, problems)
