"""True reasons: preemption seen without its event, rules over every attempt, and fall-throughs that state how the
log ends instead of guessing (forged logs: honest simulator logs edited and re-sealed, tests/support/forge.py)."""

from __future__ import annotations

import json
from pathlib import Path

from hivedlab.checker.judging.rules.rule_base import Context
from hivedlab.checker.judging.rules.vc import sequential
from hivedlab.checker.judging.timeline import Attempt, JobTimeline, Mark, Timeline
from hivedlab.plans.rule_params import Jobs
from tests.checker.judging.test_exclusivity import default_vc_on_opportunistic_gpu
from tests.support import forge

C, X, Q = "consistent", "inconsistent", "inconclusive"


def _reason(record: forge.Rec) -> str | None:
    watch = record.get("watch") or {}
    return watch["object"].get("reason") if watch.get("resource") == "events" else None


def _everything(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False)


def test_preemption_without_the_event_is_seen(cli, tmp_path: Path) -> None:
    """Events expire and fall into watch gaps: deletion while running, then a re-created pod, is preemption."""
    for name, rule in (("from-simulator-priority.jsonl", "high-preempts-low"),
                       ("from-simulator-opportunistic.jsonl", "guest-preempts-oppo")):
        records = forge.drop(forge.load(name), lambda r: _reason(r) == "Preempted")
        data = forge.check(cli, forge.write(tmp_path / name, records))
        assert data["verdict"] == C, _everything(data)
        answer = forge.answer(data, rule)
        assert "no Preempted event" in answer["answer"]["en"] and "re-created" in answer["answer"]["en"]
        assert "没有 Preempted 事件" in answer["answer"]["zh"]


def test_victim_never_recreated_is_not_called_unpreempted(cli, tmp_path: Path) -> None:
    records = forge.load("from-simulator-priority.jsonl")
    victim = forge.uid_with(records, "-train-0", node="hostname-dan")
    name = next(forge.pod_of(r)["metadata"]["name"] for r in records if forge.uid_of(r) == victim)
    retry = {forge.uid_of(r) for r in records
             if forge.pod(r) and forge.pod_of(r)["metadata"]["name"] == name} - {victim}
    assert retry
    created = min(r["seq"] for r in records if forge.uid_of(r) in retry)
    records = forge.drop(records, lambda r: forge.uid_of(r) in retry
                         or (forge.involved(r) == name and r["seq"] > created))
    data = forge.check(cli, forge.write(tmp_path / "log.jsonl", records))
    preempts = forge.answer(data, "high-preempts-low")
    assert preempts["verdict"] == C
    assert "nothing was preempted" not in _everything(data)
    retried = next(a for a in data["answers"] if a["kind"] == "retried-after")
    assert retried["verdict"] == X
    assert "event Preempted" in retried["answer"]["en"] and "not re-created" in retried["answer"]["en"]


def test_no_preemption_at_all_names_what_happened(cli, tmp_path: Path) -> None:
    data = forge.check(cli, forge.write(tmp_path / "log.jsonl", default_vc_on_opportunistic_gpu()))
    answer = forge.answer(data, "guest-preempts-oppo")
    assert answer["verdict"] == X
    assert "never preempted" in answer["answer"]["en"] and answer["evidence"]
    assert "did not finish" not in _everything(data) and "没有运行到最后" not in _everything(data)


def test_a_cut_log_says_how_it_ends(cli, tmp_path: Path) -> None:
    records = forge.load("from-simulator-priority.jsonl")
    high_submitted = next(r["seq"] for r in records if (r.get("action") or {}).get("job") == "high")
    cut = forge.check(cli, forge.write(tmp_path / "cut.jsonl", records[:high_submitted + 3]))
    answer = forge.answer(cut, "high-preempts-low")
    assert answer["verdict"] == Q
    assert any("no end record" in m["en"] for m in answer["missing"])
    ended = records[:high_submitted + 3] + [r for r in records if (r.get("action") or {}).get("type") == "end"]
    data = forge.check(cli, forge.write(tmp_path / "ended.jsonl", ended))
    assert "no end record" not in _everything(data) and "did not finish" not in _everything(data)


def _mark(seq: int) -> Mark:
    return Mark(seq, "", float(seq))


def _run(pod: str, uid: str, start: int, end: int, **extra: object) -> Attempt:
    return Attempt(pod, uid, "train", 0, created=_mark(start - 1), bound=_mark(start), node="n1", gpus=(0,),
                   started=_mark(start), **extra)  # type: ignore[arg-type]


def test_sequential_looks_at_every_attempt() -> None:
    """Job a's first attempt is preempted silently; its re-created attempt overlaps job b on the same machine."""
    first = _run("a-0", "u1", 2, 5, deleted=_mark(5), released=_mark(6), recreated=_mark(7))
    again = _run("a-0", "u2", 8, 20, terminated=_mark(20), exit_code=0)
    other = _run("b-0", "u3", 10, 15, terminated=_mark(15), exit_code=0)
    jobs = (JobTimeline("fa", "x", "alice", "a", "vc1", attempts=(first, again), first_seen=_mark(1)),
            JobTimeline("fb", "x", "bob", "b", "vc1", attempts=(other,), first_seen=_mark(9)))
    assert first.outcome == "preempted"
    timeline = Timeline("vc-safety", "sim", "sim", None, {}, jobs)
    outcome = sequential(Context(timeline, "sim", True), Jobs(("x",)))
    assert outcome.verdict == X, outcome.answer.en
    assert "b ran on the same machine before alice's a ended" in outcome.answer.en
