"""The students' own text in report.md, kept across re-renders.

A free-text place is a block between visible markers on their own lines:

    <!-- hivedlab:free-text deploy -->
    what the students wrote
    <!-- /hivedlab:free-text -->

Rendering writes each block with its default text; `merge` puts back whatever the previous report.md held
there. A block whose place no longer exists is kept at the end of the report, never dropped; markers that do
not pair up stop the render rather than risk losing text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hivedlab.basics.errors import HivedlabError
from hivedlab.rundir import REPORT_MD

OPEN = "<!-- hivedlab:free-text {id} -->"
CLOSE = "<!-- /hivedlab:free-text -->"
_ID = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_MARKER = re.compile(rf"^[ \t]*<!--[ \t]*(/?)hivedlab:free-text(?:[ \t]+({_ID}))?[ \t]*-->[ \t]*$", re.MULTILINE)


def block(block_id: str, body: str = "") -> str:
    """A free-text block as the template writes it (blank lines around the body keep Markdown rendering it)."""
    return f"{OPEN.format(id=block_id)}\n\n{body.strip(chr(10))}\n\n{CLOSE}"


def extract(text: str, source: str = REPORT_MD) -> dict[str, str]:
    """The free-text blocks of a report, id -> body (without the blank lines the template puts around it)."""
    blocks: dict[str, str] = {}
    current: tuple[str, int] | None = None
    for match in _MARKER.finditer(text):
        closing, block_id = match.group(1) == "/", match.group(2)
        line = text.count("\n", 0, match.start()) + 1
        if not closing:
            if block_id is None:
                example = OPEN.format(id="deploy")
                raise HivedlabError(f"{source}:{line}: a free-text marker needs a name, e.g. {example}")
            if current is not None:
                raise HivedlabError(f"{source}:{line}: free-text block '{current[0]}' is not closed before "
                                    f"'{block_id}' opens; add {CLOSE} (the report was not rewritten)")
            if block_id in blocks:
                raise HivedlabError(f"{source}:{line}: free-text block '{block_id}' appears twice; merge them by hand "
                                    "(the report was not rewritten)")
            current = (block_id, match.end())
        else:
            if current is None:
                raise HivedlabError(f"{source}:{line}: {CLOSE} without an opening marker "
                                    "(the report was not rewritten)")
            blocks[current[0]] = _trim(text[current[1]:match.start()])
            current = None
    if current is not None:
        raise HivedlabError(f"{source}: free-text block '{current[0]}' is never closed; add {CLOSE} "
                            "(the report was not rewritten)")
    return blocks


def _trim(body: str) -> str:
    """Drop the marker's own line end and the blank lines `block` adds; keep everything the students typed."""
    lines = body.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def merge(rendered: str, previous: dict[str, str], orphan_heading: str) -> str:
    """Put the previous report's free text into a freshly rendered one; orphans go to a section at the end."""
    fresh = extract(rendered, "the new report")
    out = rendered
    for block_id in fresh:
        if block_id in previous:
            pattern = re.compile(
                rf"^[ \t]*{re.escape(OPEN.format(id=block_id))}[ \t]*\n.*?^[ \t]*{re.escape(CLOSE)}[ \t]*$",
                re.MULTILINE | re.DOTALL,
            )
            replacement = block(block_id, previous[block_id])
            out = pattern.sub(_constant(replacement), out, count=1)
    orphans = [block_id for block_id in previous if block_id not in fresh and previous[block_id].strip()]
    if orphans:
        kept = "\n\n".join(block(b, previous[b]) for b in orphans)
        out = out.rstrip("\n") + f"\n\n{orphan_heading}\n\n{kept}\n"
    return out


def _constant(text: str) -> Callable[[re.Match[str]], str]:
    """A `re.sub` replacement that inserts `text` as it is (no backslash escapes)."""
    return lambda _match: text
