"""`hivedlab accounts` over real HTTP against the fake v1.2.0 rest-server: users, VC grants, tokens, run twice."""

from __future__ import annotations

import json
import stat
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from hivedlab.backends.pai.users import token_expiry
from tests.support.fakepai import FakePai

GROUP = {
    "group": "g1",
    "members": [
        {"name": "Alice", "user": "alice", "roles": ["dev-box"], "hostname": "hostname-alice", "ip": "10.0.1.1"},
        {"name": "Bob", "user": "bob", "roles": ["master"], "hostname": "hostname-bob", "ip": "10.0.1.2"},
        {"name": "Carol", "user": "carol", "roles": ["worker"], "hostname": "hostname-carol", "ip": "10.0.1.3",
         "gpus": 1},
        {"name": "Dan", "user": "dan", "roles": ["worker"], "hostname": "hostname-dan", "ip": "10.0.1.4", "gpus": 1},
    ],
}
PASSWORDS = {"alice": "alice-secret-1", "bob": "bob-secret-22", "carol": "carol-secret-3", "dan": "dan-secret-44"}


def secret_file(path: Path, text: str, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


@pytest.fixture
def setup(tmp_path, monkeypatch):
    for name in ("HIVEDLAB_PAI_URL", "HIVEDLAB_PAI_ADMIN_TOKEN", "HIVEDLAB_PAI_ADMIN_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    inventory = tmp_path / "group.yaml"
    inventory.write_text(yaml.safe_dump(GROUP), encoding="utf-8")
    home = tmp_path / "home"
    passwords = secret_file(home / "pai-passwords.yaml", yaml.safe_dump(PASSWORDS))
    return {"inventory": inventory, "passwords": passwords, "home": home}


def new_pai(serve, vcs=("default", "vc1")) -> FakePai:
    pai = FakePai(serve, vcs=vcs)
    for user in ("alice", "bob"):  # a fresh cluster: the admin only
        del pai.users[user], pai.grants[user]
    return pai


def run(cli, setup, pai, *extra):
    admin = secret_file(setup["home"] / "admin-token", pai.token("admin"))
    return cli("accounts", "--inventory", str(setup["inventory"]), "--pai-url", pai.url,
               "--admin-token-file", str(admin), "--passwords", str(setup["passwords"]), "--lang", "en", *extra)


def token_lines(setup) -> dict[str, str]:
    path = setup["home"] / ".pai-tokens"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def assert_no_secret(result, pai) -> None:
    shown = result.out + result.err
    assert not any(password in shown for password in PASSWORDS.values())
    assert not any(token in shown for token in pai.tokens)


def test_creates_users_grants_vcs_and_writes_tokens(cli, serve, setup):
    pai = new_pai(serve)
    result = run(cli, setup, pai)
    assert result.code == 0, result.err
    assert {u: pai.grants[u] for u in PASSWORDS} == {u: {"default", "vc1"} for u in PASSWORDS}
    assert {u: pai.users[u] for u in PASSWORDS} == PASSWORDS
    tokens = token_lines(setup)
    assert sorted(tokens) == sorted(PASSWORDS) and all(pai.tokens[tokens[u]] == u for u in tokens)
    assert "Carol (carol): created; VC default, vc1; token valid until" in result.out
    assert "Login tokens last 7 days" in result.out and str(setup["home"] / ".pai-tokens") in result.out
    assert_no_secret(result, pai)
    created = [json.loads(r["body"]) for r in pai.requests if r["method"] == "POST" and r["path"].endswith("/users")]
    assert [c["username"] for c in created] == list(PASSWORDS) and all(c["admin"] is False for c in created)


def test_running_twice_changes_nothing_and_logs_in_again(cli, serve, setup):
    pai = new_pai(serve)
    assert run(cli, setup, pai).code == 0
    first = token_lines(setup)
    posts = len(pai.requests)
    again = run(cli, setup, pai)
    assert again.code == 0 and again.out.count("unchanged") == 4
    later = pai.requests[posts:]
    assert not [r for r in later if r["method"] in ("POST", "PUT") and "/users" in r["path"]]
    second = token_lines(setup)
    assert sorted(second) == sorted(first) and all(pai.tokens[second[u]] == u for u in second)


def test_existing_user_gets_the_missing_vc_and_other_lines_are_kept(cli, serve, setup):
    pai = new_pai(serve)
    pai.users["carol"], pai.grants["carol"] = PASSWORDS["carol"], {"default"}
    secret_file(setup["home"] / ".pai-tokens", "ta: some-token\n")
    result = run(cli, setup, pai)
    assert result.code == 0 and "Carol (carol): granted; VC default, vc1" in result.out
    put = [json.loads(r["body"]) for r in pai.requests if r["method"] == "PUT"]
    assert put == [{"data": {"username": "carol", "virtualCluster": ["default", "vc1"]}, "patch": True}]
    assert token_lines(setup)["ta"] == "some-token"


def test_vc1_cannot_be_granted_under_the_one_vc_config(cli, serve, setup):
    pai = new_pai(serve, vcs=("default",))
    result = run(cli, setup, pai, "--vc", "default", "--vc", "vc1")
    assert result.code == 2 and result.err.count("\n") == 1
    assert "vc1 is not a virtual cluster of the config in force" in result.err
    assert "hivedlab scheduler-config two-vc" in result.err and "carol" not in pai.users
    default_only = run(cli, setup, pai)
    assert default_only.code == 0 and pai.grants["dan"] == {"default"}


def test_member_with_another_password_is_a_finding(cli, serve, setup):
    pai = new_pai(serve)
    pai.users["dan"], pai.grants["dan"] = "changed-by-dan", {"default", "vc1"}
    result = run(cli, setup, pai, "--format", "json")
    assert result.code == 1
    data = json.loads(result.out)
    dan = next(m for m in data["members"] if m["user"] == "dan")
    assert dan["token"] is False and "already exists with another password" in dan["problem"]["en"]
    assert pai.users["dan"] == "changed-by-dan"  # never reset behind the member's back
    assert sorted(token_lines(setup)) == ["alice", "bob", "carol"] and data["token_days"] == 7


def test_tokens_say_when_they_expire(cli, serve, setup):
    pai = new_pai(serve)
    result = run(cli, setup, pai)
    expiry = token_expiry(token_lines(setup)["bob"])
    assert expiry is not None
    assert timedelta(days=6, hours=23) < expiry - datetime.now(timezone.utc) <= timedelta(days=7, minutes=1)
    assert f"Bob (bob): created; VC default, vc1; token valid until {expiry:%Y-%m-%d %H:%M} UTC" in result.out


@pytest.mark.parametrize("case", ["group-readable", "in-repository"])
def test_password_file_must_be_private_and_outside_the_repository(cli, serve, setup, tmp_path, case):
    pai = new_pai(serve)
    if case == "group-readable":
        setup["passwords"].chmod(0o640)
        expected = "readable by group or others"
    else:
        (tmp_path / "repo" / ".git").mkdir(parents=True)
        setup["passwords"] = secret_file(tmp_path / "repo" / "pw.yaml", yaml.safe_dump(PASSWORDS))
        expected = "inside the git repository"
    result = run(cli, setup, pai)
    assert result.code == 2 and expected in result.err and result.err.count("\n") == 1
    assert "carol" not in pai.users


def test_token_file_inside_the_repository_is_refused(cli, serve, setup, tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    result = run(cli, setup, new_pai(serve), "--tokens-out", str(tmp_path / "repo" / "tokens"))
    assert result.code == 2 and "--tokens-out" in result.err


def test_passwords_typed_in_a_terminal(cli, serve, setup, monkeypatch) -> None:
    pai = new_pai(serve)
    asked: list[str] = []

    def fake_getpass(prompt: str) -> str:
        asked.append(prompt)
        return PASSWORDS[prompt.split(" for ")[1].split(" ")[0]]

    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("getpass.getpass", fake_getpass)
    admin = secret_file(setup["home"] / "admin-token", pai.token("admin"))
    result = cli("accounts", "--inventory", str(setup["inventory"]), "--pai-url", pai.url,
                 "--admin-token-file", str(admin), "--lang", "en")
    assert result.code == 0 and len(asked) == 4 and pai.users["dan"] == PASSWORDS["dan"]


def test_short_or_missing_password_is_one_line(cli, serve, setup):
    pai = new_pai(serve)
    secret_file(setup["passwords"], yaml.safe_dump({**PASSWORDS, "dan": "12345"}))
    short = run(cli, setup, pai)
    assert short.code == 2 and "shorter than 6" in short.err and "12345" not in short.err
    secret_file(setup["passwords"], yaml.safe_dump({"alice": "alice-secret-1"}))
    missing = run(cli, setup, pai)
    assert missing.code == 2 and "no password for bob, carol, dan" in missing.err


def test_without_passwords_or_admin_token_outside_a_terminal(cli, serve, setup, monkeypatch):
    pai = new_pai(serve)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    no_pw = cli("accounts", "--inventory", str(setup["inventory"]), "--pai-url", pai.url)
    assert no_pw.code == 2 and "--passwords FILE" in no_pw.err
    no_admin = cli("accounts", "--inventory", str(setup["inventory"]), "--pai-url", pai.url,
                   "--passwords", str(setup["passwords"]))
    assert no_admin.code == 2 and "--admin-token-file" in no_admin.err


def test_a_member_token_is_not_an_admin_token(cli, serve, setup):
    pai = FakePai(serve)
    other = secret_file(setup["home"] / "alice-token", pai.token("alice"))
    result = cli("accounts", "--inventory", str(setup["inventory"]), "--pai-url", pai.url,
                 "--admin-token-file", str(other), "--passwords", str(setup["passwords"]))
    assert (result.code == 2 and result.err.count("\n") == 1
            and "belongs to alice, not to an OpenPAI admin" in result.err)


def test_unreachable_master_is_one_line(cli, setup):
    admin = secret_file(setup["home"] / "admin-token", "x.y.z")
    result = cli("accounts", "--inventory", str(setup["inventory"]), "--pai-url", "http://127.0.0.1:9",
                 "--admin-token-file", str(admin), "--passwords", str(setup["passwords"]))
    assert result.code == 2 and result.err.count("\n") == 1 and "refused" in result.err


def test_an_admin_token_file_written_by_echo_works(cli, serve, setup):
    """`echo "$TOKEN" > file` ends the file in a line break, which no header may carry: it is stripped."""
    pai = new_pai(serve)
    admin = secret_file(setup["home"] / "admin-token", pai.token("admin") + "\n")
    result = cli("accounts", "--inventory", str(setup["inventory"]), "--pai-url", pai.url,
                 "--admin-token-file", str(admin), "--passwords", str(setup["passwords"]), "--lang", "en")
    assert result.code == 0, result.err
    assert {u: pai.grants[u] for u in PASSWORDS} == {u: {"default", "vc1"} for u in PASSWORDS}
    auth = {r["headers"]["Authorization"] for r in pai.requests if "Authorization" in r["headers"]}
    assert f"Bearer {pai.token('admin')}" in auth


def test_a_forged_admin_token_names_the_admin_token_not_the_members_variable(cli, serve, setup):
    pai = new_pai(serve)
    admin = secret_file(setup["home"] / "admin-token", pai.token("admin") + "x")
    result = cli("accounts", "--inventory", str(setup["inventory"]), "--pai-url", pai.url,
                 "--admin-token-file", str(admin), "--passwords", str(setup["passwords"]), "--lang", "en")
    assert result.code == 2 and result.err.count("\n") == 1
    assert f"the admin token in {admin} was refused" in result.err and "HTTP 401 UnauthorizedUserError" in result.err
    assert "HIVEDLAB_PAI_TOKEN" not in result.err and pai.token("admin") not in result.err
    assert "carol" not in pai.users


def test_a_token_broken_inside_is_one_line_before_any_call(cli, serve, setup):
    pai = new_pai(serve)
    admin = secret_file(setup["home"] / "admin-token", "eyJh\nbGci.x.y\n")
    result = cli("accounts", "--inventory", str(setup["inventory"]), "--pai-url", pai.url,
                 "--admin-token-file", str(admin), "--passwords", str(setup["passwords"]), "--lang", "en")
    assert result.code == 2 and result.err.count("\n") == 1
    assert "holds a line break, space or control character inside the token" in result.err and pai.requests == []


def test_accounts_creates_exactly_the_inventory_and_a_second_run_writes_nothing(cli, serve, setup):
    pai = new_pai(serve)
    assert run(cli, setup, pai).code == 0
    assert set(pai.users) == {"admin", *PASSWORDS}
    grants, passwords = {u: set(v) for u, v in pai.grants.items()}, dict(pai.users)
    before = len(pai.requests)
    assert run(cli, setup, pai).code == 0
    writes = [r for r in pai.requests[before:] if r["method"] in ("POST", "PUT") and "/users" in r["path"]]
    assert writes == [] and pai.grants == grants and pai.users == passwords


def test_a_missing_admin_token_file_says_how_to_do_without_it(cli, serve, setup):
    pai = new_pai(serve)
    missing = setup["home"] / ".pai-admin-token"
    result = cli("accounts", "--inventory", str(setup["inventory"]), "--pai-url", pai.url,
                 "--admin-token-file", str(missing), "--passwords", str(setup["passwords"]))
    assert result.code == 2 and result.err.count("\n") == 1
    assert f"no admin token file {missing}: leave --admin-token-file out to type the admin's password" in result.err
    assert "umask 077" in result.err and "去掉 --admin-token-file 即可输入管理员密码" in result.err
    assert pai.requests == []  # nothing asked of the master before the token is there
