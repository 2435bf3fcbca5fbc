"""Wrong-behaviour logs made the way a forger would: an honest simulator log, edited, then re-sealed.

The chain is documented (docs/architecture.md), so re-sealing takes a few lines; the checker must judge the
behaviour, not the seal.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hivedlab.evidence import record_hash
from hivedlab.models.hived.annotations import BIND_INFO, LEAF_CELL_ISOLATION
from tests.support.paths import FIXTURES

LOGS = FIXTURES / "logs"
Rec = dict[str, Any]


def load(name: str) -> list[Rec]:
    return [json.loads(line) for line in (LOGS / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def reseal(records: Iterable[Rec]) -> list[Rec]:
    """Renumber and recompute the chain, as anyone can."""
    result, prev = [], "0" * 64
    for seq, record in enumerate(records):
        record = {k: v for k, v in record.items() if k != "hash"}
        record.update(seq=seq, prev=prev)
        record["hash"] = prev = record_hash(record)
        result.append(record)
    return result


def write(path: Path, records: Iterable[Rec]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in reseal(records)), encoding="utf-8")
    return path


def pod(record: Rec) -> Rec | None:
    watch = record.get("watch") or {}
    return watch.get("object") if watch.get("resource") == "pods" else None


def pod_of(record: Rec) -> Rec:
    """The pod of a record known to hold one (fails the test on any other record)."""
    obj = pod(record)
    assert obj is not None, f"record {record.get('seq')} holds no pod"
    return obj


def uid_of(record: Rec) -> str | None:
    obj = pod(record)
    return obj["metadata"]["uid"] if obj else None


def involved(record: Rec) -> str | None:
    watch = record.get("watch") or {}
    if watch.get("resource") != "events":
        return None
    return (watch["object"].get("involvedObject") or {}).get("name")


def uid_with(records: list[Rec], name_suffix: str, node: str | None = None) -> str:
    """The uid of the first pod whose name ends with `name_suffix` (and, given `node`, bound there)."""
    for record in records:
        obj = pod(record)
        if obj and obj["metadata"]["name"].endswith(name_suffix) and (
                node is None or obj["spec"].get("nodeName") == node):
            return str(obj["metadata"]["uid"])
    raise LookupError(name_suffix)


def rebind(records: list[Rec], uid: str, node: str, gpus: str) -> list[Rec]:
    """Every record of the pod `uid` says it was bound to `node`, leaf cells `gpus` ("0" or "0,1")."""
    result = []
    for record in records:
        if uid_of(record) == uid and pod_of(record)["spec"].get("nodeName"):
            record = copy.deepcopy(record)
            obj = pod_of(record)
            old, obj["spec"]["nodeName"] = obj["spec"]["nodeName"], node
            annotations = obj["metadata"]["annotations"]
            annotations[LEAF_CELL_ISOLATION] = gpus
            if BIND_INFO in annotations:
                annotations[BIND_INFO] = annotations[BIND_INFO].replace(old, node)
        result.append(record)
    return result


def drop(records: list[Rec], unwanted: Callable[[Rec], bool]) -> list[Rec]:
    return [r for r in records if not unwanted(r)]


def finish(records: list[Rec], uid: str, before: int) -> list[Rec]:
    """The pod `uid` ends with exit code 0 (MODIFIED Succeeded, then DELETED) just before record index `before`."""
    last = copy.deepcopy([r for r in records if uid_of(r) == uid][-1])
    obj = pod_of(last)
    obj["metadata"].pop("deletionTimestamp", None)
    obj["status"]["phase"] = "Succeeded"
    for status in obj["status"].get("containerStatuses") or []:
        started = ((status.get("state") or {}).get("running") or {}).get("startedAt", last["time"])
        status["state"] = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started,
                                          "finishedAt": records[before]["time"]}}
    modified = {**last, "time": records[before]["time"], "watch": {**last["watch"], "type": "MODIFIED"}}
    deleted = copy.deepcopy(modified)
    deleted["watch"]["type"] = "DELETED"
    return [*records[:before], modified, deleted, *records[before:]]


def postpone_release(records: list[Rec]) -> list[Rec]:
    """The first pod whose GPU another pod gets later never lets go: its terminal and DELETED records move to just
    before the end record, after the other pod's bind (two pods on one GPU)."""
    bound: dict[str, tuple[str, str]] = {}  # uid -> (node, gpus)
    for record in records:
        obj = pod(record)
        if obj and obj["spec"].get("nodeName") and obj["metadata"]["uid"] not in bound:
            annotations = obj["metadata"].get("annotations") or {}
            bound[obj["metadata"]["uid"]] = (obj["spec"]["nodeName"], annotations.get(LEAF_CELL_ISOLATION, ""))
    order = list(bound)
    holder = next(uid for index, uid in enumerate(order) if bound[uid] in [bound[u] for u in order[index + 1:]])

    def releases(record: Rec) -> bool:
        obj = pod(record)
        return bool(obj and obj["metadata"]["uid"] == holder and (
            record["watch"]["type"] == "DELETED" or obj["status"].get("phase") in ("Succeeded", "Failed")))

    moved = [r for r in records if releases(r)]
    kept = [r for r in records if not releases(r)]
    end = next(i for i, r in enumerate(kept) if (r.get("action") or {}).get("type") == "end")
    for record in moved:
        record["time"] = kept[end]["time"]
    return [*kept[:end], *moved, *kept[end:]]


def bind_while_waiting(records: list[Rec], uid: str) -> list[Rec]:
    """The pod `uid`'s first bind record moves to just after its first FailedScheduling event, with that event's
    time: it is bound while it waited (while the pod it waited for still held its cells)."""
    bind = next(i for i, r in enumerate(records) if uid_of(r) == uid and (pod(r) or {})["spec"].get("nodeName"))
    name = (pod(records[bind]) or {})["metadata"]["name"]
    wait = next(i for i, r in enumerate(records) if involved(r) == name and r["watch"]["object"].get("reason")
                == "FailedScheduling")
    moved = {**records[bind], "time": records[wait]["time"]}
    kept = [r for i, r in enumerate(records) if i != bind]
    at = wait + 1 if wait < bind else wait
    return [*kept[:at], moved, *kept[at:]]


def check(cli: Callable[..., Any], path: Path) -> dict[str, Any]:
    """`hivedlab check PATH --format json` run in process (the `cli` fixture): the verdict, as JSON."""
    result = cli("check", str(path), "--format", "json")
    assert result.code in (0, 1, 3), result.err
    verdict: dict[str, Any] = json.loads(result.out)
    return verdict


def answer(verdict: dict[str, Any], rule: str) -> dict[str, Any]:
    """The answer of rule `rule` in a verdict."""
    found: dict[str, Any] = next(a for a in verdict["answers"] if a["rule"] == rule)
    return found
