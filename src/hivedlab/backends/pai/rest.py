"""A small client for OpenPAI v1.2.0's rest-server (docs/openpai-model.md#the-rest-api), on `requests`.

Login, submit (`text/yaml`), job detail, stop, list jobs and VCs. Tokens come from `HIVEDLAB_PAI_TOKEN` or a 0600
file and are never printed, logged or recorded: the client's repr, its call log and its errors leave them out.
429s and transient failures (connection errors, 502/503/504) are retried with backoff; a submission whose reply was
lost is looked up before it is sent again, so nothing is submitted twice. Every error reply becomes a `PaiError`
whose one-line message (en / zh) names the cause (HTTP status and the server's error code; or bad header, TLS, DNS,
refused, timeout, dropped) and says what to do (`hivedlab.backends.pai.rest_errors`).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from hivedlab.backends.pai.rest_address import (
    MODELLED_VERSION,
    PYLON_PREFIX,
    announce,
    answers_as_rest_server,
    fetch_portal,
    modelled_version,
    normalize_base_url,
    portal_url,
)
from hivedlab.backends.pai.rest_errors import (
    DIRECT_PORT,
    TOKEN_ENV,
    PaiError,
    RestReply,
    TokenInfo,
    explain,
    retryable,
    transport_error,
)

__all__ = ["DIRECT_PORT", "MODELLED_VERSION", "TOKEN_ENV", "TOKEN_FILE_ENV", "PaiClient", "PaiError", "RestCall",
           "RestReply", "TokenInfo", "clean_token", "explain", "fetch_portal", "modelled_version", "normalize_base_url",
           "portal_url", "read_token_file", "redact", "token_claims", "token_user"]

TOKEN_FILE_ENV = "HIVEDLAB_PAI_TOKEN_FILE"
TRANSIENT_STATUSES = (502, 503, 504)


@dataclass(frozen=True)
class RestCall:
    """One request and its reply as the call log keeps it (no headers, so no token)."""

    method: str
    path: str
    status: int | None
    body: Any
    attempt: int
    elapsed_s: float
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "status": self.status, "body": self.body,
                "attempt": self.attempt, "elapsed_s": round(self.elapsed_s, 3), "error": self.error}


# ------------------------------------------------------------------ tokens and names


def read_token_file(path: Path) -> str:
    """The file's text as written (its line numbers kept), after checking that only its owner can read it."""
    try:
        info = path.stat()
    except OSError as exc:
        raise PaiError(f"cannot read token file {path}: {exc.strerror}", f"无法读取 token 文件 {path}") from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        mode = stat.S_IMODE(info.st_mode)
        raise PaiError(
            f"token file {path} is readable by group or others (mode {mode:04o}); run `chmod 600 {path}`",
            f"token 文件 {path} 对组或其他用户可读（权限 {mode:04o}），请执行 `chmod 600 {path}`",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise PaiError(f"cannot read token file {path}", f"无法读取 token 文件 {path}") from None
    if not text.strip():
        raise PaiError(f"token file {path} is empty", f"token 文件 {path} 是空的")
    return text


def clean_token(token: str, source: str) -> str:
    """The token without the blanks around it (a file written by `echo` ends in a line break); one still holding a
    blank or control character cannot go in a header, which is said here rather than as a network error."""
    text = token.strip()
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise PaiError(f"{source} holds a line break, space or control character inside the token: write the token "
                       "alone on one line",
                       f"{source} 的 token 中间含有换行、空格或控制字符：请只写 token 本身，占一行")
    return text


def token_claims(token: str) -> dict[str, Any]:
    """The claims of a rest-server JWT (read, not verified); empty when the token is not a JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, TypeError):
        return {}
    return payload if isinstance(payload, dict) else {}


def token_user(token: str) -> str | None:
    """The `username` claim of a rest-server JWT (read, not verified), or None."""
    user = token_claims(token).get("username")
    return user if isinstance(user, str) else None


def is_application_token(token: str) -> bool:
    """An application token (`POST /api/v2/tokens/application`, never expires): a JWT with `application: true`.
    The rest-server takes it as `Authorization: Basic base64(user:token)`, for job calls only."""
    return token_claims(token).get("application") is True


# ------------------------------------------------------------------ the client


class PaiClient:
    """One user's session with the rest-server. `on_call` receives every `RestCall` (the backend logs them)."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout_s: float = 30.0,
        retries: int = 4,
        backoff_s: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
        on_call: Callable[[RestCall], None] | None = None,
        session: requests.Session | None = None,
        token_source: tuple[str, str] = (TOKEN_ENV, TOKEN_ENV),
    ) -> None:
        given = normalize_base_url(base_url)
        self._root = given  # an address without a path: the rest-server is found on the first request (`_find`)
        self._base: str | None = given if urlsplit(given).path else None
        self.__token = token
        self.user = token_user(token) if token else None
        self._token_source = token_source  # (en, zh) words for where the token came from, for the advice
        self.timeout_s, self.retries, self.backoff_s = timeout_s, retries, backoff_s
        self._sleep, self._on_call = sleep, on_call
        self._session = session or requests.Session()
        self._session.trust_env = False  # no proxies from the environment for a lab cluster

    @property
    def base_url(self) -> str:
        """The rest-server's address: as given, or as found from an address without a path."""
        return self._base or self._root

    def __repr__(self) -> str:
        return f"PaiClient({self.base_url!r}, user={self.user!r}, token={'<set>' if self.__token else None})"

    def close(self) -> None:
        self._session.close()

    def token_info(self) -> TokenInfo:
        """Where this client's token came from and when it expires (its `exp` claim), for error sentences."""
        exp = token_claims(self.__token).get("exp") if self.__token else None
        expires = (dt.datetime.fromtimestamp(exp, dt.timezone.utc)
                   if isinstance(exp, int | float) and not isinstance(exp, bool) else None)
        return TokenInfo(self._token_source[0], self._token_source[1], expires)

    def fail(self, reply: RestReply, what: str) -> PaiError:
        """The error sentence for a reply to this client, naming its token's source and expiry on a 401."""
        return explain(reply, what, self.token_info())

    # -- plumbing

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        if self.__token and self.user and is_application_token(self.__token):
            pair = base64.b64encode(f"{self.user}:{self.__token}".encode()).decode()
            headers["Authorization"] = f"Basic {pair}"
        elif self.__token:
            headers["Authorization"] = f"Bearer {self.__token}"
        return headers

    def _once(self, base: str, method: str, path: str, body: bytes | None, content_type: str | None,
              attempt: int) -> RestReply:
        started = time.monotonic()
        path = base[len(self._root):] + path  # as the call log keeps it: under the address given
        try:
            response = self._session.request(method, self._root + path, data=body, timeout=self.timeout_s,
                                             headers=self._headers(content_type), allow_redirects=False)
        except requests.RequestException as exc:
            self._log(RestCall(method, path, None, None, attempt, time.monotonic() - started, type(exc).__name__))
            raise
        reply = RestReply(response.status_code, _decode(response))
        self._log(RestCall(method, path, reply.status, redact(reply.body), attempt, time.monotonic() - started))
        return reply

    def _log(self, call: RestCall) -> None:
        if self._on_call:
            self._on_call(call)

    def _pause(self, attempt: int, reply: RestReply | None) -> None:
        self._sleep(self.backoff_s * (2 ** (attempt - 1)))  # 2, 4, 8, 16 s by default

    def request(self, method: str, path: str, body: bytes | None = None, content_type: str | None = None,
                *, lost_reply_check: Callable[[], RestReply | None] | None = None) -> RestReply:
        """Send with retries on 429, 502/503/504 and connection errors; returns the last reply.

        `lost_reply_check` is asked after a failed attempt of a non-idempotent call; a reply it returns ends the
        retries (the earlier attempt did reach the server).
        """
        if self._base is None:
            self._base = self._find()
        return self._send(self._base, method, path, body, content_type, lost_reply_check)

    def _find(self) -> str:
        """The rest-server behind an address without a path (an `ssh -L` tunnel to pylon, the master itself, a
        rest-server's own port): pylon's `/rest-server/api/v2/info` first, then the root's `/api/v2/info`; the first
        that answers as a v1.2.0 rest-server wins, and is named once."""
        tried = []
        for base in (self._root + PYLON_PREFIX, self._root):
            reply = self._send(base, "GET", "/api/v2/info", None, None, None)
            if answers_as_rest_server(reply, base):
                announce(self._root, base)
                return base
            tried.append(f"{base}/api/v2/info: HTTP {reply.status}")
        raise PaiError(f"no OpenPAI v1.2.0 rest-server answers at {self._root} ({'; '.join(tried)}): give the "
                       f"rest-server's own address, http://<master>{PYLON_PREFIX} through pylon or "
                       f"http://<master>:{DIRECT_PORT}",
                       f"{self._root} 上没有 OpenPAI v1.2.0 的 rest-server 应答（{'；'.join(tried)}）："
                       f"请给出 rest-server 本身的地址，经由 pylon 为 http://<master>{PYLON_PREFIX}，"
                       f"或 http://<master>:{DIRECT_PORT}")

    def _send(self, base: str, method: str, path: str, body: bytes | None, content_type: str | None,
              lost_reply_check: Callable[[], RestReply | None] | None) -> RestReply:
        for attempt in range(1, self.retries + 2):
            try:
                reply = self._once(base, method, path, body, content_type, attempt)
            except requests.RequestException as exc:
                if attempt > self.retries or not retryable(exc):
                    raise transport_error(base, exc, self.timeout_s) from None
                self._pause(attempt, None)
                if lost_reply_check and (found := lost_reply_check()) is not None:
                    return found
                continue
            if (reply.status == 429 or reply.status in TRANSIENT_STATUSES) and attempt <= self.retries:
                self._pause(attempt, reply)
                if reply.status != 429 and lost_reply_check and (found := lost_reply_check()) is not None:
                    return found
                continue
            return reply
        raise AssertionError("unreachable")  # pragma: no cover

    def _json(self, method: str, path: str, what: str, payload: Any = None, ok: tuple[int, ...] = (200,)) -> Any:
        body = json.dumps(payload).encode() if payload is not None else None
        reply = self.request(method, path, body, "application/json" if body is not None else None)
        if reply.status not in ok:
            raise self.fail(reply, what)
        return reply.body

    # -- endpoints (docs/openpai-model.md#endpoints)

    def info(self) -> dict[str, Any]:
        """`GET /api/v2/info` (no auth): `{name, version, launcherType, authnMethod}`; `version` may be null or absent
        (v1.2.0 reads it from a ConfigMap)."""
        body = self._json("GET", "/api/v2/info", "cluster info")
        if not isinstance(body, dict) or not {"name", "version", "launcherType"} & set(body):
            raise PaiError(f"{self.base_url} did not answer like an OpenPAI rest-server",
                           f"{self.base_url} 不像 OpenPAI 的 rest-server")
        return body

    def login(self, username: str, password: str) -> str:
        """Basic-mode login; keeps and returns the JWT (7 days)."""
        reply = self.request("POST", "/api/v2/authn/basic/login",
                             json.dumps({"username": username, "password": password}).encode(), "application/json")
        if reply.status != 200:
            raise self.fail(reply, f"login as {username}")
        token = reply.body.get("token") if isinstance(reply.body, dict) else None
        if not isinstance(token, str) or not token:
            raise PaiError("the login reply has no token", "登录回复中没有 token")
        self.__token, self.user = token, str(reply.body.get("user") or username)
        return token

    def submit(self, protocol_yaml: str, job_name: str) -> RestReply:
        """`POST /api/v2/jobs` with the YAML text (`text/yaml`). Returns the reply (202 accepted, 4xx/5xx rejected);
        raises `PaiError` for auth failures, rate limits after retries and an unreachable master."""
        user = self.user

        def already_there() -> RestReply | None:
            if not user:
                return None
            found = self.request("GET", f"/api/v2/jobs/{_job_path(user, job_name)}")
            if found.status == 200:
                return RestReply(202, {"status": 202, "message": f"job {job_name} found after a lost reply",
                                       "recovered": True})
            return None

        reply = self.request("POST", "/api/v2/jobs", protocol_yaml.encode("utf-8"), "text/yaml",
                             lost_reply_check=already_there)
        if reply.status in (401, 429):
            raise self.fail(reply, f"submit {job_name}")
        return reply

    def job(self, user: str, job_name: str) -> dict[str, Any] | None:
        """The job detail (docs/openpai-model.md#endpoints), or None when the cluster does not know the job."""
        return self.get_object(f"/api/v2/jobs/{_job_path(user, job_name)}", "NoJobError",
                               f"status of {user}~{job_name}")

    def get_object(self, path: str, missing_code: str, doing: str) -> dict[str, Any] | None:
        """`GET path`: the JSON object, or None when the rest-server says it is missing — `missing_code` with 404 or
        400 (v1.2.0's `controllers/v2/user.js` `getUser` answers a missing user 400 `NoUserError`,
        `models/v2/job/k8s.js` `get` a missing job 404 `NoJobError`), or a 404 without a code; anything else says
        what failed while `doing`."""
        reply = self.request("GET", path)
        if (reply.status in (400, 404) and reply.code == missing_code) or (reply.status == 404 and reply.code is None):
            return None
        if reply.status != 200 or not isinstance(reply.body, dict):
            raise self.fail(reply, doing)
        return reply.body

    def stop(self, user: str, job_name: str) -> RestReply:
        """`PUT .../executionType {"value": "STOP"}` (202)."""
        reply = self.request("PUT", f"/api/v2/jobs/{_job_path(user, job_name)}/executionType",
                             json.dumps({"value": "STOP"}).encode(), "application/json")
        if reply.status != 202:
            raise self.fail(reply, f"stop {user}~{job_name}")
        return reply

    def list_jobs(self, *, usernames: tuple[str, ...] = (), vc: str | None = None,
                  states: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """`GET /api/v2/jobs` filtered (rate limit 60/min/user: poll job detail instead)."""
        query = []
        if usernames:
            query.append("username=" + quote(",".join(usernames)))
        if vc:
            query.append("vc=" + quote(vc))
        if states:
            query.append("state=" + quote(",".join(states)))
        path = "/api/v2/jobs" + ("?" + "&".join(query) if query else "")
        body = self._json("GET", path, "list jobs")
        if isinstance(body, dict) and isinstance(body.get("data"), list):
            body = body["data"]
        return [item for item in body if isinstance(item, dict)] if isinstance(body, list) else []

    def virtual_clusters(self) -> dict[str, Any]:
        """`GET /api/v2/virtual-clusters`: `{vc: {capacity, resourcesTotal, ...}}` (always has `default`)."""
        body = self._json("GET", "/api/v2/virtual-clusters", "list virtual clusters")
        return body if isinstance(body, dict) else {}


SECRET_KEYS = ("token", "password", "secret", "secrets")


def redact(value: Any) -> Any:
    """A copy of a decoded body with token, password and secret values replaced (login replies carry the JWT)."""
    if isinstance(value, dict):
        return {k: "<redacted>" if str(k).lower() in SECRET_KEYS else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def _job_path(user: str, job_name: str) -> str:
    return quote(f"{user}~{job_name}", safe="~")


def _decode(response: requests.Response) -> Any:
    text = response.content.decode("utf-8", "replace")
    if not text:
        return None
    try:
        return json.loads(text)  # docs/openpai-model.md#endpoints: /config is JSON even when labelled text/yaml
    except ValueError:
        return text
