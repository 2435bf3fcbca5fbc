"""Members' OpenPAI tokens for a run: `HIVEDLAB_PAI_TOKEN` (one user) or a 0600 file, one token or `user: token` lines.

Each member submits their own jobs (the manual's experiments are per member), so a run needs a token per member who
submits; a member gets one by logging in once (web portal, or `POST /api/v2/authn/basic/login`) or makes an
application token (never expires). `check_tokens` tries every token the run needs before anything is submitted.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from hivedlab.backends.pai.rest import TOKEN_ENV, TOKEN_FILE_ENV, PaiClient, PaiError, read_token_file, token_user

USER_ENV = "HIVEDLAB_PAI_USER"  # whose token HIVEDLAB_PAI_TOKEN is, when it is not a JWT naming its user


@dataclass(frozen=True)
class Tokens:
    """Tokens by (lower-case) user, and where each came from (`line 2 of ~/.pai-tokens`), never the token itself."""

    tokens: dict[str, str]
    origins: dict[str, str]


def _key_lines(text: str) -> dict[str, int]:
    """The 1-based line of each `user:` key of a `user: token` mapping."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(key.value).lower(): key.start_mark.line + 1 for key, _ in node.value}


def parse_tokens(text: str, default_user: str | None, origin: str = TOKEN_ENV) -> Tokens:
    """`user: token` lines, or a single token (its user read from the JWT, else `default_user`)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    if isinstance(data, dict):
        tokens = {str(user).lower(): str(token).strip() for user, token in data.items() if token}
        lines = _key_lines(text)
        return Tokens(tokens, {user: f"line {lines[user]} of {origin}" if user in lines else origin
                               for user in tokens})
    token = text.strip()
    user = token_user(token) or default_user
    if not user:
        raise PaiError(f"cannot tell whose token this is: set {USER_ENV} or write `user: token` lines",
                       f"无法判断 token 属于哪个用户：请设置 {USER_ENV}，或写成 `用户名: token` 的形式")
    return Tokens({user.lower(): token}, {user.lower(): origin})


def token_source(user: str, origin: str | None) -> tuple[str, str]:
    """Words (en, zh) naming a member's token and where it is, for the client's error sentences."""
    where = f" ({origin})" if origin else ""
    where_zh = f"（{origin}）" if origin else ""
    return f"{user}'s token{where}", f"{user} 的 token{where_zh}"


def load_tokens(token: str | None = None, token_file: str | Path | None = None,
                environ: Mapping[str, str] | None = None) -> Tokens:
    env = os.environ if environ is None else environ
    default_user = env.get(USER_ENV) or None
    if token:
        return parse_tokens(token, default_user, "the token given")
    if not token_file and env.get(TOKEN_ENV, "").strip():  # a file named on the command line comes first
        return parse_tokens(env[TOKEN_ENV], default_user, TOKEN_ENV)
    path = token_file or env.get(TOKEN_FILE_ENV)
    if not path:
        raise PaiError(
            f"no OpenPAI token: set {TOKEN_ENV}, or {TOKEN_FILE_ENV} to a chmod-600 file of `user: token` lines",
            f"没有 OpenPAI token：请设置 {TOKEN_ENV}，或让 {TOKEN_FILE_ENV} 指向权限为 600 的 `用户名: token` 文件")
    where = Path(path).expanduser()
    return parse_tokens(read_token_file(where), default_user, str(where))


def check_tokens(clients: Mapping[str, PaiClient], origins: Mapping[str, str], members: Iterable[str]) -> None:
    """Try each member's token with `GET /api/v2/jobs?username=U` (a job call: login and application tokens both
    work); a member without a token, with someone else's or with a bad one is a `PaiError` naming the member and
    the token's line. Nothing is submitted before every member's token has passed."""
    for member in dict.fromkeys(members):
        user = member.lower()
        client = clients.get(user)
        if client is None:
            raise PaiError(
                f"no OpenPAI token for member {member}: add `{member}: <token>` to the token file (the member logs "
                "in once to get it); nothing was submitted",
                f"没有成员 {member} 的 OpenPAI token：请在 token 文件中加入 `{member}: <token>`"
                "（该成员登录一次即可获得）；没有提交任何任务")
        origin = origins.get(user, "the token file")
        if client.user and client.user.lower() != user:
            raise PaiError(
                f"the token for member {member} ({origin}) is {client.user}'s, not {member}'s: put {member}'s own "
                "token there; nothing was submitted",
                f"成员 {member} 的 token（{origin}）属于 {client.user}：请换成 {member} 自己的 token；没有提交任何任务")
        try:
            client.list_jobs(usernames=(user,))
        except PaiError as exc:
            if exc.status != 401:
                raise
            expires = client.token_info().expires
            if expires is not None and expires <= dt.datetime.now(dt.timezone.utc):
                when = expires.strftime("%Y-%m-%d %H:%M UTC")
                raise PaiError(
                    f"the token for member {member} ({origin}) expired at {when} (login tokens last 7 days): {member} "
                    "logs in again (or makes an application token) and replaces that line; nothing was submitted",
                    f"成员 {member} 的 token（{origin}）已于 {when} 过期（登录 token 有效期 7 天）："
                    f"请 {member} 重新登录（或创建应用 token）并替换该行；没有提交任何任务",
                    exc.status, exc.code) from None
            raise PaiError(
                f"the token for member {member} ({origin}) was refused (not issued by this cluster, revoked by a "
                f"password change, or mistyped; HTTP 401 {exc.code or ''}): {member} logs in again (or makes an "
                "application token) and replaces that line; nothing was submitted",
                f"成员 {member} 的 token（{origin}）被拒绝（不是本集群签发的、因改密码被吊销或有误；HTTP 401）："
                f"请 {member} 重新登录（或创建应用 token）并替换该行；没有提交任何任务", exc.status, exc.code) from None
