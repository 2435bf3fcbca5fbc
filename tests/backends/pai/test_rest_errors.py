"""Every REST client error names its real cause and what to do, in en and zh — over real sockets on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest
import requests

from hivedlab.backends.pai.rest import PaiClient, PaiError, RestReply, explain
from hivedlab.backends.pai.rest_errors import transport_error
from tests.support.fakepai import FakePai


class RawServer:
    """A TCP server on 127.0.0.1 whose every connection is given to `serve_one` (no HTTP unless it writes some)."""

    def __init__(self, serve_one: Callable[[socket.socket], None]) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.connections = 0
        self._serve_one = serve_one
        self._stop = threading.Event()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        self.sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            threading.Thread(target=self._serve_one, args=(conn,), daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


@pytest.fixture
def raw() -> Iterator[Callable[[Callable[[socket.socket], None]], RawServer]]:
    servers: list[RawServer] = []

    def start(serve_one: Callable[[socket.socket], None]) -> RawServer:
        servers.append(RawServer(serve_one))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def failure(client: PaiClient, call: Callable[[PaiClient], object]) -> PaiError:
    with pytest.raises(PaiError) as caught:
        call(client)
    client.close()
    return caught.value


def test_a_token_with_a_line_break_is_a_bad_header_not_the_network(serve) -> None:
    pai = FakePai(serve)
    sleeps: list[float] = []
    error = failure(PaiClient(pai.url, pai.token("admin") + "\n", sleep=sleeps.append),
                    lambda c: c.virtual_clusters())
    assert error.en.startswith("the request was not sent: a header is invalid (the token holds a line break")
    assert "printf %s" in error.en and "请求头无效" in error.zh
    assert "refused" not in error.en and "connection" not in error.en
    assert sleeps == [] and pai.requests == []  # nothing was sent, nothing retried


def test_tls_to_a_plain_http_server(serve) -> None:
    pai = FakePai(serve)
    port = pai.url.split(":")[2].split("/")[0]
    sleeps: list[float] = []
    error = failure(PaiClient(f"https://127.0.0.1:{port}", sleep=sleeps.append), lambda c: c.info())
    assert error.en.startswith(f"the TLS handshake with 127.0.0.1:{port} failed")
    assert "use http://127.0.0.1" in error.en and "TLS 握手失败" in error.zh and sleeps == []


def test_a_name_that_does_not_resolve(monkeypatch) -> None:
    real = socket.getaddrinfo

    def resolve(host, *args, **kwargs):
        if host == "pai-master.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    sleeps: list[float] = []
    error = failure(PaiClient("http://pai-master.invalid", sleep=sleeps.append), lambda c: c.info())
    assert error.en.startswith("the name pai-master.invalid cannot be resolved (DNS): use the master's IP address")
    assert "无法解析主机名" in error.zh and sleeps == []


def test_a_refused_connection_is_retried_then_named() -> None:
    port = free_port()
    sleeps: list[float] = []
    error = failure(PaiClient(f"http://127.0.0.1:{port}", sleep=sleeps.append, retries=2), lambda c: c.info())
    assert error.en.startswith(f"127.0.0.1:{port} refused the connection: nothing listens there")
    assert "拒绝连接" in error.zh and len(sleeps) == 2


def test_a_server_that_never_answers_times_out(raw) -> None:
    hold = threading.Event()
    server = raw(lambda conn: (hold.wait(5), conn.close()))
    sleeps: list[float] = []
    pylon = f"{server.url}/rest-server"  # a loopback port alone is the rest-server itself (a rehearsal cluster)
    error = failure(PaiClient(pylon, sleep=sleeps.append, retries=1, timeout_s=0.3), lambda c: c.info())
    hold.set()
    assert error.en.startswith(f"the rest-server at {server.url}/rest-server accepted the connection but did not "
                               "answer after 0.3 s")
    assert "没有应答" in error.zh and len(sleeps) == 1 and server.connections == 2


def test_a_connect_timeout_names_the_address_and_port() -> None:
    exc = requests.exceptions.ConnectTimeout("Connection to 10.0.1.2 timed out. (connect timeout=5)")
    error = transport_error("http://10.0.1.2/rest-server", exc, 5)
    assert error.en.startswith("connecting to 10.0.1.2:80 timed out after 5 s: the address may be wrong or a "
                               "firewall drops the packets")
    assert "超时" in error.zh


def test_a_dropped_connection_is_retried_then_named(raw) -> None:
    server = raw(lambda conn: (conn.recv(4096), conn.close()))
    sleeps: list[float] = []
    error = failure(PaiClient(f"{server.url}/rest-server", sleep=sleeps.append, retries=1), lambda c: c.info())
    assert error.en.startswith(f"the connection to {server.url}/rest-server was dropped before a reply")
    assert "断开" in error.zh and len(sleeps) == 1


@pytest.mark.parametrize(("status", "body", "expected"), [
    (400, {"code": "NoUserError", "message": "User eve is not found."}, "(HTTP 400 NoUserError)"),
    (409, {"code": "ConflictUserError", "message": "User name eve already exists."}, "(HTTP 409 ConflictUserError)"),
    (400, {"code": "NoVirtualClusterError", "message": "Try to update nonexist: vc1"},
     "the VC is not in the deployed HiveD config"),
    (404, {"code": "NoGroupError", "message": "No groups for vc: vc1"}, "(HTTP 404 NoGroupError)"),
    (502, "<html>Bad Gateway</html>", "(HTTP 502)"),
    (403, {"code": "ForbiddenUserError", "message": "Non-admin is not allow to do this operation."},
     "this needs an OpenPAI admin's token"),
    (403, {"code": "ForbiddenUserError", "message": "Applications are not allowed to do this operation."},
     "an application token cannot do this; use a login token"),
    (403, {"code": "ForbiddenUserError", "message": "User bob is not allowed to execute job alice~t1."},
     "only the job's owner or an admin may do this (HTTP 403 ForbiddenUserError)"),
    (418, None, "unexpected reply: no message; check the address is the rest-server's (HTTP 418)"),
])
def test_every_reply_error_names_its_status_and_code(status, body, expected) -> None:
    error = explain(RestReply(status, body), "grant vc1 to eve")
    assert expected in error.en and error.en.startswith("grant vc1 to eve: ")
    assert f"HTTP {status}" in error.zh and error.status == status


def test_a_missing_header_and_a_forged_token_are_told_apart(serve) -> None:
    pai = FakePai(serve)
    anonymous = failure(PaiClient(pai.url, sleep=lambda s: None), lambda c: c.virtual_clusters())
    assert "no token was sent: set HIVEDLAB_PAI_TOKEN" in anonymous.en
    forged = failure(PaiClient(pai.url, "x.y.z", sleep=lambda s: None, token_source=("the admin token in f", "f")),
                     lambda c: c.virtual_clusters())
    assert "the admin token in f was refused" in forged.en and "HIVEDLAB_PAI_TOKEN" not in forged.en
