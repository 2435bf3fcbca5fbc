"""The transcript recorder (docs/transcripts.md#the-recorder): a recording reverse proxy on loopback in front of one
real program — OpenPAI's rest-server, HiveD's web service or the kube-apiserver — that forwards every request, streams
a watch's answer through while keeping its events, and keeps each exchange as a `transcripts.Exchange`.

A developer tool, not part of the installed package: `tests/support/record_transcripts.py` runs it against the rehearsal
cluster. The proxy serves plain HTTP on 127.0.0.1 and carries the client's `Authorization` through; in front of the
rest-server it stands where OpenPAI's pylon stands and strips `/rest-server` as pylon's nginx does (pai v1.2.0
`src/pylon/deploy/pylon-config/location.conf.template`, `location ~ ^/rest-server/api(.*)$`), so the recorded paths
are those a client of a course cluster sends.

`Secrets` learns each secret it sees — a password sent, a token issued — and names it by its placeholder
(docs/transcripts.md#redaction); `transcripts.write_transcript` then writes with those names and redacts the rest.
`fields_for` gives each exchange the body paths the project reads, from `FIELDS`, one row per endpoint.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import requests

from hivedlab.backends.pai.rest import token_claims
from tests.support.local import QuietHandler, local_server
from tests.support.transcripts import Exchange

KEPT_REQUEST_HEADERS = ("Authorization", "Content-Type")
KEPT_RESPONSE_HEADERS = ("Content-Type", "Location")
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}

# The body paths the project reads, per endpoint: (method, path pattern, status class) → fields. `#` in a field is
# every index of the list at that point that the real answer has (the fake must list the same items in that order).
FIELDS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    # OpenPAI's rest-server (hivedlab.backends.pai.rest, .users)
    ("GET", r"/rest-server/api/v2/info", "2", ("version", "launcherType")),
    ("POST", r"/rest-server/api/v2/authn/basic/login", "2", ("user", "admin")),
    ("POST", r"/rest-server/api/v2/tokens/application", "2", ("application",)),
    ("GET", r"/rest-server/api/v2/users/[^/]+", "2", ("username", "admin", "virtualCluster")),
    ("POST|PUT", r"/rest-server/api/v2/users", "2", ("message",)),
    ("POST", r"/rest-server/api/v2/jobs", "2", ("status", "message")),
    ("GET", r"/rest-server/api/v2/jobs/[^/?]+", "2", ("name", "jobStatus.username", "jobStatus.state",
                                                      "jobStatus.executionType", "jobStatus.virtualCluster")),
    ("GET", r"/rest-server/api/v2/jobs(\?.*)?", "2", ("#.name", "#.username", "#.state", "#.virtualCluster")),
    ("PUT", r"/rest-server/api/v2/jobs/[^/]+/executionType", "2", ("status", "message")),
    ("GET", r"/rest-server/api/v2/virtual-clusters", "2", ()),
    ("[A-Z]+", r"/rest-server/.*", "4", ("code", "message")),
    # HiveD's web service (hivedlab.backends.pai.hived_inspect)
    ("GET", r"/v1/inspect/clusterstatus/physicalcluster", "2", ("#.cellType", "#.cellAddress",
                                                                "#.cellChildren.#.cellAddress",
                                                                "#.cellChildren.#.isNodeLevel")),
    ("GET", r"/v1/inspect/clusterstatus/virtualclusters/", "2", ("*.#.cellType", "*.#.cellAddress")),
    ("GET", r"/v1/inspect/clusterstatus/virtualclusters/[^/]+", "2", ("#.cellType", "#.cellAddress")),
    # The kube-apiserver (hivedlab.backends.watcher, hivedlab doctor)
    ("GET", r"/api/v1/nodes", "2", ("kind", "apiVersion", "items.#.metadata.name")),
    ("GET", r"/api/v1/namespaces/[^/]+/pods\?(?!.*watch).*", "2", (
        "kind", "items.#.metadata.name", "items.#.metadata.labels.FC_TASK_INDEX", "items.#.status.phase")),
    ("GET", r"/apis?/.*\?.*watch=(true|1).*", "2", ("#.type", "#.object.kind", "#.object.metadata.name")),
    ("GET", r"/apis?/[^?]*(\?.*)?", "2", ("kind", "apiVersion")),
    ("[A-Z]+", r"/apis?/.*", "4", ("kind", "status", "reason", "code")),
)


def fields_for(method: str, path: str, status: int, body: Any) -> tuple[str, ...]:
    """The read fields of one exchange: its endpoint's row of `FIELDS` with `#` (every index) and `*` (every key)
    expanded over the real body; a field the body lacks is left out."""
    for methods, pattern, status_class, fields in FIELDS:
        if re.fullmatch(methods, method) and re.fullmatch(pattern, path) and str(status).startswith(status_class):
            return tuple(path for field in fields for path in _expand(field.split("."), body, ""))
    return ()


def _expand(parts: list[str], body: Any, prefix: str) -> list[str]:
    if not parts:
        return [prefix.rstrip(".")]
    head, rest = parts[0], parts[1:]
    if head == "#" and isinstance(body, list):
        return [p for index, item in enumerate(body) for p in _expand(rest, item, f"{prefix}{index}.")]
    if head == "*" and isinstance(body, dict):
        return [p for key, item in sorted(body.items()) for p in _expand(rest, item, f"{prefix}{key}.")]
    if isinstance(body, dict) and head in body:
        return _expand(rest, body[head], f"{prefix}{head}.")
    return []


# ------------------------------------------------------------------ secrets


class Secrets:
    """Each secret the recorder has seen, value → placeholder (`<token:alice>`), learnt from the traffic: passwords
    sent (a login, a user created or changed), tokens issued (a login's answer, an application token), and the
    credentials of `Authorization` headers (a JWT names its user; `Basic` is `base64(user:application token)`)."""

    def __init__(self) -> None:
        self.known: dict[str, str] = {}
        self.lock = threading.Lock()

    def add(self, value: str, placeholder: str) -> None:
        if value and len(value) >= 4:
            with self.lock:
                self.known.setdefault(value, placeholder)

    def mapping(self) -> Mapping[str, str]:
        with self.lock:
            return dict(self.known)

    def learn(self, method: str, path: str, headers: Mapping[str, str], sent: Any, status: int, answer: Any) -> None:
        self._learn_authorization(headers.get("Authorization", ""))
        route = urlsplit(path).path
        if route.endswith("/authn/basic/login") and isinstance(sent, dict):
            user = str(sent.get("username"))
            wrong = isinstance(answer, dict) and answer.get("code") == "IncorrectPasswordError"
            self.add(str(sent.get("password", "")), "<password:wrong>" if wrong else f"<password:{user}>")
            if isinstance(answer, dict) and isinstance(answer.get("token"), str):
                self.add(answer["token"], f"<token:{answer.get('user', user)}>")
        if route.endswith("/api/v2/users") and isinstance(sent, dict):
            fields = sent.get("data", sent) if isinstance(sent.get("data"), dict) else sent
            if isinstance(fields.get("password"), str):
                self.add(fields["password"], f"<password:{fields.get('username')}>")
        if route.endswith("/tokens/application") and isinstance(answer, dict) and isinstance(answer.get("token"), str):
            user = token_claims(answer["token"]).get("username") or "application"
            self.add(answer["token"], f"<token:{user}>")
            self.add(base64.b64encode(f"{user}:{answer['token']}".encode()).decode(), f"<basic:{user}>")

    def _learn_authorization(self, value: str) -> None:
        scheme, _, credential = value.partition(" ")
        if not credential or credential in self.known:
            return
        if scheme.lower() == "basic":
            try:
                user, _, token = base64.b64decode(credential).decode().partition(":")
            except ValueError:
                return
            self.add(credential, f"<basic:{user}>")
            self.add(token, f"<token:{user}>")
        elif scheme.lower() == "bearer" and token_claims(credential).get("username"):
            self.add(credential, f"<token:{token_claims(credential)['username']}>")


# ------------------------------------------------------------------ the proxy


@dataclass(frozen=True)
class Upstream:
    """The real program behind a proxy: its URL, the CA that signs its certificate (the apiserver's), and the
    prefix the proxy strips as pylon does (`/rest-server`)."""

    url: str
    ca: str | None = None
    strip: str = ""


def decode(data: bytes, content_type: str) -> Any:
    """A body as a transcript keeps it: JSON as a value, other text as a string, nothing as None."""
    if not data:
        return None
    text = data.decode("utf-8", errors="replace")
    if "json" in content_type or content_type.startswith("text/plain"):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def is_watch(path: str) -> bool:
    return bool(re.search(r"[?&]watch=(true|1)(&|$)", path))


class RecordingProxy:
    """A reverse proxy on 127.0.0.1 in front of `upstream` keeping every exchange in `exchanges`, in order."""

    def __init__(self, upstream: Upstream, secrets: Secrets, max_events: int = 200) -> None:
        self.upstream, self.secrets, self.max_events = upstream, secrets, max_events
        self.exchanges: list[Exchange] = []
        self.lock = threading.Lock()
        self.session = requests.Session()
        self.session.trust_env = False
        owner = self

        class _Handler(QuietHandler):
            def _serve(self) -> None:
                owner.forward(self)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

        self.server, self.thread, self.url = local_server(_Handler)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.session.close()

    def __enter__(self) -> RecordingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def taken(self) -> list[Exchange]:
        with self.lock:
            return list(self.exchanges)

    def forward(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        sent = handler.rfile.read(length) if length else b""
        path = handler.path
        target = path[len(self.upstream.strip):] if self.upstream.strip and path.startswith(self.upstream.strip) \
            else path
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_HEADERS}
        try:
            response = self.session.request(handler.command, self.upstream.url + target, data=sent or None,
                                            headers=headers, allow_redirects=False, stream=True, timeout=(5, 330),
                                            verify=self.upstream.ca or True)
        except requests.RequestException as exc:
            handler.send_error(502, f"the recorder could not reach {self.upstream.url}: {type(exc).__name__}")
            return
        content_type = response.headers.get("Content-Type", "")
        watch = is_watch(path) and response.status_code == 200
        handler.send_response(response.status_code)
        for key, value in response.headers.items():
            if key.lower() not in HOP_HEADERS:
                handler.send_header(key, value)
        if watch:
            body: Any = self._stream(handler, response)
        else:
            data = response.content
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            body = decode(data, content_type)
        response.close()
        request_type = handler.headers.get("Content-Type", "")
        request_body = decode(sent, "application/json" if "json" in request_type else "text/")
        if request_body is not None and "json" not in request_type:
            request_body = sent.decode("utf-8", errors="replace")
        request_headers = {k: handler.headers[k] for k in KEPT_REQUEST_HEADERS if handler.headers.get(k)}
        self.secrets.learn(handler.command, path, request_headers, request_body, response.status_code, body)
        exchange = Exchange(
            method=handler.command, path=path, status=response.status_code, body=body,
            request_headers=request_headers, request_body=request_body,
            response_headers={k: response.headers[k] for k in KEPT_RESPONSE_HEADERS if response.headers.get(k)},
            fields=fields_for(handler.command, path, response.status_code, body),
            stream="json-lines" if watch else None)
        with self.lock:
            self.exchanges.append(exchange)
        if watch:  # the stream's end, once the exchange is kept: a client that has read it finds it taken
            try:
                handler.wfile.write(b"0\r\n\r\n")
            except OSError:
                handler.close_connection = True

    def _stream(self, handler: BaseHTTPRequestHandler, response: requests.Response) -> list[Any]:
        """Pass a watch's lines through as they come (chunked), keeping up to `max_events` of its events."""
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        events: list[Any] = []
        try:
            for line in response.iter_lines():
                if not line:
                    continue
                chunk = line + b"\n"
                handler.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                handler.wfile.flush()
                if len(events) < self.max_events:
                    events.append(decode(line, "application/json"))
        except (requests.RequestException, OSError):
            handler.close_connection = True  # the client went away or the stream broke: keep what came
        return events
