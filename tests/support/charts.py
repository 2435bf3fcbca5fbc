"""Reading a drawn chart back: matplotlib's SVG keeps each text it drew as a comment before the text's glyphs."""

from __future__ import annotations

import re

_COMMENT = re.compile(r"<!-- (.*?) -->", re.DOTALL)


def svg_texts(svg: str) -> list[str]:
    """Every text on the chart, one entry per line of text, in drawing order."""
    return [match.group(1) for match in _COMMENT.finditer(svg)]
