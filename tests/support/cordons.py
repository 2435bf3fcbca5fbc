"""Cordons in a recorded run: a copy of `tests/fixtures/rehearsal-recorded/smoke-not-ready` whose Node records of
hostname-dan are edited to show a cordon, then re-sealed (`tests.support.forge`), as the watcher would have recorded
`kubectl cordon` / `uncordon` on that cluster.

What the watcher records of a cordon (`hivedlab.backends.watcher`): the MODIFIED Node in which `spec.unschedulable`
turned true (the node lifecycle controller adds the `node.kubernetes.io/unschedulable` taint a moment later, an update
that changes nothing the watcher follows and is not recorded), then the one in which `kubectl uncordon` removed the
field, which still carries that taint (the controller removes it a moment later, unrecorded again).

The recorded log: hostname-dan listed Ready (seq 9), NotReady at seq 64 and Ready again at seq 100, while bob's pod ran
on it (tests/fixtures/rehearsal-recorded/README.md). The edits (`HOW`):

- `mid-run`: cordoned instead of NotReady: seq 64 keeps Ready True and sets `spec.unschedulable`, seq 100 clears it;
- `open`: cordoned at seq 64 as above, never uncordoned: record 100 (Ready again, nothing for a cordon) is dropped;
- `throughout`: cordoned (with the taint) in every record of hostname-dan from its listing on; NotReady as recorded;
- `drained`: NotReady and cordoned together (a node drained while it failed): seq 64 sets `spec.unschedulable` beside
  Ready False, seq 100 clears both.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

from tests.support import forge
from tests.support.paths import FIXTURES

RECORDED = FIXTURES / "rehearsal-recorded" / "smoke-not-ready"
LOG = Path("experiments") / "smoke" / "evidence.jsonl"
NODE = "hostname-dan"
HOW = ("mid-run", "open", "throughout", "drained")
TAINT_KEY = "node.kubernetes.io/unschedulable"
Rec = dict[str, Any]


def node_of(record: Rec) -> Rec | None:
    """The Node a record holds when it is one of hostname-dan's."""
    watch = record.get("watch") or {}
    obj = watch.get("object") or {}
    return obj if watch.get("resource") == "nodes" and (obj.get("metadata") or {}).get("name") == NODE else None


def _node(record: Rec) -> Rec:
    node = node_of(record)
    assert node is not None, f"record {record.get('seq')} holds no Node of {NODE}"
    return node


def _taint(record: Rec) -> Rec:
    """The taint the node lifecycle controller adds to a cordoned node (its `timeAdded`: the record's second)."""
    return {"effect": "NoSchedule", "key": TAINT_KEY, "timeAdded": record["time"][:19] + "Z"}


def _ready(record: Rec) -> str:
    return str(next(c["status"] for c in _node(record)["status"]["conditions"] if c["type"] == "Ready"))


def _edited(records: list[Rec], how: str) -> list[Rec]:
    records = copy.deepcopy(records)
    dan = [r for r in records if node_of(r) is not None]
    listed, down, up = dan[0], next(r for r in dan if _ready(r) == "False"), dan[-1]
    assert (listed["watch"]["type"], _ready(listed), _ready(up)) == ("LISTED", "True", "True"), "not the recorded log"
    if how == "throughout":
        for record in dan:
            _node(record)["spec"] = {"unschedulable": True, "taints": [_taint(listed)]}
        return records
    cordon, uncordon = _node(down), _node(up)
    cordon["spec"] = {**cordon.get("spec", {}), "unschedulable": True}
    uncordon["spec"] = {**uncordon.get("spec", {}), "taints": [_taint(down)]}  # the field gone, the taint not yet
    if how in ("mid-run", "open"):
        cordon["status"] = copy.deepcopy(_node(listed)["status"])  # Ready as when listed
    return [r for r in records if r is not up] if how == "open" else records


def cordoned_run(target: Path, how: str) -> Path:
    """The recorded run copied to `target` (its recorded verdicts, claims and report left out), hostname-dan's Node
    records edited as `how` says (`HOW`), the log re-sealed."""
    assert how in HOW, how
    shutil.copytree(RECORDED, target)
    for stale in (*target.rglob("verdicts.json"), target / "claims.json", target / "report.md"):
        stale.unlink(missing_ok=True)
    log = target / LOG
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    forge.write(log, _edited(records, how))
    return target
