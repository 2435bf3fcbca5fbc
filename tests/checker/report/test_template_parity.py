"""The zh and en report templates are one structure in two languages: the same `{% ... %}` statements and `{{ ... }}`
expressions in the same order, apart from language-only strings (a list's separator: `、` or `, `) and English's
capitals (`| capitalize`; Chinese has no case). A change to one template without the other fails here."""

from __future__ import annotations

import re

from hivedlab.basics.resources import REPORT_TEMPLATES

COMMENT = re.compile(r"\{#.*?#\}", re.S)
TAG = re.compile(r"\{%-?\s*(?P<statement>.*?)\s*-?%\}|\{\{-?\s*(?P<expression>.*?)\s*-?\}\}", re.S)
SEPARATOR = re.compile(r"""join\((?:"[^"]*"|'[^']*')\)""")
CAPITALS = re.compile(r"\s*\|\s*capitalize\b")


def tags(text: str) -> list[str]:
    """The template's tags in order, each as `%` (statement) or `{` (expression) and its normalised text."""
    found = []
    for match in TAG.finditer(COMMENT.sub("", text)):
        kind, body = ("%", match["statement"]) if match["statement"] is not None else ("{", match["expression"])
        body = re.sub(r"\s*\|\s*", " | ", " ".join(body.split()))
        body = CAPITALS.sub("", SEPARATOR.sub("join(SEPARATOR)", body))
        found.append(f"{kind} {body}")
    return found


def test_the_normalising_keeps_a_real_difference() -> None:
    assert tags('{{ a | join("、") }}{% if x %}') == tags("{{ a|join(', ') | capitalize }}{%- if x -%}")
    assert tags("{{ a }}{% if x %}") != tags("{% if x %}{{ a }}")
    assert tags('{% if cluster == "sim" %}') != tags('{% if cluster == "pai" %}')


def test_zh_and_en_templates_have_the_same_tags() -> None:
    zh = tags((REPORT_TEMPLATES / "report.zh.md.j2").read_text(encoding="utf-8"))
    en = tags((REPORT_TEMPLATES / "report.en.md.j2").read_text(encoding="utf-8"))
    assert len(zh) > 100
    first = next((i for i, (z, e) in enumerate(zip(zh, en, strict=False)) if z != e), min(len(zh), len(en)))
    assert zh == en, (f"report.zh.md.j2 and report.en.md.j2 part at tag {first + 1}: "
                      f"zh {zh[first:first + 1]}, en {en[first:first + 1]}; change both templates together")
