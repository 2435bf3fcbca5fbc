"""Readiness probes over loopback HTTP(S): does a program answer yet."""

from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


def _context(ca: Path | None) -> ssl.SSLContext:
    if ca is None:  # a component's own self-signed health endpoint
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    return ssl.create_default_context(cafile=str(ca))


def get(url: str, *, ca: Path | None = None, token: str | None = None, timeout_s: float = 2.0) -> tuple[int, Any]:
    """(HTTP status, JSON body or text); status 0 when nothing answers."""
    return _call(urllib.request.Request(url, headers=_auth(token)), timeout_s, ca)


def send(method: str, url: str, body: Any, *, ca: Path | None, token: str | None,
         timeout_s: float = 5.0, content_type: str = "application/json") -> tuple[int, Any]:
    """`get` for a request with a JSON body (a PATCH: `content_type` names the patch's kind)."""
    headers = {"Content-Type": content_type, **_auth(token)}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method=method)
    return _call(request, timeout_s, ca)


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _call(request: urllib.request.Request, timeout_s: float, ca: Path | None) -> tuple[int, Any]:
    https = request.full_url.startswith("https")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=_context(ca) if https else None) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (OSError, ValueError):
        return 0, None
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def answers(url: str, **kwargs: Any) -> bool:
    """Any HTTP answer below 500."""
    status, _ = get(url, **kwargs)
    return 0 < status < 500


def ok(url: str, **kwargs: Any) -> bool:
    status, _ = get(url, **kwargs)
    return status == 200


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False
