"""The trace readers: the Philly release's schema with its documented oddities, read one record at a time; the CSV
form; bad records left out with their reason; unreadable files refused."""

from __future__ import annotations

import io
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO, cast

import pytest

from hivedlab.trace import readers
from hivedlab.trace.inputs import assemble
from hivedlab.trace.readers import (
    Parsed,
    iter_json_array,
    read_csv,
    read_machine_list,
    read_philly_jobs,
    read_shares,
)
from hivedlab.trace.workload import ServerType, TraceInputError
from tests.support.paths import ROOT

PHILLY = ROOT / "tests" / "fixtures" / "trace" / "philly"
KNOWN = (ServerType("2gpu-12GB", 2, 1, 12, 131072), ServerType("8gpu-24GB", 8, 1, 48, 524288))


def test_philly_job_log_last_complete_attempt_and_the_oddities() -> None:
    parsed = read_philly_jobs(PHILLY / "cluster_job_log")
    jobs = {j.id: j for j in parsed.jobs}
    assert sorted(jobs) == ["application_1506638472019_14199", "application_1506638472019_20001"]
    first = jobs["application_1506638472019_14199"]
    assert (first.gpus, first.duration, first.vc, first.user) == (4, 7200.0, "ee9e8c", "ce2f4c")  # the last attempt
    killed = jobs["application_1506638472019_20001"]
    assert (killed.gpus, killed.duration) == (4, 1800.0)  # a Killed job ran: it is replayed, on two servers
    reasons = {item.job: item.reason for item in parsed.left_out}
    assert reasons == {
        "application_1506638472019_20002": "cluster_job_log record 2: no attempt",
        "application_1506638472019_20003":
            "cluster_job_log record 3: end_time is None (still running when the trace was taken)",
        "application_1506638472019_20004": "cluster_job_log record 4: no attempt with both a start and an end time",
    }


def test_the_job_log_is_decoded_a_record_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk far smaller than a record gives the same jobs: no record needs the whole document."""
    whole = read_philly_jobs(PHILLY / "cluster_job_log")
    monkeypatch.setattr(readers, "CHUNK", 7)
    assert read_philly_jobs(PHILLY / "cluster_job_log") == whole


class _GeneratedLog(io.TextIOBase):
    """A Philly job log of `count` copies of `record`, each with its own jobid (`application_00000001`: one width),
    made only as it is read: never whole in memory unless the reader asks for all of it. `read_chars` counts what the
    reader took."""

    def __init__(self, record: dict[str, object], count: int) -> None:
        self.template = json.dumps({**record, "jobid": "application_NUMBER"}, indent=4)
        self.count, self.record_chars = count, len(self._part(1))  # a record and the comma before it
        self.size = count * self.record_chars + 1  # "[", the records (the first without a comma), "]"
        self.parts = self._parts()
        self.pending, self.read_chars = "", 0

    def _part(self, i: int) -> str:
        return ("," if i else "") + self.template.replace("NUMBER", f"{i:08d}")

    def _parts(self) -> Iterator[str]:
        yield "["
        yield from (self._part(i) for i in range(self.count))
        yield "]"

    def end_of(self, i: int) -> int:
        """Where record i ends in the log."""
        return (i + 1) * self.record_chars  # "[" and the records up to i, the first without a comma

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        wanted = -1 if size is None else size
        parts, held = [self.pending], len(self.pending)
        while wanted < 0 or held < wanted:
            part = next(self.parts, None)
            if part is None:
                break
            parts.append(part)
            held += len(part)
        text = "".join(parts)
        cut = len(text) if wanted < 0 else wanted
        text, self.pending = text[:cut], text[cut:]
        self.read_chars += len(text)
        return text


def test_a_large_job_log_is_streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A log of megabytes is read CHUNK by CHUNK as its records are decoded: at each record the reader has taken at
    most two chunks past it, and what it holds at once (the decoder's working memory included) stays a small fixed
    amount, whatever the log's size: reading it whole, or keeping what was decoded, fails."""
    chunk, most = 4096, 256 * 1024
    monkeypatch.setattr(readers, "CHUNK", chunk)
    record = json.loads((PHILLY / "cluster_job_log").read_text(encoding="utf-8"))[0]
    log = _GeneratedLog(record, 2000)
    ahead = seen = 0
    tracemalloc.start()
    try:
        for index, decoded, error in iter_json_array(cast(TextIO, log), "cluster_job_log"):
            assert error == "" and decoded is not None and decoded["jobid"] == f"application_{index:08d}"
            ahead = max(ahead, log.read_chars - log.end_of(index))
            seen += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == 2000 and log.read_chars == log.size > 8 * most
    assert ahead <= 2 * chunk, f"read {ahead} characters past a record"
    assert peak < most, f"held {peak} bytes while reading a log of {log.size} characters"


def test_a_malformed_record_is_left_out_and_the_rest_read() -> None:
    text = '[{"jobid": "a", "vc": "v"}, {"jobid": oops}, {"jobid": "c", "vc": "v"}]'
    for chunk in (5, 1 << 16):
        records = list(_records(text, chunk))
        assert [(i, r is None, e) for i, r, e in records] == [
            (0, False, ""), (1, True, "malformed JSON (Expecting value)"), (2, False, "")]


def _records(text: str, chunk: int) -> list[tuple[int, object, str]]:
    old = readers.CHUNK
    readers.CHUNK = chunk
    try:
        return list(iter_json_array(io.StringIO(text), "log"))
    finally:
        readers.CHUNK = old


def test_not_a_json_array_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "cluster_job_log"
    path.write_text('{"jobid": "a"}', encoding="utf-8")
    with pytest.raises(TraceInputError, match="not a JSON array"):
        read_philly_jobs(path)
    path.write_text('[{"jobid": "a", "vc": "v", "submitted_time": "2017-10-07 01:00:00", "attempts": []}',
                    encoding="utf-8")
    with pytest.raises(TraceInputError, match="ends early"):
        read_philly_jobs(path)


def test_machine_list_gives_one_server_type_per_gpu_count_and_memory() -> None:
    types = read_machine_list(PHILLY / "cluster_machine_list", KNOWN)
    assert [(t.name, t.gpus, t.count, t.cpu) for t in types] == [("2gpu-12GB", 2, 4, 12), ("8gpu-24GB", 8, 3, 48)]


def test_csv_form_with_bad_records(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(
        "job,vc,user,submit_time,gpus,duration,cpu,memory_mb\n"
        "j1,a,u1,0,1,60,,\n"
        "j2,a,u1,2017-10-07 01:00:10,2,120,4,8192\n"
        "j3,b,u2,30,two,60,,\n"
        "j4,b,u2,40,1,-5,,\n", encoding="utf-8")
    parsed = read_csv(path)
    assert [(j.id, j.gpus, j.cpu, j.memory_mb) for j in parsed.jobs] == [("j1", 1, None, None), ("j2", 2, 4.0, 8192.0)]
    assert [(x.job, x.reason) for x in parsed.left_out] == [
        ("j3", "trace.csv line 4: gpus is not a whole number: 'two'"),
        ("j4", "trace.csv line 5: negative duration -5.0"),
    ]


def test_csv_without_its_columns_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("name,gpus\nx,1\n", encoding="utf-8")
    with pytest.raises(TraceInputError, match="no column job, vc, user, submit_time, duration"):
        read_csv(path)


def test_assemble_leaves_out_too_big_jobs_unknown_vcs_and_repeats(tmp_path: Path) -> None:
    from tests.trace.support import job

    jobs = [job("ok", "a", 100, 8, 10), job("huge", "a", 101, 64, 10), job("nobody", "c", 102, 1, 10),
            job("ok", "a", 103, 1, 10)]
    w = assemble(Parsed(jobs, []), KNOWN, {"a": 2, "b": 1}, "test")
    assert [j.id for j in w.jobs] == ["ok"] and w.jobs[0].submit == 0
    assert [(x.job, x.reason) for x in w.left_out] == [
        ("huge", "asks for more GPUs than the cluster can place (10 GPUs)"),
        ("nobody", "VC c has no share"),
        ("ok", "the same job id appears again"),
    ]
    assert w.shares == {"a": 2 / 3, "b": 1 / 3}
    with pytest.raises(TraceInputError, match="no job to replay"):
        assemble(Parsed([], []), KNOWN, None, "empty.csv")


def test_shares_file(tmp_path: Path) -> None:
    path = tmp_path / "shares.yaml"
    path.write_text("a: 3\nb: 1\n", encoding="utf-8")
    assert read_shares(path) == {"a": 3.0, "b": 1.0}
    path.write_text("a: many\n", encoding="utf-8")
    with pytest.raises(TraceInputError, match="share must be a number"):
        read_shares(path)
