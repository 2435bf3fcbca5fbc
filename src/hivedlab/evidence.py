"""The evidence log: JSON Lines, one record per observed change or runner action, chained by SHA-256.

Record (field list is in `configs/schemas/evidence-record.schema.json`):

    {"seq": 0, "time": "2026-01-01T00:00:00.000000Z", "source": "sim"|"k8s", "kind": "object"|"action",
     "watch": {"type": ADDED|MODIFIED|DELETED|BOOKMARK|LISTED,
               "resource": pods|events|frameworks|tfjobs|podgroups|nodes,
               "object": {raw object}, "synthetic"?: true},
     "action": {"type": "plan"|"config-switch"|"restart"|"submit"|"stop"|"step"|"end"|"watch", ...},
     "prev": "<hash of seq-1, 64 zeros for seq 0>", "hash": "<sha256 hex>"}

`hash` is SHA-256 over the canonical JSON of the record without `hash` (sorted keys, no spaces, UTF-8).
The writer writes that canonical text with `,"hash":"…"` spliced in before the closing brace, so a reader can
check a record by hashing its own bytes; a line re-serialised by another tool is still checked the slow way.

Settled details:
- A list response is recorded as one `LISTED` record per object (the list's own resourceVersion is in the watcher's
  `watch` action that follows the list).
- An object that disappeared while the watch was away (seen in the log, missing from a re-list) is recorded as a
  `DELETED` record carrying the last known object and `"synthetic": true`.
- Reading never raises on bad content: bad lines, broken links and gaps become warnings and `chain_ok=False`.
  Each warning is made once in both languages (`EvidenceStream.said`); `warnings` is their English, the words
  verdicts.json, grading and the tests match on.

Size: over 400 lines because writer and reader stay in one file: they share the canonical form and the chain rule,
which must never drift apart. At its end, beside the marks' names above, what in a record shows the rehearsal
cluster (`RehearsalSigns`): the backends, the report and grading all recognise it by this one rule.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.text import Text, english

ZERO_HASH = "0" * 64
SOURCES = ("sim", "k8s")
KINDS = ("object", "action")
WATCH_TYPES = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "LISTED")
# tfjobs and podgroups: cluster k8s; nodes: a real cluster's Nodes when their readiness changes (docs/evidence.md)
RESOURCES = ("pods", "events", "frameworks", "tfjobs", "podgroups", "nodes")
# What a rehearsal cluster's evidence carries (docs/checker.md#rehearsal-cluster-evidence-grading): its emulated
# kubelets give every container an id with this scheme and label their Nodes; a real cluster's runtimes say docker://
# or containerd://
EMULATED_CONTAINER_PREFIX = "emulated://"
EMULATED_NODE_LABEL = "hivedlab.rehearsal/emulated"
EMULATED_KUBELET_MARK = "-hivedlab-emulated"  # how their kubeletVersion ends (v1.20.2-hivedlab-emulated)
ACTION_TYPES = ("plan", "config-switch", "restart", "submit", "stop", "step", "end", "watch")
_HASH_KEY = ',"hash":"'
_HASH_KEY_B = _HASH_KEY.encode()
_TAIL_LEN = len(_HASH_KEY) + 64 + 2  # ,"hash":"<64 hex>"}
_DIGITS = bytes.maketrans(b"123456789[", b"000000000{")  # digits to 0, brackets to braces: one pass finds both
_LONG_NUMBER = b"0" * 19  # 19 digits in a row (after _DIGITS): maybe an integer beyond 64 bits
_READS_Z = sys.version_info >= (3, 11)  # datetime.fromisoformat reads a trailing Z as UTC
_DEEP = 900  # opening brackets: json gives up at about 1,000 levels (the recursion limit), orjson at 1,024
NO_RECORDS = Text("日志中没有任何记录", "the log holds no records")
_NOT_JSON = Text("不是 JSON 记录", "not a JSON record")
_NOT_A_RECORD = Text("不是证据记录（缺少字段或字段类型不对）", "not an evidence record (missing or mistyped fields)")


class EvidenceError(HivedlabError):
    """The log cannot be written (wrong source on resume, unreadable file)."""


def format_time(dt: datetime) -> str:
    """RFC 3339 UTC with microseconds and a `Z`, e.g. 2026-01-01T00:00:00.000000Z. Naive times are taken as UTC."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str | None) -> datetime | None:
    """Parse an RFC 3339 time (Kubernetes' `2026-01-01T00:00:00Z` or ours with microseconds); None if unparsable."""
    if not text or not isinstance(text, str):
        return None
    if len(text) == 27 and text[-1] == "Z" and text[10] == "T" and text[19] == ".":  # ours, the common case
        try:  # Python 3.11 reads the Z itself, several times faster than replacing the zone
            return (datetime.fromisoformat(text) if _READS_Z
                    else datetime.fromisoformat(text[:-1]).replace(tzinfo=timezone.utc))
        except ValueError:
            pass
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    # Python 3.10's fromisoformat accepts only 0, 3 or 6 fraction digits: normalise to 6.
    if "." in value:
        head, rest = value.split(".", 1)
        digits = len(rest) - len(rest.lstrip("0123456789"))
        frac, tz = rest[:digits], rest[digits:]
        value = f"{head}.{(frac + '000000')[:6]}{tz}"
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def canonical_json(record: dict[str, Any]) -> str:
    """The text hashed: the record without `hash`, sorted keys, no whitespace, non-ASCII kept."""
    body = {key: value for key, value in record.items() if key != "hash"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def record_hash(record: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(record).encode("utf-8")).hexdigest()


class Record(NamedTuple):
    """One evidence record as read back (immutable; a NamedTuple because a big log makes millions of them).
    `object`/`action` hold the raw dicts (treat as read-only)."""

    seq: int
    time: str
    source: str
    kind: str
    prev: str
    hash: str
    line: int  # 1-based line number in the file
    watch_type: str | None = None
    resource: str | None = None
    object: dict[str, Any] | None = None
    synthetic: bool = False
    action: dict[str, Any] | None = None

    @property
    def action_type(self) -> str | None:
        return None if self.action is None else self.action.get("type")


@dataclass(frozen=True)
class EvidenceLog:
    """A whole log read back: its records, what was wrong with it, and whether the chain holds."""

    path: str
    records: tuple[Record, ...]
    said: tuple[Text, ...]  # what was wrong with it, each in both languages
    chain_ok: bool  # False also when the file holds no record at all
    first_broken_seq: int | None  # first record whose seq/prev/hash does not follow; None when intact
    sources: tuple[str, ...] = field(default=())
    unreadable: str | None = None  # set when the file itself could not be opened

    @property
    def warnings(self) -> tuple[str, ...]:
        """What was wrong with it in English: the words verdicts.json, grading and the tests match on."""
        return english(self.said)


@dataclass
class _Verifier:
    """Walks records in file order, checking seq, prev and hash; collects warnings."""

    said: list[Text] = field(default_factory=list)  # the warnings, each in both languages
    chain_ok: bool = True
    first_broken_seq: int | None = None
    expected_seq: int = 0
    last_hash: str = ZERO_HASH
    sources: list[str] = field(default_factory=list)
    pending_bad: list[Text] = field(default_factory=list)
    count: int = 0
    bad_lines: int = 0

    def _break(self, seq: int | None, why: Text) -> None:
        self.said.append(why)
        if self.chain_ok:
            self.chain_ok = False
            self.first_broken_seq = seq

    def bad_line(self, lineno: int, why: Text) -> None:
        # Held back: a bad last line is a crash cut; a bad line in the middle is flagged once the next record comes.
        self.pending_bad.append(_at_line(lineno, why))

    def _settle_bad_lines(self, before: Record | None) -> None:
        """The lines that were not records, now that a line follows them. Only a line a crash cut short, followed by
        the first record of the session that resumed the log, belongs in a log (docs/evidence.md); any other is an
        edit."""
        if not self.pending_bad:
            return
        resumed = before is not None and _opens_a_session(before)
        for index, text in enumerate(self.pending_bad):
            if resumed and index == len(self.pending_bad) - 1:
                self.said.append(Text(f"{text.zh}（一条因崩溃而被截断的记录；之后的会话接着写了日志）",
                                      f"{text.en} (a record cut by a crash; the session after it resumed the log)"))
            else:
                self._break(self.expected_seq, _edited(text))
        self.bad_lines += len(self.pending_bad)
        self.pending_bad.clear()

    def accept(self, raw: bytes, data: Any, lineno: int) -> Record | None:
        record = _to_record(data, lineno)
        self._settle_bad_lines(record)
        if record is None:
            self._break(self.expected_seq, _at_line(lineno, _NOT_A_RECORD))
            return None
        seq = record.seq
        if seq != self.expected_seq:
            self._break(seq, _at_line(lineno, Text(f"记录序号是 {seq}，应当是 {self.expected_seq}",
                                                   f"seq {seq} where {self.expected_seq} was expected")))
        if record.prev != self.last_hash:
            self._break(seq, _at_line(lineno, Text(f"序号 {seq} 的记录接不上它前一条记录的哈希链",
                                                   f"seq {seq} does not chain to the record before it")))
        if not _hash_ok(raw, data, record.hash):
            self._break(seq, _at_line(lineno, Text(f"序号 {seq} 的记录被改动过（哈希不符）",
                                                   f"seq {seq} was altered (hash mismatch)")))
        if record.source not in self.sources:
            self.sources.append(record.source)
            if len(self.sources) == 2:
                first = self.sources[0]
                self.said.append(_at_line(lineno, Text(f"日志混有两种来源：{first} 和 {record.source}",
                                                       f"the log mixes sources {first} and {record.source}")))
        self.expected_seq = record.seq + 1
        self.last_hash = record.hash
        self.count += 1
        return record

    def finish(self) -> None:
        for text in self.pending_bad[:-1]:
            self._break(self.expected_seq, _edited(text))
        if self.pending_bad:
            last = self.pending_bad[-1]
            self.said.append(
                Text(f"{last.zh}（日志以一条被截断的记录结尾，例如崩溃之后；已读到最后一条完整的记录）",
                     f"{last.en} (the log ends in a cut record, e.g. after a crash; read up to the last whole record)")
                if self.count else Text(f"{last.zh}（已跳过）", f"{last.en} (skipped)"))
        self.bad_lines += len(self.pending_bad)
        self.pending_bad.clear()


def _at_line(lineno: int, why: Text) -> Text:
    return Text(f"第 {lineno} 行：{why.zh}", f"line {lineno}: {why.en}")


def _edited(line: Text) -> Text:
    return Text(f"{line.zh}：日志里被放进了不是记录的一行（被编辑过）",
                f"{line.en}: a line that is not a record was put into the log (edited)")


def _cannot_read(path: Path, exc: OSError) -> Text:
    """A log (or any file) that cannot be opened, in both languages."""
    why = exc.strerror or str(exc)
    return Text(f"无法读取 {path}：{why}", f"cannot read {path}: {why}")


def _opens_a_session(record: Record) -> bool:
    """The first record a resumed session writes: the runner's `plan` (`resumed: true`), or the watcher's note that
    it started, which a real backend writes before the runner's plan (it lists before anything is submitted)."""
    action = record.action or {}
    return ((record.action_type == "plan" and action.get("resumed") is True)
            or (record.action_type == "watch" and action.get("event") == "started"))


def _hash_ok(raw: bytes, data: dict[str, Any], claimed: str) -> bool:
    # fast path: the writer's own line is the canonical text with `,"hash":"…"` spliced in before the last brace
    if raw[-_TAIL_LEN:].startswith(_HASH_KEY_B) and raw.endswith(b'"}'):
        if hashlib.sha256(raw[:-_TAIL_LEN] + b"}").hexdigest() == claimed:
            return True
    return record_hash(data) == claimed


def _to_record(data: Any, lineno: int) -> Record | None:
    if not isinstance(data, dict):
        return None
    seq, time, source, kind = data.get("seq"), data.get("time"), data.get("source"), data.get("kind")
    prev, digest = data.get("prev"), data.get("hash")
    if not (isinstance(seq, int) and not isinstance(seq, bool) and isinstance(time, str) and isinstance(source, str)):
        return None
    if kind not in KINDS or not isinstance(prev, str) or not isinstance(digest, str):
        return None
    if kind == "object":
        watch = data.get("watch")
        if not isinstance(watch, dict) or not isinstance(watch.get("object"), dict):
            return None
        return Record(seq, time, source, kind, prev, digest, lineno, str(watch.get("type")), str(watch.get("resource")),
                      watch["object"], bool(watch.get("synthetic", False)))
    action = data.get("action")
    if not isinstance(action, dict) or not isinstance(action.get("type"), str):
        return None
    return Record(seq, time, source, kind, prev, digest, lineno, action=action)


def decode_line(raw: bytes) -> Any:
    """A line's JSON exactly as `json.loads` reads it, through orjson (twice as fast) wherever the two agree. orjson
    refuses what json reads (NaN, numbers beyond a float's range, lone surrogates, a BOM): json then reads it. orjson
    reads an integer beyond 64 bits as a float and nests deeper before giving up: a line that may hold either (19
    digits in a row, 900 brackets) is read by json alone. Raises ValueError or RecursionError as json.loads does."""
    folded = raw.translate(_DIGITS)
    if _LONG_NUMBER in folded or folded.count(b"{") > _DEEP:
        return json.loads(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def _walk(path: Path, verifier: _Verifier) -> Iterator[Record]:
    with path.open("rb") as handle:
        for lineno, line in enumerate(handle, start=1):
            raw = line.rstrip(b"\r\n")
            if not raw.strip():
                continue
            try:
                data = decode_line(raw)
            except (ValueError, RecursionError):  # also UnicodeDecodeError; RecursionError: a nesting bomb
                verifier.bad_line(lineno, _NOT_JSON)
                continue
            record = verifier.accept(raw, data, lineno)
            if record is not None:
                yield record
    verifier.finish()


class EvidenceStream:
    """Streams records of a big log; `warnings`, `chain_ok`, `first_broken_seq` are final once iteration ends."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._verifier = _Verifier()
        self.unreadable_said: Text | None = None  # set when the file itself could not be opened

    def __iter__(self) -> Iterator[Record]:
        try:
            yield from _walk(self.path, self._verifier)
        except OSError as exc:
            self.unreadable_said = _cannot_read(self.path, exc)
            self._verifier.chain_ok = False
        if self._verifier.count == 0:
            self._verifier.chain_ok = False

    @property
    def unreadable(self) -> str | None:
        return self.unreadable_said.en if self.unreadable_said else None

    @property
    def said(self) -> tuple[Text, ...]:
        """The warnings in both languages (the report's problem lines)."""
        return tuple(self._verifier.said)

    @property
    def warnings(self) -> tuple[str, ...]:
        return english(self._verifier.said)

    @property
    def chain_ok(self) -> bool:
        return self._verifier.chain_ok

    @property
    def first_broken_seq(self) -> int | None:
        return self._verifier.first_broken_seq

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(self._verifier.sources)

    @property
    def count(self) -> int:
        return self._verifier.count


def iter_evidence(path: str | Path) -> EvidenceStream:
    """Stream a log record by record (constant memory); check `.chain_ok`/`.warnings` after iterating."""
    return EvidenceStream(path)


def read_evidence(path: str | Path) -> EvidenceLog:
    """Read a whole log; never raises on bad content (see `EvidenceLog.said`, `.unreadable`)."""
    stream = iter_evidence(path)
    records = tuple(stream)
    said = stream.said
    if stream.unreadable_said:
        said = (*said, stream.unreadable_said)
    elif not records and not said:
        said = (NO_RECORDS,)
    return EvidenceLog(
        path=str(path),
        records=records,
        said=said,
        chain_ok=stream.chain_ok,
        first_broken_seq=stream.first_broken_seq,
        sources=stream.sources,
        unreadable=stream.unreadable,
    )


def log_source(path: str | Path) -> str | None:
    """The `source` of a log's first record; None when there is no log or it is empty, "" when it is not a log."""
    try:
        with Path(path).open("rb") as handle:
            for line in handle:
                if line.strip():
                    try:
                        data = json.loads(line)
                    except ValueError:
                        return ""
                    return str(data.get("source") or "") if isinstance(data, dict) else ""
    except OSError:
        return None
    return None


def _last_whole_record(path: Path) -> tuple[dict[str, Any] | None, bool]:
    """The last parseable record of a file (read backwards), and whether the file ends without a newline."""
    size = path.stat().st_size
    if size == 0:
        return None, False
    with path.open("rb") as handle:
        handle.seek(size - 1)
        cut = handle.read(1) != b"\n"
        block, pos, tail = 1 << 16, size, b""
        while pos > 0:
            step = min(block, pos)
            pos -= step
            handle.seek(pos)
            tail = handle.read(step) + tail
            lines = tail.split(b"\n")
            # lines[0] may be partial unless we reached the start of the file
            candidates = lines if pos == 0 else lines[1:]
            for raw in reversed(candidates):
                if not raw.strip():
                    continue
                try:
                    data = json.loads(raw.decode("utf-8"))
                except (ValueError, RecursionError):
                    continue
                if isinstance(data, dict) and isinstance(data.get("seq"), int) and isinstance(data.get("hash"), str):
                    return data, cut
            tail = lines[0] if pos > 0 else b""
    return None, cut


class EvidenceWriter:
    """Appends records to a log, one flushed line at a time; continues seq and chain of an existing log (resume).

    Thread-safe: the watcher's threads and the runner write through one writer.
    """

    def __init__(self, path: str | Path, source: str) -> None:
        if source not in SOURCES:
            raise EvidenceError(f"evidence source must be one of {', '.join(SOURCES)}, not {source!r}")
        self.path = Path(path)
        self.source = source
        self._lock = threading.Lock()
        self._seq = 0
        self._prev = ZERO_HASH
        self.path.parent.mkdir(parents=True, exist_ok=True)
        cut = False
        if self.path.exists():
            try:
                last, cut = _last_whole_record(self.path)
            except OSError as exc:
                raise EvidenceError(_cannot_read(self.path, exc).en) from exc
            if last is None and self.path.stat().st_size > 0:
                raise EvidenceError(f"{self.path} is not an evidence log; refusing to append to it")
            if last is not None:
                if last.get("source") != source:
                    raise EvidenceError(
                        f"{self.path} holds {last.get('source')!r} evidence; it cannot be continued as {source!r}"
                    )
                self._seq = int(last["seq"]) + 1
                self._prev = str(last["hash"])
        self.first_seq = self._seq  # > 0 when this writer continues a log that already held records (a resume)
        try:
            self._handle = self.path.open("a", encoding="utf-8", newline="\n")
        except OSError as exc:
            raise EvidenceError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
        if cut:  # end the partial line a crash left, so the next record starts on its own line
            self._handle.write("\n")
            self._handle.flush()

    @property
    def next_seq(self) -> int:
        return self._seq

    def __enter__(self) -> EvidenceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, kind: str, key: str, body: dict[str, Any], time: str | None) -> dict[str, Any]:
        with self._lock:
            if self._handle.closed:
                raise EvidenceError(f"{self.path} is closed")
            record: dict[str, Any] = {
                "seq": self._seq,
                "time": time or format_time(datetime.now(timezone.utc)),
                "source": self.source,
                "kind": kind,
                key: body,
                "prev": self._prev,
            }
            text = canonical_json(record)
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            self._handle.write(f'{text[:-1]}{_HASH_KEY}{digest}"}}\n')
            self._handle.flush()
            record["hash"] = digest
            self._seq += 1
            self._prev = digest
            return record

    def write_object(
        self, watch_type: str, resource: str, obj: dict[str, Any], time: str | None = None, synthetic: bool = False
    ) -> dict[str, Any]:
        """Record a watched/listed object exactly as the API served it; returns the record written."""
        if watch_type not in WATCH_TYPES:
            raise EvidenceError(f"watch type must be one of {', '.join(WATCH_TYPES)}, not {watch_type!r}")
        if resource not in RESOURCES:
            raise EvidenceError(f"resource must be one of {', '.join(RESOURCES)}, not {resource!r}")
        watch: dict[str, Any] = {"type": watch_type, "resource": resource, "object": obj}
        if synthetic:
            watch["synthetic"] = True
        return self._write("object", "watch", watch, time)

    def write_action(self, action_type: str, payload: dict[str, Any], time: str | None = None) -> dict[str, Any]:
        """Record a runner/watcher action (`payload` must not carry its own `type`)."""
        if action_type not in ACTION_TYPES:
            raise EvidenceError(f"action type must be one of {', '.join(ACTION_TYPES)}, not {action_type!r}")
        return self._write("action", "action", {**payload, "type": action_type}, time)

    def close(self) -> None:
        with self._lock:
            if not self._handle.closed:
                self._handle.close()


# ---------------------------------------------------------------- the rehearsal cluster's marks


def emulated_node(node: Any) -> bool:
    """A Node one of the rehearsal cluster's emulated kubelets registered: labelled so, or its kubelet says so."""
    if not isinstance(node, dict):
        return False
    labels = (node.get("metadata") or {}).get("labels") or {}
    version = ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion")
    return labels.get(EMULATED_NODE_LABEL) == "true" or (
        isinstance(version, str) and version.endswith(EMULATED_KUBELET_MARK))


def container_ids(pod: dict[str, Any]) -> Iterator[str]:
    """Every container id a pod's status names (init and app containers, now and in their last state)."""
    status = pod.get("status") or {}
    for entry in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("containerID"), str):
            yield entry["containerID"]
        for state in [*(entry.get("state") or {}).values(), *(entry.get("lastState") or {}).values()]:
            if isinstance(state, dict) and isinstance(state.get("containerID"), str):
                yield state["containerID"]


def emulated_pod(pod: Any) -> bool:
    """A pod that ran in the rehearsal cluster's emulated containers (a container id says `emulated://`)."""
    return isinstance(pod, dict) and any(cid.startswith(EMULATED_CONTAINER_PREFIX) for cid in container_ids(pod))


@dataclass
class RehearsalSigns:
    """What a log's records show of the rehearsal cluster, whatever run.json says: the pods that ran in emulated
    containers (by uid) and the emulated nodes (a node record, or the node such a pod ran on)."""

    pods: set[str] = field(default_factory=set)
    nodes: dict[str, None] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Iterable[Record]) -> RehearsalSigns:
        signs = cls()
        for record in records:
            signs.feed(record)
        return signs

    @property
    def found(self) -> bool:
        return bool(self.pods or self.nodes)

    def feed(self, record: Record) -> None:
        obj = record.object
        if not isinstance(obj, dict):
            return
        if record.resource == "pods" and emulated_pod(obj):
            meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
            self.pods.add(str(meta.get("uid")))
            if spec.get("nodeName"):
                self.nodes[str(spec["nodeName"])] = None
        elif record.resource == "nodes" and emulated_node(obj):
            self.nodes[str((obj.get("metadata") or {}).get("name"))] = None

    def watch(self, records: Iterable[Record]) -> Iterator[Record]:
        """The records, passed on as they are, each one noted on the way (for a log read as a stream)."""
        for record in records:
            self.feed(record)
            yield record

    def add(self, other: RehearsalSigns) -> None:
        self.pods |= other.pods
        self.nodes.update(other.nodes)
