"""The second job of kubeflow-gang placed as on a sped-up rehearsal cluster: copies of the recorded logs of
`tests/fixtures/rehearsal-recorded/kubeflow-gang-k8s` whose records of the second job's pods are moved and re-sealed
(`tests.support.forge`), for the `while` premise of the gang-start rules (`checker/judging/rules/contrast.py`).

Recorded: job1 (`tfjob-gang-1-…`) holds its three workers' GPUs; job2's (`tfjob-gang-2-…`) pods are created while it
runs. Under the default scheduler ps-0 and worker-0 bind at once and worker-1 waits until job1's workers end (a
partial start); under kube-batch all three wait and bind in one session once they end. The edits (`HOW`):

- `after`: job2's pods appear only after job1's workers ended (as when tf-operator creates them late, or the first
  job's training is over before the second job's pods are placed), each reported waiting, then all bound in one
  round: the run never has job2 beside a running job1;
- `beside`: job2's pods are created where they were, beside the running job1, each reported waiting, and all bound
  in one round once job1's workers ended (under the default scheduler: a default scheduler acting as a gang).

Every moved record is retimed into the gap it lands in, and the times it carries (creation, event times) with it.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from datetime import datetime, timedelta
from typing import Any

from tests.support import forge
from tests.support.paths import FIXTURES

RECORDED = FIXTURES / "rehearsal-recorded" / "kubeflow-gang-k8s" / "contrast"
JOB1, JOB2 = "tfjob-gang-1-", "tfjob-gang-2-"
HOW = ("after", "beside")
WAITS = ("FailedScheduling", "Unschedulable")
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
Rec = dict[str, Any]


def recorded(scheduler: str) -> list[Rec]:
    """The recorded log of the kubeflow-gang run under `scheduler` (default or kube-batch)."""
    log = RECORDED / f"kubeflow-gang@{scheduler}" / "evidence.jsonl"
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def _pod_name(record: Rec) -> str | None:
    name = ((forge.pod(record) or {}).get("metadata") or {}).get("name")
    return str(name) if name else None  # a bookmark holds no pod


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _shifted(value: str, delta: timedelta) -> str:
    moved = _at(value) + delta
    whole = "." not in value
    return moved.strftime("%Y-%m-%dT%H:%M:%S" + ("" if whole else ".%f")) + "Z"


def _retimed(record: Rec, when: datetime) -> Rec:
    """The record at `when`, every time it carries moved by as much (creationTimestamp, an event's times)."""
    delta = when - _at(record["time"])

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return _shifted(node, delta) if isinstance(node, str) and STAMP.match(node) else node

    return {**record, "time": _shifted(record["time"], delta), "watch": walk(record["watch"])}


def _wait_for(template: Rec, pod: Rec) -> Rec:
    """A copy of the wait event `template` about `pod` instead (its name and uid)."""
    record = copy.deepcopy(template)
    event, meta = record["watch"]["object"], pod["metadata"]
    event["involvedObject"].update(name=meta["name"], uid=meta["uid"])
    event["metadata"].update(name=f"{meta['name']}.{uuid.uuid5(uuid.NAMESPACE_URL, meta['uid']).hex[:16]}",
                             uid=str(uuid.uuid5(uuid.NAMESPACE_URL, "wait/" + meta["uid"])))
    return record


def _spread(block: list[Rec], start: str, end: str) -> list[Rec]:
    """The records retimed evenly into the open interval (start, end)."""
    t0 = _at(start)
    step = (_at(end) - t0) / (len(block) + 1)
    return [_retimed(record, t0 + step * (i + 1)) for i, record in enumerate(block)]


def _first_phase(records: list[Rec], name: str, phase: str) -> int:
    return next(i for i, r in enumerate(records) if _pod_name(r) == name
                and forge.pod_of(r)["status"].get("phase") == phase)


def _first_bind(records: list[Rec], name: str) -> int:
    return next(i for i, r in enumerate(records) if _pod_name(r) == name and forge.pod_of(r)["spec"].get("nodeName"))


def second_job(records: list[Rec], how: str) -> list[Rec]:
    """The log with job2's pods placed as `how` says (`HOW`); the caller re-seals it (`forge.write`)."""
    assert how in HOW, how
    records = copy.deepcopy(records)
    pods = list(dict.fromkeys(n for r in records if (n := _pod_name(r)) is not None))
    job2 = [n for n in pods if n.startswith(JOB2)]
    workers1 = [n for n in pods if n.startswith(JOB1) and "-worker-" in n]
    ended = max(_first_phase(records, name, "Succeeded") for name in workers1)  # job1's workers all ended
    trained = min(_first_phase(records, name, "Succeeded") for name in job2 if "-worker-" in name)
    round_at = max(_first_bind(records, name) for name in job2)  # the record that bound job2's last pod
    assert ended < round_at, "not the recorded log: job2 was bound whole before job1's workers ended"
    moved = [i for i, r in enumerate(records) if i < trained and (_pod_name(r) in job2 or forge.involved(r) in job2)]
    created = {name: next(i for i in moved if _pod_name(records[i]) == name) for name in job2}
    waits = [i for i in moved if records[i]["watch"]["object"].get("reason") in WAITS]
    pending = [i for i in moved if forge.pod(records[i]) is not None and i not in created.values()
               and not forge.pod_of(records[i])["spec"].get("nodeName")]
    template = records[waits[0]]
    waited = {forge.involved(records[i]) for i in waits}
    added = {name: [records[i]] + ([] if name in waited else [_wait_for(template, forge.pod_of(records[i]))])
             for name, i in created.items()}
    early = sorted([*waits, *pending])
    late = [records[i] for i in moved if i not in {*created.values(), *early}]
    if how == "after":
        kept = [(float(i), r) for i, r in enumerate(records) if i not in set(moved)]
        block = [r for name in job2 for r in added[name]] + [records[i] for i in early] + late
    else:
        kept = [(float(i), r) for i, r in enumerate(records) if i not in set(moved) or i in early]
        kept += [(created[name] + k / 10, _retimed(r, _at(records[created[name]]["time"]))) for name in job2
                 for k, r in enumerate(added[name])]
        kept.sort(key=lambda pair: pair[0])
        block = late
    at = max(k for k, (i, _) in enumerate(kept) if i < round_at)
    start, end = kept[at][1]["time"], kept[at + 1][1]["time"]
    return [r for _, r in kept[:at + 1]] + _spread(block, start, end) + [r for _, r in kept[at + 1:]]
