"""The evidence log: what is written is read back, and any edit, reorder, cut or gap is detected."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from hivedlab.evidence import (
    ZERO_HASH,
    EvidenceError,
    EvidenceWriter,
    canonical_json,
    decode_line,
    format_time,
    iter_evidence,
    parse_time,
    read_evidence,
    record_hash,
)
from tests.support.records import action_of, object_of

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u1", "resourceVersion": "7"}}


def _write(path: Path, n: int = 5) -> list[dict]:
    out = []
    with EvidenceWriter(path, "k8s") as writer:
        out.append(writer.write_action("plan", {"experiment": "gang"}, time="2026-01-01T00:00:00.000000Z"))
        for i in range(1, n):
            pod = json.loads(json.dumps(POD))
            pod["metadata"]["resourceVersion"] = str(i)
            pod["metadata"]["annotations"] = {"note": "作业 ü"}
            out.append(writer.write_object("MODIFIED", "pods", pod))
    return out


def test_round_trip_and_chain(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    written = _write(path)
    log = read_evidence(path)
    assert log.chain_ok and log.first_broken_seq is None and log.warnings == ()
    assert [r.seq for r in log.records] == [0, 1, 2, 3, 4]
    assert log.records[0].prev == ZERO_HASH and log.records[0].action_type == "plan"
    assert log.records[1].prev == written[0]["hash"]
    assert object_of(log.records[2])["metadata"]["annotations"]["note"] == "作业 ü"
    assert all(r.hash == record_hash(w) for r, w in zip(log.records, written, strict=True))
    assert log.sources == ("k8s",)


def test_hash_is_over_canonical_json(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _write(path, 2)
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    body = {k: v for k, v in first.items() if k != "hash"}
    import hashlib

    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert hashlib.sha256(text.encode()).hexdigest() == first["hash"] == record_hash(first)
    assert canonical_json(first) == text


def test_reserialised_log_still_verifies(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _write(path)
    lines = [json.dumps(json.loads(x), indent=None) for x in path.read_text(encoding="utf-8").splitlines()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert read_evidence(path).chain_ok


def _edit(path: Path, index: int, fn) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines = fn(lines, index)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_edited_record_detected(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _write(path)

    def change(lines, i):
        lines[i] = lines[i].replace('"resourceVersion":"2"', '"resourceVersion":"9"')
        return lines

    _edit(path, 2, change)
    log = read_evidence(path)
    assert not log.chain_ok and log.first_broken_seq == 2
    assert any("altered" in w for w in log.warnings)


def test_reordered_records_detected(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _write(path)
    _edit(path, 2, lambda lines, i: lines[:i] + [lines[i + 1], lines[i]] + lines[i + 2 :])
    log = read_evidence(path)
    assert not log.chain_ok and log.first_broken_seq == 3


def test_deleted_record_detected(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _write(path)
    _edit(path, 2, lambda lines, i: lines[:i] + lines[i + 1 :])
    log = read_evidence(path)
    assert not log.chain_ok and log.first_broken_seq == 3


def test_truncated_log_reads_to_last_whole_record(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _write(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    log = read_evidence(path)
    assert [r.seq for r in log.records] == [0, 1, 2, 3]
    assert log.chain_ok
    assert len(log.warnings) == 1 and "cut record" in log.warnings[0]


def test_resume_after_crash_continues_chain(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _write(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    with EvidenceWriter(path, "k8s") as writer:
        assert writer.next_seq == 4
        writer.write_action("plan", {"experiment": "gang", "resumed": True})
    log = read_evidence(path)
    assert [r.seq for r in log.records] == [0, 1, 2, 3, 4]
    assert log.chain_ok and log.records[-1].action_type == "plan"
    assert any("cut by a crash" in w for w in log.warnings)


@pytest.mark.parametrize("first", [("plan", {"experiment": "gang", "resumed": True}),
                                   ("watch", {"event": "started", "resource": "pods", "resource_version": "9"})])
def test_a_cut_line_before_the_record_that_opens_the_next_session_is_a_crash(tmp_path: Path, first) -> None:
    """A real backend's watcher notes that it started before the runner's plan record: either opens a session."""
    path = tmp_path / "e.jsonl"
    _write(path, 3)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"seq": 3, "ti')
    with EvidenceWriter(path, "k8s") as writer:
        writer.write_action(*first)
    log = read_evidence(path)
    assert log.chain_ok and [w for w in log.warnings if "line 4" in w] == [
        "line 4: not a JSON record (a record cut by a crash; the session after it resumed the log)"]


@pytest.mark.parametrize("inserted", ['{"seq": 3, "ti', "[" * 200_000 + "]" * 200_000, "42", "{}", "\x00\x01",
                                      '["a", "list"]'])
def test_any_other_line_that_is_not_a_record_is_an_edit(tmp_path: Path, inserted: str) -> None:
    """Between two records of one session nothing but records belongs: an inserted line breaks the chain there."""
    path = tmp_path / "e.jsonl"
    lines = [json.dumps(r, ensure_ascii=False) for r in _write(path, 5)]
    path.write_text("\n".join([*lines[:3], inserted, *lines[3:]]) + "\n", encoding="utf-8")
    log = read_evidence(path)
    assert [r.seq for r in log.records] == [0, 1, 2, 3, 4]
    assert not log.chain_ok and log.first_broken_seq == 3
    assert any(w.startswith("line 4: ") for w in log.warnings)


def test_of_several_bad_lines_at_the_end_only_the_last_is_a_crash_cut(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _write(path, 3)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("inserted\n" + '{"seq": 3, "ti')
    log = read_evidence(path)
    assert not log.chain_ok and log.first_broken_seq == 3
    assert any("line 4" in w and "edited" in w for w in log.warnings)
    assert any("line 5" in w and "cut record" in w for w in log.warnings)


def test_resume_with_other_source_refused(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _write(path, 2)
    with pytest.raises(EvidenceError, match="cannot be continued"):
        EvidenceWriter(path, "sim")


def test_not_json_lines_never_raises(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\x89PNG\r\n\x1a\nhello\n[1,2]\n")
    log = read_evidence(path)
    assert log.records == () and not log.chain_ok and log.warnings


def test_missing_file_is_unreadable_not_raised(tmp_path: Path) -> None:
    log = read_evidence(tmp_path / "none.jsonl")
    assert log.unreadable and "cannot read" in log.unreadable and not log.chain_ok


def test_iter_evidence_streams(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _write(path)
    stream = iter_evidence(path)
    seqs = [r.seq for r in stream]
    assert seqs == [0, 1, 2, 3, 4] and stream.chain_ok and stream.count == 5


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(EvidenceError):
        EvidenceWriter(tmp_path / "e.jsonl", "kube")
    with EvidenceWriter(tmp_path / "e.jsonl", "sim") as writer:
        with pytest.raises(EvidenceError):
            writer.write_object("CHANGED", "pods", {})
        with pytest.raises(EvidenceError):
            writer.write_action("launch", {})


def test_time_format_and_parse() -> None:
    dt = datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=timezone(timedelta(hours=8)))
    assert format_time(dt) == "2026-01-01T19:04:05.000678Z"
    assert parse_time("2026-01-01T19:04:05Z") == datetime(2026, 1, 1, 19, 4, 5, tzinfo=timezone.utc)
    tenth = parse_time("2026-01-01T19:04:05.1Z")
    assert tenth is not None and tenth.microsecond == 100000
    assert parse_time("yesterday") is None and parse_time(None) is None


@pytest.mark.parametrize("text", ["2026-01-01T08:00:01.905803Z", "2026-01-01 08:00:01.905803Z",
                                  "2026-01-01T08:00:01,905803Z", "2026-01-01T08:00:01.9058031Z",
                                  "2026-01-01T08+01:00.123456Z", "2026-13-01T08:00:01.905803Z"])
def test_our_time_format_reads_as_any_rfc3339_time(text: str) -> None:
    """The fast path for the recorder's own format gives what the general one gives (the same time with +00:00)."""
    parsed, general = parse_time(text), parse_time(text[:-1] + "+00:00")
    assert parsed == general and (parsed is None or parsed.tzinfo is timezone.utc)
    assert (parsed is None) == ("13-" in text or "+01" in text)


def test_written_records_match_the_schema(tmp_path: Path) -> None:
    import jsonschema

    from hivedlab.basics.resources import SCHEMAS

    schema = json.loads((SCHEMAS / "evidence-record.schema.json").read_text(encoding="utf-8"))
    path = tmp_path / "e.jsonl"
    with EvidenceWriter(path, "sim") as writer:
        writer.write_action("plan", {"experiment": "gang", "plan": "labs/experiments/gang.yaml", "cluster": "sim"})
        writer.write_action("config-switch", {"name": "one-vc", "text": "physicalCluster: {}\n"})
        writer.write_action(
            "submit",
            {"user": "alice", "job": "gang", "job_name": "job-config-6-alice-1", "framework_name": "0" * 32,
             "protocol": "name: x\n", "reply": {"status": 202, "body": {"message": "ok"}}},
        )
        writer.write_object("ADDED", "pods", POD)
        writer.write_object("DELETED", "pods", POD, synthetic=True)
        writer.write_action("watch", {"event": "listed", "resource": "pods", "resource_version": "12"})
        writer.write_action("end", {"status": "finished"})
    validator = jsonschema.Draft202012Validator(schema)
    for line in path.read_text(encoding="utf-8").splitlines():
        assert not list(validator.iter_errors(json.loads(line))), line
    bad = json.loads(path.read_text(encoding="utf-8").splitlines()[2])
    del bad["action"]["reply"]
    assert list(validator.iter_errors(bad))


def test_refuses_to_append_to_a_non_log(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my lab notes\n", encoding="utf-8")
    with pytest.raises(EvidenceError, match="not an evidence log"):
        EvidenceWriter(path, "k8s")
    assert path.read_text(encoding="utf-8") == "my lab notes\n"


def test_concurrent_writers_threads_keep_the_chain(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "e.jsonl"
    with EvidenceWriter(path, "k8s") as writer:
        threads = [threading.Thread(target=lambda: [writer.write_object("ADDED", "pods", POD) for _ in range(50)])
                   for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    log = read_evidence(path)
    assert log.chain_ok and len(log.records) == 200


# -- logs of more than one session (a resumed real run) ---------------------------------------------------------------


def _resumed_copy(original: Path, copy: Path, cut: int) -> None:
    """`original` as a run resumed after record `cut` would have written it: session 1 ends (interrupted), session 2
    repeats the plan and the config, restates what was submitted (the backend's `resumed` reply), then goes on."""
    records = read_evidence(original).records
    head, tail = records[:cut], records[cut:]
    plan = next(action_of(r) for r in records if r.action_type == "plan")
    config = next(action_of(r) for r in records if r.action_type == "config-switch")
    with EvidenceWriter(copy, records[0].source) as writer:
        for record in head:
            _rewrite(writer, record)
        at = head[-1].time
        writer.write_action("end", {"status": "interrupted", "reason": "interrupted by the user"}, time=at)
    with EvidenceWriter(copy, records[0].source) as writer:  # a new session: the chain goes on from the file
        writer.write_action("plan", {**{k: v for k, v in plan.items() if k != "type"}, "resumed": True}, time=at)
        writer.write_action("config-switch", {k: v for k, v in config.items() if k != "type"}, time=at)
        for record in head:
            if record.action_type == "submit" and 200 <= action_of(record)["reply"]["status"] < 300:
                restated = {k: v for k, v in action_of(record).items() if k != "type"}
                restated["reply"] = {"status": 202, "body": {"status": 202, "message": "already submitted by this run",
                                                             "resumed": True}}
                writer.write_action("submit", restated, time=at)
        for record in tail:
            _rewrite(writer, record)


def _rewrite(writer: EvidenceWriter, record) -> None:
    if record.kind == "action":
        writer.write_action(record.action_type, {k: v for k, v in action_of(record).items() if k != "type"},
                            time=record.time)
    else:
        writer.write_object(record.watch_type, record.resource, record.object, time=record.time,
                            synthetic=record.synthetic)


def _judged(path: Path) -> dict:
    from hivedlab.checker.judging.judge import judge_file

    result = judge_file(path)
    # the records an answer cites are numbered differently in the two logs; everything else must be the same
    answers = [(a.rule, a.verdict, re.sub(r"\brecords? [\d, ]+", "record N", a.answer.en)) for a in result.answers]
    return {"verdict": result.verdict, "answers": answers,
            "end": result.timeline.end_status, "sessions": result.timeline.sessions}


@pytest.mark.parametrize("experiment", ["vc-safety", "priority", "opportunistic", "gang", "incremental"])
def test_a_log_of_two_sessions_is_judged_as_one_session(tmp_path: Path, experiment: str) -> None:
    from hivedlab.backends.sim import SimCluster
    from hivedlab.lab_group.inventory import load_inventory
    from hivedlab.plans.loader import load_plan
    from hivedlab.runner import RunContext, experiment_seed, run_experiments

    ctx = RunContext(tmp_path / "run", "sim", 1, load_inventory(), "s1")
    run_experiments([load_plan(experiment)], lambda plan, w: SimCluster(w, experiment_seed(1, plan.id)), ctx)
    original = tmp_path / "run" / "experiments" / experiment / "evidence.jsonl"
    submits = [r.seq for r in read_evidence(original).records if r.action_type == "submit"]
    resumed = tmp_path / "resumed.jsonl"
    _resumed_copy(original, resumed, cut=submits[-1] + 3)
    log = read_evidence(resumed)
    assert log.chain_ok and log.warnings == () and [r.seq for r in log.records] == list(range(len(log.records)))
    one, two = _judged(original), _judged(resumed)
    assert one["verdict"] == "consistent" and (one["sessions"], two["sessions"]) == (1, 2)
    assert {k: v for k, v in two.items() if k != "sessions"} == {k: v for k, v in one.items() if k != "sessions"}


def test_a_session_without_an_end_record_is_not_taken_as_finished(tmp_path: Path) -> None:
    from hivedlab.checker.judging.timeline import build_timeline

    path = tmp_path / "e.jsonl"
    with EvidenceWriter(path, "k8s") as writer:
        writer.write_action("plan", {"experiment": "gang"})
        writer.write_action("end", {"status": "finished"})
        writer.write_action("plan", {"experiment": "gang"})  # resumed, then killed before its end record
    timeline = build_timeline(read_evidence(path).records)
    assert timeline.sessions == 2 and timeline.end_status is None and timeline.experiments_seen == ("gang",)


def test_a_resumed_log_cut_by_a_crash_chains_on_from_the_last_whole_record(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    written = _write(path, 4)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"seq": 4, "time": "2026-01-01T00:0')  # the first session died mid-line
    with EvidenceWriter(path, "k8s") as writer:
        resumed = writer.write_action("plan", {"experiment": "gang", "resumed": True})
    assert resumed["seq"] == 4 and resumed["prev"] == written[-1]["hash"]
    log = read_evidence(path)
    assert log.chain_ok and [r.seq for r in log.records] == [0, 1, 2, 3, 4]
    assert len(log.warnings) == 1 and "line 5" in log.warnings[0]


@pytest.mark.parametrize("line", [
    b'{"seq":1,"x":NaN}', b'{"x":1e400}', b'{"x":"\\ud800"}', b'\xef\xbb\xbf{"seq":1}',  # orjson refuses, json reads
    b'{"seq":123456789012345678901234567890}', b'{"x":-9223372036854775809}',  # orjson reads as floats
    b'{"seq":1,"seq":2}', b'{"x":"\\u00e9","y":[1.5,-0.0,5e-324]}', b' {"a":{"b":[]}} ',
])
def test_a_line_decodes_as_json_reads_it(line: bytes) -> None:
    assert repr(decode_line(line)) == repr(json.loads(line))


@pytest.mark.parametrize(("line", "error"), [(b"[" * 1020 + b"]" * 1020, RecursionError), (b'{"a":', ValueError),
                                             (b"\xff", ValueError), (b"NaNa", ValueError)])
def test_a_line_json_refuses_is_refused(line: bytes, error: type[Exception]) -> None:
    """orjson reads 1,020 nested brackets; json (the reference) gives up, and so does decode_line."""
    with pytest.raises(error):
        json.loads(line)
    with pytest.raises(error):
        decode_line(line)
