"""Transcripts: what a real program was asked and what it answered, as data (docs/transcripts.md).

`load_transcript` reads one, `write_transcript` writes one with its secrets redacted (`redact`), `replay` sends its
requests to a fake over real HTTP and lists where the fake's answers differ from the real ones: the status, the body's
shape, and the fields the project reads. `find_secrets` scans text for tokens and passwords that escaped redaction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import requests

from hivedlab.basics.files import write_atomic

FORMAT = "hivedlab-transcript/1"
PLACEHOLDER = re.compile(r"<(token|basic|expired-token|forged-token|password)(?::([\w.-]+))?>")
REDACTED = "<redacted>"
SECRET_KEYS = ("token", "password", "secret", "newpassword", "oldpassword")
JWT = re.compile(r"eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}")
SECRET_HEADERS = ("authorization", "cookie", "set-cookie")


@dataclass(frozen=True)
class Exchange:
    """One request and the real program's answer; `fields` are the body paths (`jobStatus.state`, `0.cellAddress`)
    whose values the project reads and a fake must equal."""

    method: str
    path: str
    status: int
    body: Any = None
    request_headers: dict[str, str] = field(default_factory=dict)
    request_body: Any = None
    response_headers: dict[str, str] = field(default_factory=dict)
    fields: tuple[str, ...] = ()
    note: str = ""
    stream: str | None = None  # "json-lines": a watch, its body the list of events
    order: str = ""  # a key (`cellAddress`): lists of objects holding it are compared sorted by it (Go's map order)


@dataclass(frozen=True)
class Transcript:
    program: str
    version: str
    origin: str  # hand-written | recorded
    sources: tuple[str, ...]
    setup: dict[str, Any]
    exchanges: tuple[Exchange, ...]
    path: Path | None = None
    # where the recorded program is another version than the fake models: a body path (list indices left out,
    # `body.items.metadata.managedFields`) → why the fake need not have it; replay leaves out shape differences there
    allowed: dict[str, str] = field(default_factory=dict)


def load_transcript(path: Path) -> Transcript:
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} file")
    exchanges = tuple(
        Exchange(method=e["request"]["method"], path=e["request"]["path"], status=int(e["response"]["status"]),
                 body=e["response"].get("body"), request_headers=dict(e["request"].get("headers") or {}),
                 request_body=e["request"].get("body"), response_headers=dict(e["response"].get("headers") or {}),
                 fields=tuple(e.get("fields") or ()), note=str(e.get("note", "")), stream=e["response"].get("stream"),
                 order=str(e.get("order", "")))
        for e in data["exchanges"])
    return Transcript(str(data["program"]), str(data["version"]), str(data["origin"]), tuple(data.get("sources") or ()),
                      dict(data.get("setup") or {}), exchanges, path, dict(data.get("allowed") or {}))


def as_data(transcript: Transcript) -> dict[str, Any]:
    return {
        "format": FORMAT, "program": transcript.program, "version": transcript.version, "origin": transcript.origin,
        "sources": list(transcript.sources), "setup": transcript.setup,
        **({"allowed": transcript.allowed} if transcript.allowed else {}),
        "exchanges": [{"note": e.note,
                       "request": {"method": e.method, "path": e.path, "headers": e.request_headers,
                                   "body": e.request_body},
                       "response": {"status": e.status, "headers": e.response_headers, "body": e.body,
                                    **({"stream": e.stream} if e.stream else {})},
                       "fields": list(e.fields), **({"order": e.order} if e.order else {})}
                      for e in transcript.exchanges],
    }


# ------------------------------------------------------------------ redaction


def redact(value: Any, secrets: Mapping[str, str]) -> Any:
    """A copy with every known secret replaced by its placeholder (`secrets`: value → `<token:alice>`), values under
    secret keys and JWT-shaped strings by `<redacted>`."""
    if isinstance(value, dict):
        return {k: (_redact_text(v, secrets, whole=True) if str(k).lower() in SECRET_KEYS and isinstance(v, str)
                    else redact(v, secrets)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    if isinstance(value, str):
        return _redact_text(value, secrets)
    return value


def _redact_text(text: str, secrets: Mapping[str, str], whole: bool = False) -> str:
    if text in secrets:
        return secrets[text]
    if PLACEHOLDER.fullmatch(text) or text == REDACTED:  # already a placeholder (a setup's `<password:alice>`)
        return text
    if whole:
        return REDACTED
    for secret, placeholder in sorted(secrets.items(), key=lambda item: -len(item[0])):
        text = text.replace(secret, placeholder)
    return JWT.sub(REDACTED, text)


def redact_headers(headers: Mapping[str, str], secrets: Mapping[str, str]) -> dict[str, str]:
    """Authorization and cookies keep their scheme and lose their value, unless it is a known secret."""
    out = {}
    for key, value in headers.items():
        if key.lower() in SECRET_HEADERS:
            scheme, _, credential = value.partition(" ")
            out[key] = f"{scheme} {secrets.get(credential, REDACTED)}" if credential else REDACTED
        else:
            out[key] = redact(value, secrets)
    return out


def write_transcript(path: Path, transcript: Transcript, secrets: Mapping[str, str]) -> None:
    """Write a transcript (e.g. one recorded on the rehearsal cluster) whole, its secrets redacted."""
    redacted = [Exchange(e.method, redact(e.path, secrets), e.status, redact(e.body, secrets),
                         redact_headers(e.request_headers, secrets), redact(e.request_body, secrets),
                         redact_headers(e.response_headers, secrets), e.fields, e.note, e.stream, e.order)
                for e in transcript.exchanges]
    clean = Transcript(transcript.program, transcript.version, transcript.origin, transcript.sources,
                       redact(transcript.setup, secrets), tuple(redacted), allowed=transcript.allowed)
    write_atomic(path, json.dumps(as_data(clean), ensure_ascii=False, indent=1) + "\n")


def find_secrets(text: str) -> list[str]:
    """What looks like a secret that escaped redaction: a JWT, or a password/token value that is no placeholder."""
    found = [m.group(0)[:12] + "…" for m in JWT.finditer(text)]
    for match in re.finditer(r'"(?:token|password|newPassword|oldPassword)"\s*:\s*"([^"]*)"', text):
        if not PLACEHOLDER.fullmatch(match.group(1)) and match.group(1) != REDACTED:
            found.append(match.group(0)[:40])
    for match in re.finditer(r'"Authorization"\s*:\s*"(\w+) ([^"]*)"', text):
        if not PLACEHOLDER.fullmatch(match.group(2)) and match.group(2) != REDACTED:
            found.append(match.group(0)[:40])
    return found


# ------------------------------------------------------------------ replay


def fill(value: Any, resolve: Callable[[str, str | None], str]) -> Any:
    """The request with its placeholders replaced by what the fake accepts (`resolve(kind, user)`)."""
    if isinstance(value, dict):
        return {k: fill(v, resolve) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, resolve) for v in value]
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: resolve(m.group(1), m.group(2)), value)
    return value


def shape_differences(real: Any, fake: Any, where: str = "body") -> list[str]:
    """Where the fake's body lacks the real one's shape: a missing key, another JSON type, an empty list."""
    if real is None:
        return []
    if isinstance(real, dict):
        if not isinstance(fake, dict):
            return [f"{where}: an object in the real answer, {type(fake).__name__} in the fake's"]
        out = []
        for key, value in real.items():
            if key not in fake:
                out.append(f"{where}.{key}: missing in the fake's answer")
            else:
                out += shape_differences(value, fake[key], f"{where}.{key}")
        return out
    if isinstance(real, list):
        if not isinstance(fake, list):
            return [f"{where}: a list in the real answer, {type(fake).__name__} in the fake's"]
        if real and not fake:
            return [f"{where}: empty in the fake's answer"]
        return shape_differences(real[0], fake[0], f"{where}[0]") if real else []
    same = isinstance(fake, bool) if isinstance(real, bool) else (
        isinstance(fake, int | float) and not isinstance(fake, bool) if isinstance(real, int | float)
        else isinstance(fake, type(real)))
    return [] if same else [f"{where}: {type(real).__name__} in the real answer, {type(fake).__name__} in the fake's"]


MISSING = object()


def pick(body: Any, dotted: str) -> Any:
    """The value at a dotted path; a list of strings is read as a set (the project reads granted VCs that way)."""
    for part in dotted.split("."):
        if isinstance(body, list) and part.isdigit() and int(part) < len(body):
            body = body[int(part)]
        elif isinstance(body, dict) and part in body:
            body = body[part]
        else:
            return MISSING
    return sorted(body) if isinstance(body, list) and all(isinstance(v, str) for v in body) else body


def ordered(body: Any, key: str) -> Any:
    """`body` with every list of objects that all hold `key` (a dotted path) sorted by it, recursively, where the
    real program lists from a Go map, whose order changes from run to run: HiveD's cells
    (`pkg/algorithm/hived_algorithm.go` ranges over `fullCellList`, a map of chains; `order: cellAddress`) and the
    ADDED events of a watch from 0, which the API server's watch cache lists from its store, a map
    (`order: object.metadata.name`)."""
    if isinstance(body, dict):
        return {k: ordered(v, key) for k, v in body.items()}
    if isinstance(body, list):
        items = [ordered(v, key) for v in body]
        if items and all(pick(v, key) is not MISSING for v in items):
            return sorted(items, key=lambda v: str(pick(v, key)))
        return items
    return body


def compare(exchange: Exchange, status: int, content_type: str, body: Any) -> list[str]:
    """The fake's answer against the real one (lists sorted by `exchange.order` on both sides when it is set)."""
    if exchange.order:
        exchange = replace(exchange, body=ordered(exchange.body, exchange.order))
        body = ordered(body, exchange.order)
    label = f"{exchange.method} {exchange.path}"
    out = []
    if status != exchange.status:
        out.append(f"{label}: status {status}, the real program answered {exchange.status}")
    real_type = exchange.response_headers.get("Content-Type", "")
    if real_type and real_type.split(";")[0] != content_type.split(";")[0]:
        out.append(f"{label}: Content-Type {content_type!r}, the real program's is {real_type!r}")
    out += [f"{label}: {d}" for d in shape_differences(exchange.body, body)]
    for dotted in exchange.fields:
        real, fake = pick(exchange.body, dotted), pick(body, dotted)
        if real != fake and real != REDACTED:
            out.append(f"{label}: {dotted} is {fake!r}, the real program's is {real!r}")
    return out


def replay(transcript: Transcript, base_url: str, resolve: Callable[[str, str | None], str],
           before: Callable[[Exchange], None] | None = None) -> list[str]:
    """Send each request to the fake at `base_url` in order; every difference from the real answers. `before` is
    called with each exchange first: it gives the fake what no request can (a job's state, which FrameworkController
    moves on a real cluster)."""
    differences = []
    with requests.Session() as session:
        session.trust_env = False
        for exchange in transcript.exchanges:
            if before is not None:
                before(exchange)
            headers = fill(exchange.request_headers, resolve)
            body = exchange.request_body
            data = (fill(body, resolve) if isinstance(body, str) else json.dumps(fill(body, resolve))).encode() \
                if body is not None else None
            response = session.request(exchange.method, base_url + fill(exchange.path, resolve), data=data,
                                       headers=headers, allow_redirects=False, timeout=10)
            answer = _decode(response, exchange.stream)
            found = compare(exchange, response.status_code, response.headers.get("Content-Type", ""), answer)
            differences += [d for d in found if not allowed_difference(d, transcript.allowed)]
    return differences


def allowed_difference(difference: str, allowed: Mapping[str, str]) -> bool:
    """A shape difference at a path the transcript's `allowed` names (list indices left out)."""
    where = difference.split(": ")[1] if difference.count(": ") >= 2 else ""
    return re.sub(r"\[\d+\]", "", where) in allowed


def _decode(response: requests.Response, stream: str | None) -> Any:
    if stream == "json-lines":
        return [json.loads(line) for line in response.text.splitlines() if line.strip()]
    try:
        return response.json() if response.content else None
    except ValueError:
        return response.text


def transcripts(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))
