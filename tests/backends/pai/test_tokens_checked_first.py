"""Every member's token is tried before anything is submitted; a bad one names the member and its line."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from hivedlab.backends.pai import open_backend
from hivedlab.backends.pai.rest import PaiClient
from hivedlab.backends.pai.tokens import load_tokens
from hivedlab.basics.errors import HivedlabError
from hivedlab.evidence import EvidenceWriter
from tests.support.fakepai import FakePai
from tests.support.pai_tokens import make_jwt
from tests.support.pai_world import INVENTORY, StubHived


@pytest.fixture
def cluster(serve):
    return FakePai(serve), StubHived(serve)


def token_file(tmp_path, text):
    path = tmp_path / "tokens"
    path.write_text(text)
    path.chmod(0o600)
    return path


def open_with(cluster, tmp_path, path, members=("alice", "bob")):
    pai, hived = cluster
    writer = EvidenceWriter(tmp_path / "run" / "experiments" / "vc-safety" / "evidence.jsonl", "k8s")
    try:
        backend = open_backend(writer, INVENTORY, members=members, pai_url=pai.url, token_file=path,
                               hived_url=hived.server.url, watcher_factory=lambda tap: None, environ={})
        backend.close()
    finally:
        writer.close()


def submissions(pai):
    return [r for r in pai.requests if r["method"] == "POST" and r["path"].endswith("/jobs")]


def test_a_bad_second_token_names_the_member_and_line_before_anything_is_submitted(cluster, tmp_path):
    pai, _ = cluster
    path = token_file(tmp_path, f"# the group's tokens\nalice: {pai.token('alice')}\nbob: expired-or-garbage\n")
    with pytest.raises(HivedlabError) as caught:
        open_with(cluster, tmp_path, path)
    message = str(caught.value)
    assert "member bob" in message and f"line 3 of {path}" in message and "nothing was submitted" in message
    assert "was refused" in message and "HTTP 401 UnauthorizedUserError" in message and "expired" not in message
    assert "expired-or-garbage" not in message
    assert submissions(pai) == [] and pai.jobs == {}


def test_a_bad_first_token_is_named_too_not_a_failed_job_list(cluster, tmp_path):
    pai, _ = cluster
    pai.revoke("alice")
    path = token_file(tmp_path, f"alice: {pai.token('alice')}\nbob: {pai.token('bob')}\n")
    with pytest.raises(HivedlabError, match=f"member alice \\(line 1 of {path}\\)"):
        open_with(cluster, tmp_path, path)
    assert submissions(pai) == []


def test_an_expired_token_is_named_with_when_it_expired(cluster, tmp_path):
    pai, _ = cluster
    exp = int(time.time()) - 600
    expired = make_jwt("bob", exp=exp)
    pai.tokens[expired] = "bob"  # issued by the cluster, then its seven days ran out
    path = token_file(tmp_path, f"alice: {pai.token('alice')}\nbob: {expired}\n")
    when = datetime.fromtimestamp(exp, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with pytest.raises(HivedlabError, match=f"member bob \\(line 2 of .*\\) expired at {when}"):
        open_with(cluster, tmp_path, path)
    assert submissions(pai) == []


def test_someone_elses_token_is_refused(cluster, tmp_path):
    pai, _ = cluster
    path = token_file(tmp_path, f"alice: {pai.token('alice')}\nbob: {pai.token('alice')}\n")
    with pytest.raises(HivedlabError, match="member bob \\(line 2 of .*\\) is alice's, not bob's"):
        open_with(cluster, tmp_path, path)


def test_a_member_who_submits_needs_a_token(cluster, tmp_path):
    pai, _ = cluster
    path = token_file(tmp_path, f"alice: {pai.token('alice')}\n")
    with pytest.raises(HivedlabError, match="no OpenPAI token for member bob"):
        open_with(cluster, tmp_path, path)
    open_with(cluster, tmp_path, path, members=("alice",))  # a plan only alice submits in needs only hers


def test_the_check_is_a_job_list_per_member(cluster, tmp_path):
    pai, _ = cluster
    path = token_file(tmp_path, f"alice: {pai.token('alice')}\nbob: {pai.token('bob')}\n")
    open_with(cluster, tmp_path, path)
    lists = [r["path"] for r in pai.requests if r["path"].startswith("/rest-server/api/v2/jobs?username=")]
    assert lists == ["/rest-server/api/v2/jobs?username=alice", "/rest-server/api/v2/jobs?username=bob"]


def test_application_tokens_go_as_basic_auth_and_pass_the_check(cluster, tmp_path):
    pai, _ = cluster
    app = make_jwt("bob", application=True)
    path = token_file(tmp_path, f"alice: {pai.token('alice')}\nbob: {app}\n")
    open_with(cluster, tmp_path, path)
    bob_calls = [r for r in pai.requests if r["path"] == "/rest-server/api/v2/jobs?username=bob"]
    assert bob_calls and bob_calls[0]["headers"]["Authorization"].startswith("Basic ")
    client = PaiClient(pai.url, app, sleep=lambda s: None)
    try:
        assert client.submit("name: x\ntaskRoles: {w: {instances: 1}}\n", "x").status == 202
        assert pai.jobs["bob~x"]["jobStatus"]["username"] == "bob"
    finally:
        client.close()


def test_token_lines_are_remembered_without_the_tokens(tmp_path):
    path = token_file(tmp_path, "\nalice: aaa\n\nBob: bbb\n")
    tokens = load_tokens(token_file=path, environ={})
    assert tokens.tokens == {"alice": "aaa", "bob": "bbb"}
    assert tokens.origins == {"alice": f"line 2 of {path}", "bob": f"line 4 of {path}"}
