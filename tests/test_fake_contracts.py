"""The fakes in tests/support/ held to the real programs: each transcript in tests/fixtures/transcripts/ is replayed
against its fake over real HTTP, and the fake must answer as the real program did (status, Content-Type, the body's
shape, the fields the project reads). Also: no fixture holds a token or a password (docs/transcripts.md)."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest

from tests.support.fakehived import FakeHived
from tests.support.fakepai import TOKEN_DAYS, FakePai, make_jwt
from tests.support.k8s_server import FakeApiServer
from tests.support.paths import FIXTURES, ROOT
from tests.support.transcripts import (
    REDACTED,
    Exchange,
    Transcript,
    compare,
    find_secrets,
    load_transcript,
    redact,
    replay,
    transcripts,
    write_transcript,
)

TRANSCRIPTS = FIXTURES / "transcripts"
PASSWORDS = {"short": "12345", "wrong": "not-the-password"}
NODE_READY = {"True": ("KubeletReady", "kubelet is posting ready status"),  # the kubelet's and the node controller's
              "Unknown": ("NodeStatusUnknown", "Kubelet stopped posting node status.")}


class PaiSecrets:
    """What the placeholders of an OpenPAI transcript stand for on a fake: tokens it issued, passwords it keeps."""

    def __init__(self, pai: FakePai) -> None:
        self.pai = pai
        self.made: dict[str, str] = {}

    def password(self, user: str) -> str:
        return PASSWORDS.get(user, f"{user}-password-1")

    def __call__(self, kind: str, user: str | None) -> str:
        key = f"{kind}:{user}"
        if key not in self.made:
            self.made[key] = self._make(kind, str(user))
        return self.made[key]

    def _make(self, kind: str, user: str) -> str:
        now = int(time.time())
        if kind == "password":
            return self.password(user)
        if kind == "basic":
            token = make_jwt(user, application=True)
            self.pai.app_tokens[token] = user
            return base64.b64encode(f"{user}:{token}".encode()).decode()
        if kind == "forged-token":
            return make_jwt(user, exp=now + TOKEN_DAYS * 86400) + "Zm9yZ2Vk"
        token = make_jwt(user, exp=now - 3600 if kind == "expired-token" else now + TOKEN_DAYS * 86400)
        self.pai.tokens[token] = user  # issued by the cluster (an expired one too)
        return token


def pai_for(transcript: Transcript, serve) -> tuple[FakePai, PaiSecrets]:
    """A fake rest-server in the transcript's `setup`: its VCs and users (passwords, admin, granted VCs)."""
    setup = transcript.setup
    pai = FakePai(serve, vcs=tuple(setup["virtualClusters"]))
    secrets = PaiSecrets(pai)
    users = setup["users"]
    pai.users = {user: secrets.password(user) for user in users}
    pai.grants = {user: set(spec.get("virtualCluster") or ["default"]) for user, spec in users.items()}
    pai.admins = {user for user, spec in users.items() if spec.get("admin")}
    pai.tokens, pai.app_tokens = {}, {}
    return pai, secrets


OPENPAI = transcripts(TRANSCRIPTS / "openpai")
HIVED = transcripts(TRANSCRIPTS / "hived")
KUBERNETES = transcripts(TRANSCRIPTS / "kubernetes")


def test_there_are_transcripts_for_each_fake():
    assert {p.stem for p in OPENPAI} >= {"users", "tokens", "jobs"}
    assert {p.stem for p in HIVED} >= {"one-vc", "two-vc"}
    assert {p.stem for p in KUBERNETES} >= {"lists"}


@pytest.mark.parametrize("path", OPENPAI, ids=[p.stem for p in OPENPAI])
def test_fakepai_answers_as_the_rest_server_did(path: Path, serve):
    transcript = load_transcript(path)
    assert (transcript.program, transcript.version) == ("openpai-rest-server", "v1.2.0") and transcript.sources
    pai, secrets = pai_for(transcript, serve)
    assert replay(transcript, pai.server.url, secrets) == []


@pytest.mark.parametrize("path", HIVED, ids=[p.stem for p in HIVED])
def test_fakehived_answers_as_hived_did(path: Path, serve):
    transcript = load_transcript(path)
    assert (transcript.program, transcript.version) == ("hivedscheduler", "v0.3.4") and transcript.sources
    hived = FakeHived(serve, (ROOT / transcript.setup["config"]).read_text(encoding="utf-8"))
    assert replay(transcript, hived.url, lambda kind, user: "") == []


@pytest.mark.parametrize("path", KUBERNETES, ids=[p.stem for p in KUBERNETES])
def test_the_fake_api_server_answers_as_kubernetes_did(path: Path):
    transcript = load_transcript(path)
    assert transcript.program == "kube-apiserver" and transcript.sources
    with FakeApiServer() as api:
        for node in transcript.setup["nodes"]:
            reason, message = NODE_READY[node["ready"]]
            api.add("nodes", node["name"], labels={"kubernetes.io/hostname": node["name"]}, spec={},
                    status={"conditions": [{"type": "Ready", "status": node["ready"], "reason": reason,
                                            "message": message}]})
        for pod in transcript.setup["pods"]:
            api.add("pods", pod["name"], labels=pod["labels"], spec={}, status={"phase": pod["phase"]})
        assert replay(transcript, api.url, lambda kind, user: "not-a-secret") == []


def test_a_fake_that_answers_otherwise_is_caught():
    """The comparison itself: the status, a missing key, another type and a read field each count."""
    real = Exchange("GET", "/rest-server/api/v2/users/eve", 400, {"code": "NoUserError", "message": "User eve is not "
                    "found."}, response_headers={"Content-Type": "application/json"}, fields=("code",))
    assert compare(real, 400, "application/json; charset=utf-8", {"code": "NoUserError", "message": "x"}) == []
    found = compare(real, 404, "text/html", {"code": "NoGroupError"})
    assert len(found) == 4 and "status 404, the real program answered 400" in found[0]
    assert "Content-Type" in found[1] and "body.message: missing" in found[2] and "code is 'NoGroupError'" in found[3]
    assert compare(real, 400, "application/json", {"code": 7, "message": "m"})[0].endswith(
        "body.code: str in the real answer, int in the fake's")


def test_a_recorded_transcript_is_written_redacted(tmp_path):
    token, password = make_jwt("alice", exp=int(time.time()) + 60), "alice-secret-1"
    login = Exchange("POST", "/rest-server/api/v2/authn/basic/login", 200, {"user": "alice", "token": token},
                     request_headers={"Content-Type": "application/json"},
                     request_body={"username": "alice", "password": password}, fields=("user",))
    read = Exchange("GET", "/rest-server/api/v2/users/alice", 200, {"username": "alice"},
                    request_headers={"Authorization": f"Bearer {token}", "Cookie": "session=abc"})
    path = tmp_path / "recorded.json"
    write_transcript(path, Transcript("openpai-rest-server", "v1.2.0", "recorded", (), {}, (login, read)),
                     {token: "<token:alice>", password: "<password:alice>"})
    text = path.read_text(encoding="utf-8")
    assert token not in text and password not in text and "session=abc" not in text and find_secrets(text) == []
    again = load_transcript(path)
    assert again.exchanges[0].request_body == {"username": "alice", "password": "<password:alice>"}
    assert again.exchanges[0].body == {"user": "alice", "token": "<token:alice>"}
    assert again.exchanges[1].request_headers == {"Authorization": "Bearer <token:alice>", "Cookie": REDACTED}
    assert redact({"note": f"sent {token}"}, {}) == {"note": f"sent {REDACTED}"}  # an unknown JWT too


def test_the_scan_finds_what_escaped_redaction():
    leaked = json.dumps({"token": make_jwt("bob"), "password": "hunter22", "ok": "<password:bob>"})
    assert len(find_secrets(leaked)) == 3  # the JWT, and both values under secret keys
    assert find_secrets(json.dumps({"password": "<password:bob>", "token": "<redacted>"})) == []
    assert find_secrets('"Authorization": "Bearer abc.def"') != []


def test_no_fixture_holds_a_token_or_a_password():
    leaks = {}
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found = find_secrets(text)
        if found:
            leaks[str(path.relative_to(FIXTURES))] = found[:3]
    assert leaks == {}
