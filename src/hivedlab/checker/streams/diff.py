"""Comparing two streams fact by fact (pure): each fact whose values differ is one `Difference`, documented when the
known differences (`known`) make the two sides agree, undocumented otherwise."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from hivedlab.checker.streams.known import SAME, KnownDifference
from hivedlab.checker.streams.stream_types import Stream

_ABSENT = object()


@dataclass(frozen=True)
class Difference:
    path: str
    a: Any
    b: Any
    known: tuple[str, ...] = ()  # the ids of the documented differences that explain it; none: undocumented

    @property
    def documented(self) -> bool:
        return bool(self.known)

    def line(self) -> str:
        """One line: the fact, both values, and what explains it."""
        why = f"  [documented: {', '.join(self.known)}]" if self.known else ""
        return f"{self.path}: A={_show(self.a)} B={_show(self.b)}{why}"

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "a": None if self.a is _ABSENT else self.a,
                "b": None if self.b is _ABSENT else self.b, "absent": [s for s, v in (("a", self.a), ("b", self.b))
                                                                       if v is _ABSENT], "known": list(self.known)}


def _show(value: Any) -> str:
    return "(absent)" if value is _ABSENT else json.dumps(value, ensure_ascii=False)


def side_of(stream: Stream) -> str:
    """`sim` for the simulator's log, `rehearsal` for a real (or rehearsal) cluster's."""
    return "sim" if stream.source == "sim" else "rehearsal"


def _rewrite(value: Any, entry: KnownDifference) -> Any:
    if value is _ABSENT:
        return value
    if isinstance(value, list):
        items = [v for v in value if not (entry.drop and isinstance(v, str) and entry.drop.search(v))]
        return [_rewrite(v, entry) for v in items]
    if isinstance(value, str):
        for pattern, replacement in entry.rewrite:
            value = pattern.sub(replacement, value)
    elif entry.rewrite and (value is None or isinstance(value, int | float)):
        text = json.dumps(value)
        for pattern, replacement in entry.rewrite:
            text = pattern.sub(replacement, text)
        try:
            value = json.loads(text)
        except ValueError:
            value = text
    return value


def _collapse(value: Any) -> Any:
    """A list with its repeats collapsed again (a rewrite can make two neighbours equal)."""
    if not isinstance(value, list):
        return value
    out: list[Any] = []
    for item in value:
        if not out or out[-1] != item:
            out.append(item)
    return out


def _unordered(value: Any) -> Any:
    """A list's items in a fixed order (their JSON texts sorted), for comparing what two lists hold."""
    return sorted(json.dumps(v, sort_keys=True) for v in value) if isinstance(value, list) else value


_SCOPES = {"attempt": re.compile(r"^(job\[[^]]*\]\.task\[[^]]*\]\.attempt\[\d+\])\."),
           "job": re.compile(r"^(job\[[^]]*\])\.")}


def _holds(entry: KnownDifference, path: str, facts: tuple[dict[str, Any], dict[str, Any]]) -> bool:
    """Whether the entry's `when` conditions hold for the fact at `path` (facts of its attempt or job)."""
    for key, wanted in entry.when:
        scope, _, name = key.partition(".")
        found = _SCOPES[scope].match(path)
        if found is None:
            return False
        ref = f"{found.group(1)}.{name}"
        va, vb = facts[0].get(ref, _ABSENT), facts[1].get(ref, _ABSENT)
        if not (va == vb and va is not _ABSENT if wanted == SAME else va == wanted and vb == wanted):
            return False
    return True


def _explain(path: str, a: Any, b: Any,
             context: tuple[str, str, tuple[str | None, str | None], dict[str, Any], dict[str, Any]],
             known: tuple[KnownDifference, ...]) -> tuple[str, ...]:
    """The ids of the entries that, applied in order, make `a` and `b` agree; () when they do not. `context`: the
    sides of A and B, the experiment and run id, and both streams' facts."""
    sides, facts = context[:2], context[3:]
    used: list[str] = []
    for entry in known:
        if not entry.applies(path, *context[2]) or not _holds(entry, path, facts):
            continue
        if _ABSENT in (a, b) and entry.compare != "any":  # a fact on one side only: only `any` explains it
            continue
        before = (a, b)
        a = _collapse(_rewrite(a, entry)) if entry.on(sides[0]) else a
        b = _collapse(_rewrite(b, entry)) if entry.on(sides[1]) else b
        if entry.compare == "any" or (entry.compare == "presence" and bool(a) == bool(b)) or \
                (entry.compare == "unordered" and _unordered(a) == _unordered(b)):
            a = b
        if (a, b) != before:
            used.append(entry.id)
        if a == b:
            return tuple(used)
    return ()


def diff_streams(a: Stream, b: Stream, known: tuple[KnownDifference, ...] = ()) -> list[Difference]:
    """Every fact whose values differ, in the order of A's facts (then B's own), each marked with what explains it."""
    facts_a, facts_b = a.facts(), b.facts()
    context = (side_of(a), side_of(b), (a.experiment or b.experiment, a.run_id or b.run_id), facts_a, facts_b)
    out = []
    for path in [*facts_a, *(p for p in facts_b if p not in facts_a)]:
        va, vb = facts_a.get(path, _ABSENT), facts_b.get(path, _ABSENT)
        if va == vb:
            continue
        ids = _explain(path, va, vb, context, known)
        out.append(Difference(path, va, vb, ids))
    return out
