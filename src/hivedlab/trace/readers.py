"""Traces from files: the plain CSV form, the Philly release's `cluster_job_log` and `cluster_machine_list`, and a
VC share file. A record that cannot be used is left out with its reason (file, record, what is wrong); a file that
cannot be read at all raises `TraceInputError`.

The Philly job log is one large JSON array: it is decoded one record at a time from a sliding buffer, never held
whole (`iter_json_array`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

import yaml

from hivedlab.trace.workload import Job, LeftOut, ServerType, TraceInputError

CSV_REQUIRED = ("job", "vc", "user", "submit_time", "gpus", "duration")
PHILLY_TIME = "%Y-%m-%d %H:%M:%S"
CHUNK = 1 << 16
# CPU and memory per GPU of a server type the generator's table does not name (assumption, docs/trace.md)
CPU_PER_GPU = 6.0
MEMORY_MB_PER_GPU = 65536.0


@dataclass(frozen=True)
class Parsed:
    jobs: list[Job]
    left_out: list[LeftOut]


def _open(path: Path) -> TextIO:
    try:
        return path.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise TraceInputError(f"{path}: cannot read ({exc.strerror})") from None


def _seconds(text: str) -> float:
    """Seconds from a number, or from a `YYYY-MM-DD HH:MM:SS` time (read as UTC)."""
    try:
        return float(text)
    except ValueError:
        return datetime.strptime(text.strip(), PHILLY_TIME).replace(tzinfo=timezone.utc).timestamp()


# -- the CSV form -------------------------------------------------------------------------------------------------
def read_csv(path: Path) -> Parsed:
    try:
        return _read_csv(path)
    except UnicodeDecodeError:
        raise TraceInputError(f"{path}: not UTF-8 text") from None


def _read_csv(path: Path) -> Parsed:
    jobs: list[Job] = []
    left: list[LeftOut] = []
    with _open(path) as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in CSV_REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise TraceInputError(f"{path}: not a trace CSV: no column {', '.join(missing)} "
                                  f"(expected {', '.join(CSV_REQUIRED)}[, cpu, memory_mb])")
        for row in reader:
            where = f"{path.name} line {reader.line_num}"
            try:
                job = _csv_job(row)
            except (ValueError, TypeError) as exc:
                left.append(LeftOut(row.get("job") or where, f"{where}: {exc}"))
                continue
            jobs.append(job)
    return Parsed(jobs, left)


def _csv_job(row: Mapping[str, str | None]) -> Job:
    def text(name: str) -> str:
        value = row.get(name)
        if value is None or not value.strip():
            raise ValueError(f"no {name}")
        return value.strip()

    def optional(name: str) -> float | None:
        value = row.get(name)
        return float(value) if value is not None and value.strip() else None

    try:
        gpus = int(text("gpus"))
    except ValueError:
        raise ValueError(f"gpus is not a whole number: {row.get('gpus')!r}") from None
    try:
        submit, duration = _seconds(text("submit_time")), float(text("duration"))
    except ValueError as exc:
        raise ValueError(f"bad time: {exc}") from None
    if gpus <= 0:
        raise ValueError(f"asks for {gpus} GPUs")
    if duration < 0:
        raise ValueError(f"negative duration {duration}")
    return Job(text("job"), text("vc"), text("user"), submit, gpus, duration, optional("cpu"), optional("memory_mb"))


# -- the Philly release -------------------------------------------------------------------------------------------
def iter_json_array(handle: TextIO, name: str) -> Iterator[tuple[int, Any | None, str]]:
    """(index, record, error) for each element of a top-level JSON array, decoded one at a time; a malformed element
    gives (index, None, what is wrong) and the reading goes on after it."""
    decoder = json.JSONDecoder()
    buffer = handle.read(CHUNK)
    eof = not buffer
    pos = _skip(buffer, 0)
    if pos >= len(buffer) or buffer[pos] != "[":
        raise TraceInputError(f"{name}: not a JSON array (the Philly job log is one)")
    pos += 1
    index = 0
    while True:
        pos = _skip(buffer, pos)
        while pos >= len(buffer) and not eof:
            buffer, pos, eof = _more(handle, buffer, pos)
            pos = _skip(buffer, pos)
        if pos >= len(buffer):
            raise TraceInputError(f"{name}: the JSON array ends early, after record {index}")
        if buffer[pos] == "]":
            return
        if buffer[pos] == "," and index > 0:
            pos += 1
            continue
        while True:
            try:
                record, end = decoder.raw_decode(buffer, pos)
                break
            except json.JSONDecodeError as exc:
                if not eof and exc.pos >= len(buffer) - 1 - _tail_margin(buffer):
                    buffer, pos, eof = _more(handle, buffer, pos)
                    continue
                end = _record_end(buffer, pos)
                while end < 0 and not eof:
                    buffer, pos, eof = _more(handle, buffer, pos)
                    end = _record_end(buffer, pos)
                yield index, None, f"malformed JSON ({exc.msg})"
                index += 1
                if end < 0:
                    return
                record = None
                break
        if record is not None:
            yield index, record, ""
            index += 1
        pos = end


def _tail_margin(buffer: str) -> int:
    """A decode error this close to the buffer's end may only mean the record goes on in the next chunk."""
    return min(len(buffer), 64)


def _more(handle: TextIO, buffer: str, pos: int) -> tuple[str, int, bool]:
    chunk = handle.read(CHUNK)
    return buffer[pos:] + chunk, 0, not chunk


def _skip(buffer: str, pos: int) -> int:
    while pos < len(buffer) and buffer[pos] in " \t\r\n":
        pos += 1
    return pos


def _record_end(buffer: str, pos: int) -> int:
    """The position after a malformed record: the next comma or closing bracket outside strings at depth zero,
    -1 when the buffer ends first."""
    depth = 0
    in_string = escaped = False
    for i in range(pos, len(buffer)):
        c = buffer[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
    return -1


def read_philly_jobs(path: Path) -> Parsed:
    jobs: list[Job] = []
    left: list[LeftOut] = []
    with _open(path) as handle:
        try:
            for index, record, error in iter_json_array(handle, path.name):
                where = f"{path.name} record {index}"
                if record is None:
                    left.append(LeftOut(where, f"{where}: {error}"))
                    continue
                job, reason = _philly_job(record)
                if job is None:
                    name = record.get("jobid") if isinstance(record, dict) else None
                    left.append(LeftOut(str(name or where), f"{where}: {reason}"))
                else:
                    jobs.append(job)
        except UnicodeDecodeError as exc:
            raise TraceInputError(f"{path}: not UTF-8 text ({exc.reason})") from None
    return Parsed(jobs, left)


def _philly_job(record: Any) -> tuple[Job | None, str]:
    """The job from its last complete attempt, or None and why it is left out."""
    if not isinstance(record, dict):
        return None, "not a JSON object"
    for key in ("jobid", "vc", "submitted_time"):
        if not isinstance(record.get(key), str) or not record[key]:
            return None, f"no {key}"
    attempts = record.get("attempts")
    if not isinstance(attempts, list) or not attempts:
        return None, "no attempt"
    complete = [a for a in attempts if isinstance(a, dict) and a.get("start_time") and a.get("end_time")]
    if not complete:
        last = attempts[-1] if isinstance(attempts[-1], dict) else {}
        if last.get("start_time") and last.get("end_time") is None:
            return None, "end_time is None (still running when the trace was taken)"
        return None, "no attempt with both a start and an end time"
    attempt = complete[-1]
    try:
        start, end = _seconds(attempt["start_time"]), _seconds(attempt["end_time"])
        submit = _seconds(record["submitted_time"])
    except (ValueError, TypeError) as exc:
        return None, f"bad time ({exc})"
    details = attempt.get("detail")
    gpus = sum(len(d.get("gpus") or []) for d in details if isinstance(d, dict)) if isinstance(details, list) else 0
    if gpus <= 0:
        return None, "its last complete attempt names no GPU"
    if end < start:
        return None, "its last complete attempt ends before it starts"
    user = record.get("user")
    return Job(record["jobid"], record["vc"], str(user or ""), submit, gpus, end - start), ""


def read_machine_list(path: Path, known: Sequence[ServerType]) -> tuple[ServerType, ...]:
    """Server types from `cluster_machine_list` (machineId, number of GPUs, single GPU mem): one type per GPU count
    and GPU memory; CPU and memory from `known` by GPU count, else the per-GPU assumption."""
    counts: dict[tuple[int, str], int] = {}
    with _open(path) as handle:
        rows = csv.reader(handle)
        header = next(rows, None)
        if header is None or len(header) < 2:
            raise TraceInputError(f"{path}: not a machine list (machineId, number of GPUs, single GPU mem)")
        for line, row in enumerate(rows, start=2):
            if not row or not any(cell.strip() for cell in row):
                continue
            try:
                gpus = int(row[1])
            except (IndexError, ValueError):
                raise TraceInputError(f"{path} line {line}: number of GPUs is not a whole number: {row!r}") from None
            if gpus <= 0:
                continue
            memory = row[2].strip() if len(row) > 2 else ""
            counts[(gpus, memory)] = counts.get((gpus, memory), 0) + 1
    if not counts:
        raise TraceInputError(f"{path}: no server with a GPU")
    by_gpus = {st.gpus: st for st in known}
    types = []
    for (gpus, memory), count in sorted(counts.items()):
        base = by_gpus.get(gpus)
        cpu = base.cpu if base else CPU_PER_GPU * gpus
        mem = base.memory_mb if base else MEMORY_MB_PER_GPU * gpus
        types.append(ServerType(f"{gpus}gpu-{memory or 'any'}".replace(" ", ""), gpus, count, cpu, mem))
    return tuple(types)


def read_shares(path: Path) -> dict[str, float]:
    """A YAML mapping VC -> share (any positive numbers; they are normalized)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TraceInputError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise TraceInputError(f"{path}: not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise TraceInputError(f"{path}: not YAML ({exc})") from None
    if not isinstance(data, dict) or not data:
        raise TraceInputError(f"{path}: expected a mapping VC -> share, e.g. `vc1: 0.6`")
    shares: dict[str, float] = {}
    for vc, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise TraceInputError(f"{path}: VC {vc}: share must be a number >= 0, got {value!r}")
        shares[str(vc)] = float(value)
    if sum(shares.values()) <= 0:
        raise TraceInputError(f"{path}: every share is 0")
    return shares
