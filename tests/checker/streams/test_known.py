"""The documented differences: the shipped file loads, and docs/simulator-vs-rehearsal.md's table lists exactly its
entries, each with its kind."""

from __future__ import annotations

import re

from hivedlab.checker.streams import load_known
from tests.support.paths import ROOT

DOC = ROOT / "docs" / "simulator-vs-rehearsal.md"
ROW = re.compile(r"^\| `([a-z0-9-]+)` \| ([a-z0-9.-]+) \|", re.MULTILINE)


def test_the_shipped_table_loads_and_every_entry_is_explained() -> None:
    known = load_known()
    assert known
    for entry in known:
        assert entry.summary_en and entry.summary_zh and entry.course
        assert bool(entry.kubernetes_1_20) == (entry.category == "kubernetes-1.20"), entry.id


def test_the_doc_lists_every_entry_with_its_kind() -> None:
    rows = dict(ROW.findall(DOC.read_text(encoding="utf-8")))
    assert rows == {entry.id: entry.category for entry in load_known()}
