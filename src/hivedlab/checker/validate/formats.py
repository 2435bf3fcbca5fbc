"""Report output formats: text (default), json, junit, github (workflow annotations), sarif."""

from __future__ import annotations

import json
from collections import defaultdict
from xml.sax.saxutils import escape, quoteattr

from hivedlab.checker.validate.validation_findings import ERROR, NOTE, RULES, WARNING, Report, ValidationFinding

FORMATS = ("text", "json", "junit", "github", "sarif")


def render(report: Report, fmt: str) -> str:
    return {"text": to_text, "json": to_json, "junit": to_junit, "github": to_github, "sarif": to_sarif}[fmt](report)


def _summary(report: Report) -> str:
    errors, warnings = len(report.errors), len(report.warnings)
    return (f"{len(report.files)} file(s) checked: {errors} error(s), {warnings} warning(s) / "
            f"已检查 {len(report.files)} 个文件：{errors} 个错误，{warnings} 个警告")


def to_text(report: Report) -> str:
    lines = [f"{f.location}: {f.severity}[{f.rule}]: {f.message}" + (f"  ({f.pointer})" if f.pointer else "")
             for f in report.findings]
    lines.append(_summary(report))
    return "\n".join(lines) + "\n"


def to_json(report: Report) -> str:
    doc = {
        "files": list(report.files),
        "kinds": dict(report.kinds),
        "errors": len(report.errors),
        "warnings": len(report.warnings),
        "findings": [
            {"rule": f.rule, "severity": f.severity, "file": f.file, "line": f.line, "col": f.col,
             "pointer": f.pointer, "message": f.message}
            for f in report.findings
        ],
    }
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def to_junit(report: Report) -> str:
    """One test case per file; its errors are failures (warnings go to system-out)."""
    by_file: dict[str, list[ValidationFinding]] = defaultdict(list)
    for f in report.findings:
        by_file[f.file].append(f)
    files = list(report.files) + [f for f in by_file if f not in report.files]
    cases = []
    for name in files:
        found = by_file.get(name, [])
        errors = [f for f in found if f.severity == ERROR]
        body = "".join(
            f"<failure type={quoteattr(f.rule)} message={quoteattr(f.message)}>"
            f"{escape(f.location + ' ' + f.pointer)}</failure>" for f in errors)
        others = "\n".join(f"{f.location}: {f.severity}[{f.rule}]: {f.message}" for f in found if f not in errors)
        if others:
            body += f"<system-out>{escape(others)}</system-out>"
        cases.append(f'  <testcase classname="hivedlab.validate" name={quoteattr(name)}>{body}</testcase>')
    failures = sum(1 for name in files if any(f.severity == ERROR for f in by_file.get(name, [])))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuite name="hivedlab validate" tests="{len(files)}" failures="{failures}" errors="0">\n'
        + "\n".join(cases) + ("\n" if cases else "") + "</testsuite>\n"
    )


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def to_github(report: Report) -> str:
    level = {ERROR: "error", WARNING: "warning", NOTE: "notice"}
    lines = []
    for f in report.findings:
        props = [f"file={_gh_escape(f.file, True)}"]
        if f.line:
            props += [f"line={f.line}", f"col={f.col}"]
        props.append(f"title={_gh_escape(f.rule, True)}")
        lines.append(f"::{level[f.severity]} {','.join(props)}::{_gh_escape(f.message)}")
    lines.append(_summary(report))
    return "\n".join(lines) + "\n"


def to_sarif(report: Report) -> str:
    level = {ERROR: "error", WARNING: "warning", NOTE: "note"}
    used = sorted({f.rule for f in report.findings})
    results = []
    for f in report.findings:
        region = {"startLine": f.line, "startColumn": f.col} if f.line else {}
        location: dict[str, object] = {"physicalLocation": {"artifactLocation": {"uri": f.file},
                                                            **({"region": region} if region else {})}}
        if f.pointer:
            location["logicalLocations"] = [{"fullyQualifiedName": f.pointer, "kind": "member"}]
        results.append({"ruleId": f.rule, "level": level[f.severity], "message": {"text": f.message},
                        "locations": [location]})
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "hivedlab validate",
                "rules": [{"id": r, "shortDescription": {"text": RULES.get(r, r)}} for r in used],
            }},
            "results": results,
        }],
    }
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
