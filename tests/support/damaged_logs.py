"""Copies of the fixture run's evidence logs damaged the ways a student's log gets damaged (edited, cut by a crash,
emptied), for the tests of what the report and `hivedlab check` say about them in each language."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.support import forge

Damage = Callable[[Path], None]


def broken_chain(log: Path) -> None:
    """seq 2 edited in place, seq 4 taken out, and a cut line at the end: four warnings."""
    lines = log.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"expect":"accepted"', b'"expect":"rejected"')
    del lines[4]
    log.write_bytes(b"".join([*lines, lines[-1][:40]]))


def cut_last_record(log: Path) -> None:
    log.write_bytes(log.read_bytes() + b'{"kind":"object","prev":"5e4b')


def orphan_pod_events(log: Path) -> None:
    """A scheduler event of a pod the log never holds, re-sealed so that the chain is intact."""
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    event = json.loads(json.dumps(next(r for r in records if r.get("watch", {}).get("resource") == "events")))
    event["watch"]["object"]["involvedObject"].update(uid="stranger-uid", name="stranger")
    forge.write(log, [*records[:-1], event, records[-1]])


def edited_and_mixed(log: Path) -> None:
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    records[3]["source"] = "k8s"
    lines = forge.write(log, records).read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join([*lines[:6], b"hello\n", *lines[6:]]))


def lines_put_in(log: Path, count: int = 6) -> None:
    """`count` lines that are not records put into the log after its first record: one warning each."""
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join([lines[0], *[b"hello\n"] * count, *lines[1:]]))


def no_config(log: Path) -> None:
    """No config-switch record in the log and no HiveD config in the run directory: no VC boundaries to draw."""
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    forge.write(log, [r for r in records if (r.get("action") or {}).get("type") != "config-switch"])
    shutil.rmtree(log.parents[2] / "hived")


def emptied(log: Path) -> None:
    log.write_bytes(b"")


def plan_renamed(log: Path, experiment: str = "no-such-plan") -> None:
    """The log's plan record names `experiment` (a plan the lab does not have), re-sealed."""
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    records[0]["action"]["experiment"] = experiment
    forge.write(log, records)
