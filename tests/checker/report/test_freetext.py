"""The students' text between the free-text markers survives re-rendering, and broken markers stop the render."""

from __future__ import annotations

import pytest

from hivedlab.basics.errors import HivedlabError
from hivedlab.checker.report.freetext import block, extract, merge

FRESH = "\n\n".join(["# Report", block("deploy", "(Write here.)"), "## More", block("notes-a", "(Write here.)"), ""])


def test_blocks_are_read_without_the_blank_lines_around_them():
    text = FRESH.replace("(Write here.)", "line one\n\n  indented *md*\nlast", 1)
    assert extract(text)["deploy"] == "line one\n\n  indented *md*\nlast"
    assert extract(text)["notes-a"] == "(Write here.)"


def test_merge_puts_the_previous_text_back_in_place():
    previous = {"deploy": "We hit a kubespray timeout; re-ran it.\n| a | b |", "notes-a": "seen <b>x</b>"}
    merged = merge(FRESH, previous, "## Kept")
    assert extract(merged) == previous
    assert merged.index("We hit") < merged.index("## More") < merged.index("seen <b>x</b>")
    assert "## Kept" not in merged


def test_text_whose_place_is_gone_is_kept_at_the_end():
    merged = merge(FRESH, {"deploy": "mine", "observations-removed": "still mine"}, "## Kept")
    assert merged.rstrip().endswith(block("observations-removed", "still mine"))
    assert extract(merged)["observations-removed"] == "still mine"


def test_merge_twice_changes_nothing():
    once = merge(FRESH, {"deploy": "text"}, "## Kept")
    assert merge(FRESH, extract(once), "## Kept") == once


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<!-- hivedlab:free-text deploy -->\nnever closed\n", "never closed"),
        ("<!-- hivedlab:free-text a -->\n<!-- hivedlab:free-text b -->\n<!-- /hivedlab:free-text -->\n", "not closed"),
        ("x\n<!-- /hivedlab:free-text -->\n", "without an opening marker"),
        (block("a", "1") + "\n" + block("a", "2"), "appears twice"),
        ("<!-- hivedlab:free-text -->\nx\n<!-- /hivedlab:free-text -->\n", "needs a name"),
    ],
)
def test_broken_markers_are_a_one_line_error(text, message):
    with pytest.raises(HivedlabError, match=message) as info:
        extract(text, "report.md")
    assert "\n" not in str(info.value)
