"""The fakes in tests/support/ held to the real programs: each transcript in tests/fixtures/transcripts/ is replayed
against its fake over real HTTP, and the fake must answer as the real program did (status, Content-Type, the body's
shape, the fields the project reads). Also: no fixture holds a token or a password (docs/transcripts.md)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import requests

from tests.support.fakehived import FakeHived
from tests.support.fakepai import FakePai
from tests.support.k8s_server import FakeApiServer
from tests.support.pai_tokens import TOKEN_DAYS, make_jwt
from tests.support.paths import FIXTURES, ROOT
from tests.support.transcript_recorder import RecordingProxy, Secrets, Upstream
from tests.support.transcript_topics import KUBE_VIEWS, kube_cut, polled_once
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


JOB_DETAIL = "/rest-server/api/v2/jobs/"
CLUSTER_DECIDES = ("containerNodeName", "containerExitCode", "retries")  # HiveD's placement, the exit, FC's retries
OPENPAI = transcripts(TRANSCRIPTS / "openpai")
HIVED = transcripts(TRANSCRIPTS / "hived")
KUBERNETES = transcripts(TRANSCRIPTS / "kubernetes")


def test_there_are_transcripts_for_each_fake():
    assert {p.stem for p in OPENPAI} >= {"users", "tokens", "jobs"}
    assert {p.stem for p in HIVED} >= {"one-vc", "two-vc"}
    assert {p.stem for p in KUBERNETES} >= {"lists"}


def job_state_as_recorded(pai: FakePai) -> Callable[[Exchange], None]:
    """Before a read of a job's detail, the fake's job takes the state the real one had: FrameworkController moves
    it on a real cluster, the fake's tests set it (`FakePai.set_state`)."""
    def before(exchange: Exchange) -> None:
        route = exchange.path.split("?")[0]
        if exchange.method == "GET" and route == JOB_DETAIL.rstrip("/") and isinstance(exchange.body, list):
            for row in exchange.body:  # a list shows each job's state too
                job_id = f"{row['username']}~{row['name']}"
                if job_id in pai.jobs and pai.jobs[job_id]["jobStatus"]["state"] != row["state"]:
                    pai.set_state(job_id, row["state"], executionType=row["executionType"])
        status = exchange.body.get("jobStatus") if isinstance(exchange.body, dict) else None
        if exchange.method != "GET" or not route.startswith(JOB_DETAIL) or not isinstance(status, dict):
            return
        job_id = unquote(route[len(JOB_DETAIL):])
        if job_id in pai.jobs and "/" not in job_id:
            decided = [{key: task[key] for key in CLUSTER_DECIDES if key in task}
                       for role in (exchange.body.get("taskRoles") or {}).values() for task in role["taskStatuses"]]
            pai.set_state(job_id, status["state"], decided, executionType=status["executionType"])
    return before


def described(transcript: Transcript) -> bool:
    """A hand-written transcript names its upstream sources; a recorded one where it was recorded."""
    return bool(transcript.sources) if transcript.origin == "hand-written" else \
        transcript.origin == "recorded" and bool(transcript.setup.get("recordedOn"))


@pytest.mark.parametrize("path", OPENPAI, ids=[p.stem for p in OPENPAI])
def test_fakepai_answers_as_the_rest_server_did(path: Path, serve):
    transcript = load_transcript(path)
    assert (transcript.program, transcript.version) == ("openpai-rest-server", "v1.2.0") and described(transcript)
    pai, secrets = pai_for(transcript, serve)
    assert replay(transcript, pai.server.url, secrets, before=job_state_as_recorded(pai)) == []


@pytest.mark.parametrize("path", HIVED, ids=[p.stem for p in HIVED])
def test_fakehived_answers_as_hived_did(path: Path, serve):
    transcript = load_transcript(path)
    assert (transcript.program, transcript.version) == ("hivedscheduler", "v0.3.4") and described(transcript)
    hived = FakeHived(serve, (ROOT / transcript.setup["config"]).read_text(encoding="utf-8"))
    assert replay(transcript, hived.url, lambda kind, user: "") == []


WRITERS_METADATA = ("annotations", "ownerReferences", "generateName", "finalizers")


def recorded_objects(transcript: Transcript) -> list[tuple[str, dict[str, Any]]]:
    """The objects of the transcript's first list of each resource its setup names (`setup.objects`)."""
    found: list[tuple[str, dict[str, Any]]] = []
    for resource in ("nodes", "pods", "frameworks"):
        names = transcript.setup.get(resource)
        lists = [e for e in transcript.exchanges if e.status == 200 and isinstance(e.body, dict)
                 and e.path.split("?")[0].endswith("/" + resource) and isinstance(e.body.get("items"), list)]
        if names is not None and lists:
            found += [(resource, item) for item in lists[0].body["items"] if item["metadata"]["name"] in names]
    return found


@pytest.mark.parametrize("path", KUBERNETES, ids=[p.stem for p in KUBERNETES])
def test_the_fake_api_server_answers_as_kubernetes_did(path: Path):
    transcript = load_transcript(path)
    assert transcript.program == "kube-apiserver" and described(transcript)
    with FakeApiServer() as api:
        for resource, item in recorded_objects(transcript):
            metadata = item["metadata"]
            api.add(resource, metadata["name"], labels=metadata.get("labels") or {},
                    meta={key: metadata[key] for key in WRITERS_METADATA if key in metadata},
                    **{key: value for key, value in item.items() if key not in ("kind", "apiVersion", "metadata")})
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


# ------------------------------------------------------------------ the recorder


def test_the_recorder_redacts_what_it_learnt_from_answers_urls_and_yaml(serve, tmp_path):
    """A token the recorder only ever saw in an answer (an application token) is redacted wherever it comes back:
    in an Authorization header, a URL's query and a YAML body; a password sent at login likewise."""
    pai = FakePai(serve)
    secrets = Secrets()
    with RecordingProxy(Upstream(pai.url, strip="/rest-server"), secrets) as proxy, requests.Session() as http:
        http.trust_env = False
        base = proxy.url + "/rest-server/api/v2"
        login = http.post(f"{base}/authn/basic/login", json={"username": "alice", "password": "alice-pass"}).json()
        bearer = {"Authorization": f"Bearer {login['token']}"}
        app = http.post(f"{base}/tokens/application", headers=bearer).json()["token"]
        basic = base64.b64encode(f"alice:{app}".encode()).decode()
        assert http.get(f"{base}/jobs?username=alice&token={app}", headers=bearer).status_code == 200
        protocol = f"name: leak\ntaskRoles:\n  t:\n    instances: 1\n    commands: [echo {app}]\n"
        assert http.post(f"{base}/jobs", data=protocol, headers={**bearer, "Content-Type": "text/yaml"}).ok
        assert http.get(f"{base}/users/alice", headers={"Authorization": f"Basic {basic}"}).status_code == 200
        taken = proxy.taken()
    assert [e.status for e in taken] == [200, 200, 200, 202, 200]
    assert taken[1].fields == ("application",) and taken[3].request_body == protocol  # YAML kept as text
    path = tmp_path / "recorded.json"
    write_transcript(path, Transcript("openpai-rest-server", "v1.2.0", "recorded", (), {}, tuple(taken)),
                     secrets.mapping())
    text = path.read_text(encoding="utf-8")
    assert app not in text and login["token"] not in text and "alice-pass" not in text and basic not in text
    assert find_secrets(text) == []
    again = load_transcript(path).exchanges
    assert again[2].path == "/rest-server/api/v2/jobs?username=alice&token=<token:alice>"
    assert "echo <token:alice>" in again[3].request_body and again[0].request_body["password"] == "<password:alice>"
    assert again[4].request_headers["Authorization"] == "Basic <basic:alice>"


def test_the_recorder_streams_a_watch_and_keeps_its_events():
    with FakeApiServer() as api:
        api.add("pods", "p0", spec={}, status={"phase": "Pending"})
        with RecordingProxy(Upstream(api.url), Secrets()) as proxy:
            lines = requests.get(proxy.url + "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0"
                                 "&timeoutSeconds=1", timeout=10).text.splitlines()
            (watch,) = proxy.taken()
    assert [json.loads(line)["type"] for line in lines] == ["ADDED"] == [e["type"] for e in watch.body]
    assert watch.stream == "json-lines" and watch.fields == ("0.type", "0.object.kind", "0.object.metadata.name")


def test_a_fake_that_regresses_fails_the_recorded_replay(serve, monkeypatch):
    """The recorded jobs transcript catches a fake whose job detail loses its tasks again."""
    path = TRANSCRIPTS / "openpai" / "jobs.json"
    transcript = load_transcript(path)
    monkeypatch.setattr("tests.support.fakepai.attempt", lambda job, roles, tasks: None)
    pai, secrets = pai_for(transcript, serve)
    found = replay(transcript, pai.server.url, secrets, before=job_state_as_recorded(pai))
    assert any("taskRoles" in difference for difference in found)


def test_a_recorded_flow_is_cut_to_what_the_project_reads():
    """A run's polling keeps one answer per job state; an API server's list its first objects, the watch the ADDED
    events of those, compared in name order, without managedFields or the pod template's bulk."""
    def detail(state: str, job: str = "alice~a") -> Exchange:
        return Exchange("GET", f"/rest-server/api/v2/jobs/{job}", 200, {"jobStatus": {"state": state,
                                                                                      "executionType": "START"}})
    polled = [detail("WAITING"), detail("WAITING"), detail("RUNNING"), detail("RUNNING", "bob~b"),
              Exchange("GET", "/", 404), detail("SUCCEEDED")]
    assert [e.body["jobStatus"]["state"] for e in polled_once(polled)] == ["WAITING", "RUNNING", "SUCCEEDED"]

    def pod(name: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "managedFields": [{}]}, "spec": {"nodeName": "n", "containers": [{}]}}
    listed = Exchange("GET", KUBE_VIEWS[0], 200, {"kind": "PodList", "items": [pod("p0"), pod("p1"), pod("p2")]})
    events = [{"type": "ADDED", "object": {"kind": "Pod", **pod(n)}} for n in ("p2", "p1", "p0")]
    watch = Exchange("GET", KUBE_VIEWS[2], 200, events + [{"type": "MODIFIED", "object": pod("p0")}],
                     stream="json-lines")
    cut_list, cut_watch = kube_cut([listed, watch])
    assert [i["metadata"] for i in cut_list.body["items"]] == [{"name": "p0"}, {"name": "p1"}]
    assert cut_list.body["items"][0]["spec"] == {"nodeName": "n"} and "first 2 of 3 items" in cut_list.note
    assert [e["object"]["metadata"]["name"] for e in cut_watch.body] == ["p1", "p0"]
    assert cut_watch.order == "object.metadata.name" and cut_watch.fields[0] == "0.type"
