"""The hived-diff matching rules (v1: tests/fixtures/hived-diff/README.md, v2: tests/fixtures/hived-diff-v2/README.md)
and the fidelity score."""

from __future__ import annotations

from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PUBLIC = FIXTURES / "hived-diff" / "public"
PUBLIC_V2 = FIXTURES / "hived-diff-v2" / "public"


def step_matches(op: dict[str, Any], expected: dict[str, Any], got: dict[str, Any] | None) -> bool:
    if got is None:
        return False
    if op.get("op") != "schedule":
        if expected.get("result") == "error":
            return got.get("result") == "error"
        return got.get("result") not in (None, "error")
    if got.get("result") != expected["result"]:
        return False
    if expected["result"] == "preempt" and op.get("phase") == "Filtering":
        return True  # v2: a Filtering-phase preempt records no victims and is compared on its kind
    if expected["result"] == "bind":
        return got.get("node") == expected["node"] and got.get("leafCellIsolation") == expected["leafCellIsolation"]
    if expected["result"] == "preempt":
        victims = got.get("victims") or {}
        return {n: set(p) for n, p in victims.items()} == {n: set(p) for n, p in expected["victims"].items()}
    return True


def first_mismatch(ops: list[dict[str, Any]], expected: list[dict[str, Any]], lines: list[dict[str, Any]]) -> int:
    """Index of the first step that does not match (len(ops) when all match); `lines` excludes the init line."""
    for i, (op, exp) in enumerate(zip(ops, expected, strict=True)):
        if not step_matches(op, exp, lines[i] if i < len(lines) else None):
            return i
    return len(ops)
