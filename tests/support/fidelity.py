"""The hived-diff fidelity score: how many steps of each recorded scenario the HiveD model reproduces.

The replay tests (tests/models/test_replay_public*.py) record each scenario's score through the `fidelity` and
`fidelity_v2` fixtures; tests/conftest.py prints the totals at the end of the run. Under pytest-xdist the scenarios
run in the worker processes: each worker hands its scores to the controller (`worker_scores`), which merges them
(`merge`) before it prints.
"""

from __future__ import annotations

from collections.abc import Mapping

Scores = dict[str, tuple[int, int]]  # scenario -> (steps before the first mismatch, steps)

CORPORA = ("hived-diff", "hived-diff-v2")
SCORES: dict[str, Scores] = {corpus: {} for corpus in CORPORA}


def worker_scores() -> dict[str, dict[str, list[int]]]:
    """This process's scores in a form execnet can send (lists, not tuples)."""
    return {corpus: {name: list(score) for name, score in SCORES[corpus].items()} for corpus in CORPORA}


def merge(sent: Mapping[str, Mapping[str, list[int]]]) -> None:
    """Add a worker's scores to this process's."""
    for corpus in CORPORA:
        SCORES[corpus].update({name: (good, total) for name, (good, total) in sent.get(corpus, {}).items()})


def summary_lines() -> list[str]:
    """One line per corpus that ran: scenarios reproduced in full, and steps."""
    lines = []
    for corpus in CORPORA:
        scores = SCORES[corpus]
        if not scores:
            continue
        passing = sum(1 for good, total in scores.values() if good == total)
        good = sum(g for g, _ in scores.values())
        total = sum(t for _, t in scores.values())
        lines.append(f"{corpus} fidelity: {passing}/{len(scores)} scenarios, {good}/{total} steps")
    return lines
