"""The hived-diff matching rule (tests/fixtures/hived-diff/README.md) and the fidelity score."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PUBLIC = Path(__file__).resolve().parent.parent / "fixtures" / "hived-diff" / "public"


def step_matches(op: dict[str, Any], expected: dict[str, Any], got: dict[str, Any] | None) -> bool:
    if got is None:
        return False
    if op.get("op") != "schedule":
        return got.get("result") not in (None, "error")
    if got.get("result") != expected["result"]:
        return False
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
