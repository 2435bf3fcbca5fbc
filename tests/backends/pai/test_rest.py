"""The OpenPAI REST client over real HTTP against a fake rest-server on 127.0.0.1."""

from __future__ import annotations

import logging
import os
import time
from datetime import datetime, timezone

import pytest

from hivedlab.backends.pai import rest
from hivedlab.backends.pai.rest import PaiClient, PaiError
from hivedlab.backends.pai.tokens import load_tokens
from tests.support.fakepai import FakePai
from tests.support.local import json_reply
from tests.support.pai_tokens import make_jwt
from tests.support.pai_world import job


@pytest.fixture
def pai(serve):
    return FakePai(serve)


@pytest.fixture
def sleeps():
    return []


def client(pai, sleeps, user="alice", calls=None, **kw):
    return PaiClient(pai.url, pai.token(user) if user else None, sleep=sleeps.append, backoff_s=0.5,
                     on_call=calls.append if calls is not None else None, **kw)


# ------------------------------------------------------------------ happy paths


def test_info_login_submit_status_stop(pai, sleeps):
    anon = client(pai, sleeps, user=None)
    assert anon.info()["version"] == "v1.2.0"
    token = anon.login("alice", "alice-pass")
    assert anon.user == "alice" and pai.tokens[token] == "alice" and rest.token_user(token) == "alice"
    reply = anon.submit(job(), "job-config-0-alice-r1")
    assert reply.status == 202 and "successfully" in reply.message
    post = [r for r in pai.requests if r["method"] == "POST" and r["path"].endswith("/api/v2/jobs")][0]
    assert post["headers"]["Content-Type"] == "text/yaml"
    assert post["body"].decode() == job()  # the YAML text exactly as given
    assert post["headers"]["Authorization"] == f"Bearer {token}"
    detail = anon.job("alice", "job-config-0-alice-r1")
    assert detail["jobStatus"]["state"] == "WAITING" and detail["taskRoles"] == {}
    assert anon.stop("alice", "job-config-0-alice-r1").status == 202
    assert anon.job("alice", "job-config-0-alice-r1")["jobStatus"]["state"] == "STOPPED"
    assert anon.job("alice", "never-submitted") is None
    assert set(anon.virtual_clusters()) == {"default", "vc1"}
    assert [j["name"] for j in anon.list_jobs(states=("STOPPED",))] == ["job-config-0-alice-r1"]
    assert anon.list_jobs(states=("RUNNING", "WAITING")) == []


def test_base_url_normalisation():
    """The address as given; one without a path is a machine on which the client finds the rest-server (below)."""
    assert rest.normalize_base_url("http://10.0.1.2") == "http://10.0.1.2"
    assert rest.normalize_base_url("10.0.1.2/") == "http://10.0.1.2"
    assert rest.normalize_base_url("http://127.0.0.1:12186") == "http://127.0.0.1:12186"
    assert rest.normalize_base_url("https://pai.example/rest-server/") == "https://pai.example/rest-server"
    with pytest.raises(PaiError, match="not an OpenPAI URL"):
        rest.normalize_base_url("ftp://x")


def test_wrong_password_and_unknown_user(pai, sleeps):
    with pytest.raises(PaiError) as caught:
        client(pai, sleeps, user=None).login("alice", "wrong-pass")
    assert caught.value.code == "IncorrectPasswordError" and "wrong password" in str(caught.value)
    assert "密码错误" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(PaiError, match="User carol is not found.*create the user"):
        client(pai, sleeps, user=None).login("carol", "whatever")


def test_a_forged_token_is_refused_and_names_where_it_came_from(pai, sleeps):
    forged = PaiClient(pai.url, "a.b.c", sleep=sleeps.append)
    with pytest.raises(PaiError, match="HIVEDLAB_PAI_TOKEN was refused.*HTTP 401 UnauthorizedUserError") as caught:
        forged.submit(job(), "j")
    assert caught.value.status == 401 and "expired" not in caught.value.en


def test_an_expired_token_is_reported_with_its_expiry(pai, sleeps):
    """v1.2.0 answers an expired token exactly as a forged one (401 "Your token is invalid."): the client reads the
    token's own `exp` to say which it is."""
    exp = int(time.time()) - 3600
    token = make_jwt("alice", exp=exp)
    pai.tokens[token] = "alice"
    when = datetime.fromtimestamp(exp, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with pytest.raises(PaiError) as caught:
        PaiClient(pai.url, token, sleep=sleeps.append, token_source=("alice's token (line 2 of t)", "x")).submit(
            job(), "j")
    assert caught.value.en == (f"submit j: alice's token (line 2 of t) expired at {when} (login tokens last 7 days): "
                               "log in again and replace alice's token (line 2 of t) (HTTP 401 UnauthorizedUserError)")


def test_unknown_vc_is_403_with_advice(pai, sleeps):
    reply = client(pai, sleeps).submit(job(vc="vc9"), "job-config-0-alice-r1")
    assert reply.status == 403 and reply.code == "ForbiddenUserError"
    sentence = str(rest.explain(reply, "submit"))
    assert "scheduler-config" in sentence and "not allowed to do operation in vc9" in sentence


def test_stopping_someone_elses_job_is_403_with_its_own_advice(pai, sleeps):
    client(pai, sleeps, user="bob").submit(job("bobs-job"), "bobs-job")
    with pytest.raises(PaiError, match="only the job's owner or an admin") as caught:
        client(pai, sleeps).stop("bob", "bobs-job")
    assert caught.value.status == 403


def test_job_name_taken_is_409(pai, sleeps):
    c = client(pai, sleeps)
    assert c.submit(job(), "job-config-0-alice-r1").status == 202
    reply = c.submit(job(), "job-config-0-alice-r1")
    assert reply.status == 409
    assert "never be reused" in str(rest.explain(reply, "submit"))


def test_over_quota_is_a_rejection_reply(pai, sleeps):
    reply = client(pai, sleeps).submit(job(instances=4), "j")
    assert reply.status == 400 and "exceeds maximum 2 SKUs" in reply.message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"message": "Cannot read property 'gpu' of undefined"}, "skuType is not in the deployed HiveD config"),
        ({"message": "Cannot read properties of undefined (reading 'gpu')"}, "skuType"),
        ({"message": "unacceptable kind of an object to dump [object Undefined]"}, "instances: 1"),
        ({"message": "boom"}, "kubectl get pods"),
    ],
    ids=["unknown-skutype-node10", "unknown-skutype-newer-node", "gang-without-instances", "other-500"],
)
def test_500s_explained(body, expected):
    error = rest.explain(rest.RestReply(500, body), "submit j")
    assert expected in str(error) and error.status == 500


def test_not_a_rest_server(serve, sleeps):
    server = serve(lambda *_: json_reply(404, {"code": "NoApiError", "message": "API /x is not found."}))
    with pytest.raises(PaiError, match="not an OpenPAI v1.2.0 rest-server"):
        PaiClient(server.url + "/x", "t", sleep=sleeps.append).info()


def test_unreachable_master(sleeps):
    c = PaiClient("http://127.0.0.1:9", "t", sleep=sleeps.append, retries=2, timeout_s=2)
    with pytest.raises(PaiError, match="127.0.0.1:9 refused the connection") as caught:
        c.info()
    assert "拒绝连接" in str(caught.value)
    assert len(sleeps) == 2  # a master restarting refuses for a while: retried


# ------------------------------------------------------------------ retries


def test_429_is_retried_with_backoff(pai, sleeps):
    calls = []
    c = client(pai, sleeps, calls=calls)
    pai.fail_next("POST", "/api/v2/jobs",
                  (429, {"Content-Type": "text/plain"}, b"Too many requests, please try again later."))
    pai.fail_next("POST", "/api/v2/jobs",
                  (429, {"Content-Type": "text/plain"}, b"Too many requests, please try again later."))
    assert c.submit(job(), "job-config-0-alice-r1").status == 202
    assert sleeps == [0.5, 1.0]
    assert [call.status for call in calls] == [429, 429, 202]


def test_429_exhausted_is_one_sentence(pai, sleeps):
    c = client(pai, sleeps, retries=1)
    for _ in range(2):
        pai.fail_next("POST", "/api/v2/jobs", (429, {}, b"Too many requests, please try again later."))
    with pytest.raises(PaiError, match="rate limit"):
        c.submit(job(), "j")
    assert pai.jobs == {}


def test_transient_502_then_ok(pai, sleeps):
    pai.fail_next("GET", "/api/v2/virtual-clusters", (502, {}, b"Bad Gateway"))
    assert "vc1" in client(pai, sleeps).virtual_clusters()
    assert sleeps == [0.5]


def test_dropped_connection_on_get_is_retried(pai, sleeps):
    pai.fail_next("GET", "/api/v2/info", None)
    assert client(pai, sleeps).info()["version"] == "v1.2.0"


def test_lost_submit_reply_is_not_submitted_twice(pai, sleeps):
    """The server accepted the job but the connection dropped before the reply: look it up, do not POST again."""
    calls = []
    c = client(pai, sleeps, calls=calls)
    pai.fail_next("POST", "/api/v2/jobs", None, after=True)
    reply = c.submit(job(), "job-config-0-alice-r1")
    assert reply.status == 202 and reply.body["recovered"] is True
    posts = [r for r in pai.requests if r["method"] == "POST"]
    assert len(posts) == 1 and list(pai.jobs) == ["alice~job-config-0-alice-r1"]


def test_dropped_submit_that_never_arrived_is_sent_again(pai, sleeps):
    c = client(pai, sleeps)
    pai.fail_next("POST", "/api/v2/jobs", None)
    assert c.submit(job(), "job-config-0-alice-r1").status == 202
    assert len([r for r in pai.requests if r["method"] == "POST"]) == 2
    assert list(pai.jobs) == ["alice~job-config-0-alice-r1"]


def test_500_is_not_retried(pai, sleeps):
    pai.fail_next("POST", "/api/v2/jobs", json_reply(500, {"message": "Cannot read property 'gpu' of undefined"}))
    reply = client(pai, sleeps).submit(job(), "j")
    assert reply.status == 500 and sleeps == []


# ------------------------------------------------------------------ tokens never leak


def test_token_from_env_and_file(tmp_path):
    env = {"HIVEDLAB_PAI_USER": "alice"}
    assert load_tokens(environ={**env, "HIVEDLAB_PAI_TOKEN": " tok \n"}).tokens == {"alice": "tok"}
    path = tmp_path / "token"
    path.write_text("file-token\n")
    path.chmod(0o600)
    assert load_tokens(token_file=path, environ=env).tokens == {"alice": "file-token"}
    assert load_tokens(environ={**env, "HIVEDLAB_PAI_TOKEN_FILE": str(path)}).tokens == {"alice": "file-token"}


def test_group_readable_token_file_is_refused(tmp_path):
    path = tmp_path / "token"
    path.write_text("secret-token-value")
    path.chmod(0o644)
    with pytest.raises(PaiError) as caught:
        load_tokens(token_file=path, environ={})
    assert "chmod 600" in str(caught.value) and "0644" in str(caught.value)
    assert "secret-token-value" not in str(caught.value)


def test_no_token_at_all():
    with pytest.raises(PaiError, match="HIVEDLAB_PAI_TOKEN"):
        load_tokens(environ={})


def test_token_never_in_repr_logs_or_call_log(pai, sleeps, caplog, capsys):
    token = pai.token("alice")
    calls = []
    caplog.set_level(logging.DEBUG)
    c = PaiClient(pai.url, token, sleep=sleeps.append, on_call=calls.append)
    c.submit(job(), "job-config-0-alice-r1")
    c.job("alice", "job-config-0-alice-r1")
    assert c.submit(job(), "job-config-0-alice-r1").status == 409
    with pytest.raises(PaiError) as caught:
        PaiClient(pai.url, token + "x", sleep=sleeps.append).job("alice", "x")
    anon = PaiClient(pai.url, sleep=sleeps.append, on_call=calls.append)
    anon.login("alice", "alice-pass")
    seen = repr(c) + repr(anon) + caplog.text + str(caught.value) + repr([x.as_dict() for x in calls])
    seen += "".join(capsys.readouterr())
    assert token not in seen and "alice-pass" not in seen and "<redacted>" in seen
    assert token.split(".")[2] not in seen


def test_token_user_from_jwt():
    assert rest.token_user(make_jwt("bob")) == "bob"
    assert rest.token_user("not-a-jwt") is None


@pytest.mark.cluster
@pytest.mark.skipif(not os.environ.get("HIVEDLAB_PAI_URL"), reason="needs HIVEDLAB_PAI_URL of a real cluster")
def test_real_cluster_info():
    assert PaiClient(os.environ["HIVEDLAB_PAI_URL"]).info()["version"].startswith("v1.2")


def test_behind_a_tunnel_an_address_without_a_path_finds_pylons_rest_server(pai, sleeps, serve, capsys):
    """`ssh -L 8080:<master>:80` and `http://127.0.0.1:8080`: pylon's `/rest-server/api/v2/info` answers first."""
    from tests.support.pylon import Pylon

    tunnel = Pylon(serve, pai.url)
    found = PaiClient(tunnel.url, pai.token("alice"), sleep=sleeps.append)
    assert found.virtual_clusters() and found.base_url == f"{tunnel.url}/rest-server"
    assert f"OpenPAI's rest-server: {tunnel.url}/rest-server (through pylon)" in capsys.readouterr().err
    paths = [r["path"] for r in tunnel.server.requests]
    assert paths[:2] == ["/rest-server/api/v2/info", "/rest-server/api/v2/virtual-clusters"]
    PaiClient(tunnel.url, sleep=sleeps.append).info()
    assert capsys.readouterr().err == ""  # named once


def test_a_rest_server_reached_directly_is_found_at_its_root(serve, sleeps, capsys):
    """A rest-server's own port (the rehearsal cluster's, or 9186): pylon's path is not there, `/api/v2/info` is."""
    pai = FakePai(serve)
    direct = _direct_rest_server(serve, pai)
    client = PaiClient(direct, sleep=sleeps.append)
    assert client.info()["version"] == "v1.2.0" and client.base_url == direct
    assert f"OpenPAI's rest-server: {direct} (itself)" in capsys.readouterr().err


def test_an_address_where_no_rest_server_answers_names_what_it_tried(serve, sleeps):
    portal = serve(lambda handler, method, path, body: (200, {"Content-Type": "text/html"}, b"<html></html>"))
    with pytest.raises(PaiError) as caught:
        PaiClient(portal.url, sleep=sleeps.append).info()
    assert f"no OpenPAI v1.2.0 rest-server answers at {portal.url}" in str(caught.value)
    assert f"{portal.url}/rest-server/api/v2/info: HTTP 200; {portal.url}/api/v2/info: HTTP 200" in str(caught.value)


def _direct_rest_server(serve, pai: FakePai) -> str:
    """The fake rest-server's routes at a root of their own, as a rest-server's own port serves them."""
    def handle(handler, method: str, path: str, body: bytes):
        if path.startswith("/api/"):
            return pai.handle(handler, method, "/rest-server" + path, body)
        return json_reply(404, {"code": "NoApiError", "message": f"API {path} is not found."})

    return serve(handle).url
