"""Fakes at the wire for the real-cluster parts: programs on PATH that print recorded outputs, local HTTP servers
(the fixtures that use them, `fake_bin` and `serve`, are in tests/conftest.py)."""

from __future__ import annotations

import json
import stat
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.paths import FIXTURES

GPU_MACHINE = FIXTURES / "gpu-machine"
DOCKER = FIXTURES / "docker"


def write_program(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def nvidia_smi_script(folder: Path) -> str:
    """A fake nvidia-smi answering the machine-readable queries from the recorded H200 outputs."""
    csv = folder / "query.csv"
    csv.write_text((GPU_MACHINE / "query-gpu.csv").read_text(encoding="utf-8").replace(", compute_cap", "")
                   .replace(", 9.0", ""), encoding="utf-8")
    return (
        'case "$1" in\n'
        f'  --query-gpu=*) cat "{csv}" ;;\n'
        f'  -q) cat "{GPU_MACHINE / "nvidia-smi-q.xml"}" ;;\n'
        '  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)" ;;\n'
        f'  *) cat "{GPU_MACHINE / "nvidia-smi.txt"}" ;;\n'
        "esac\n"
    )


Handler = Callable[[BaseHTTPRequestHandler, str, str, bytes], tuple[int, dict[str, str], bytes] | None]


class QuietServer(ThreadingHTTPServer):
    """Every local fake's HTTP server: on 127.0.0.1, a thread per request that never holds the process, and quiet
    when a client hangs up mid-answer (a watch closed, a run stopped: what the tests do on purpose); any other
    error is still printed."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class QuietHandler(BaseHTTPRequestHandler):
    """The base of every local fake's request handler: HTTP/1.1 (keep-alive, chunked watches), no access log."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass


def local_server(handler: type[BaseHTTPRequestHandler]) -> tuple[QuietServer, threading.Thread, str]:
    """A server for `handler` on a free port, the thread that serves it (not yet started) and its URL."""
    server = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    return server, thread, f"http://127.0.0.1:{server.server_address[1]}"


class LocalServer:
    """A threaded HTTP server on 127.0.0.1 answering through one function; records every request."""

    def __init__(self, handle: Handler) -> None:
        self.requests: list[dict[str, object]] = []
        owner = self

        class _Handler(QuietHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                owner.requests.append(
                    {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
                )
                reply = handle(self, self.command, self.path, body)
                if reply is None:  # drop the connection without a reply
                    self.close_connection = True
                    return
                status, headers, data = reply
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _serve

        self.server, self.thread, self.url = local_server(_Handler)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def json_reply(status: int, payload: object) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json; charset=utf-8"}, json.dumps(payload).encode()
