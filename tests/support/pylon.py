"""A stand-in for OpenPAI v1.2.0's pylon, the nginx in front of the cluster's services, routing as its configuration
does (microsoft/pai, tag v1.2.0, `src/pylon/deploy/pylon-config/location.conf.template`, included by
`nginx.conf.template`'s server on port 80): `= /healthz` answers "Pylon ready."; `^/rest-server/api(.*)$` goes to the
rest-server's `/api$1`; every other path (`^(.*)$`) goes to the web portal, which answers with its page. The
rest-server behind it is a `FakePai` (itself reached under `/rest-server`), so a test can put the stand-in where a
student's `ssh -L 8080:<master>:80` tunnel ends."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import requests

from tests.support.local import LocalServer

PORTAL_PAGE = b"<!DOCTYPE html><title>Platform for AI</title>"
_REST_SERVER = re.compile(r"^/rest-server/api(.*)$")


class Pylon:
    def __init__(self, serve: Any, rest_server: str) -> None:
        """`rest_server`: the address under which the rest-server's `/api/...` routes answer."""
        self.rest_server = rest_server.rstrip("/")
        self.server: LocalServer = serve(self.handle)
        self.url = self.server.url  # what the tunnel's local end looks like: http://127.0.0.1:<port>, no path

    def handle(self, handler: Any, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        if urlsplit(path).path == "/healthz":  # nginx's `location =` matches the path without its arguments
            return 200, {"Content-Type": "text/plain"}, b"Pylon ready."
        routed = _REST_SERVER.match(path)
        if routed is None:  # the web portal: a single-page app, its page for any path
            return 200, {"Content-Type": "text/html; charset=utf-8"}, PORTAL_PAGE
        headers = {key: value for key, value in handler.headers.items()
                   if key.lower() in ("authorization", "content-type", "accept")}
        with requests.Session() as session:
            session.trust_env = False  # a proxy from the environment must never carry a loopback call elsewhere
            reply = session.request(method, f"{self.rest_server}/api{routed.group(1)}", data=body or None,
                                    headers=headers, timeout=10, allow_redirects=False)
        return reply.status_code, {"Content-Type": reply.headers.get("Content-Type", "")}, reply.content
