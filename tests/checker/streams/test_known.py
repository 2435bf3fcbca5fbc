"""The documented differences: the shipped file loads, and docs/simulator-vs-rehearsal.md's table is the one generated
from it."""

from __future__ import annotations

import re

from hivedlab.checker.streams import load_known
from hivedlab.checker.streams.known import TABLE_HEAD, known_table
from tests.support.paths import ROOT

DOC = ROOT / "docs" / "simulator-vs-rehearsal.md"
ROW = re.compile(r"^\| `([a-z0-9-]+)` \| ([a-z0-9.-]+) \|", re.MULTILINE)


def test_the_shipped_table_loads_and_every_entry_is_explained() -> None:
    known = load_known()
    assert known
    for entry in known:
        assert entry.summary_en and entry.summary_zh and entry.course
        assert bool(entry.kubernetes_1_20) == (entry.category == "kubernetes-1.20"), entry.id


def test_the_doc_table_is_the_generated_one() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(TABLE_HEAD)
    end = text.find("\n\n", start)
    assert text[start:end if end >= 0 else len(text)] == known_table(), (
        "docs/simulator-vs-rehearsal.md's table of documented differences is not the one "
        "configs/known-differences.yaml gives: "
        "replace it with the output of `PYTHONPATH=src python -c 'from hivedlab.checker.streams.known import "
        "known_table; print(known_table())'`")


def test_the_table_has_a_row_per_entry_with_its_kind() -> None:
    rows = dict(ROW.findall(known_table()))
    assert rows == {entry.id: entry.category for entry in load_known()}
