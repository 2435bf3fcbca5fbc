"""Members' OpenPAI tokens for a run: `HIVEDLAB_PAI_TOKEN` (one user) or a 0600 file, one token or `user: token` lines.

Each member submits their own jobs (the manual's experiments are per member), so a run needs a token per member who
submits; a member gets one by logging in once (web portal, or `POST /api/v2/authn/basic/login`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import yaml

from hivedlab.cluster.openpai.rest import TOKEN_ENV, TOKEN_FILE_ENV, PaiError, read_token_file, token_user

USER_ENV = "HIVEDLAB_PAI_USER"  # whose token HIVEDLAB_PAI_TOKEN is, when it is not a JWT naming its user


def parse_tokens(text: str, default_user: str | None) -> dict[str, str]:
    """`user: token` lines, or a single token (its user read from the JWT, else `default_user`)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    if isinstance(data, dict):
        return {str(user).lower(): str(token).strip() for user, token in data.items() if token}
    token = text.strip()
    user = token_user(token) or default_user
    if not user:
        raise PaiError(f"cannot tell whose token this is: set {USER_ENV} or write `user: token` lines",
                       f"无法判断 token 属于哪个用户：请设置 {USER_ENV}，或写成 `用户名: token` 的形式")
    return {user.lower(): token}


def load_tokens(token: str | None = None, token_file: str | Path | None = None,
                environ: Mapping[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    default_user = env.get(USER_ENV) or None
    if token:
        return parse_tokens(token, default_user)
    if env.get(TOKEN_ENV, "").strip():
        return parse_tokens(env[TOKEN_ENV], default_user)
    path = token_file or env.get(TOKEN_FILE_ENV)
    if not path:
        raise PaiError(
            f"no OpenPAI token: set {TOKEN_ENV}, or {TOKEN_FILE_ENV} to a chmod-600 file of `user: token` lines",
            f"没有 OpenPAI token：请设置 {TOKEN_ENV}，或让 {TOKEN_FILE_ENV} 指向权限为 600 的 `用户名: token` 文件")
    return parse_tokens(read_token_file(Path(path).expanduser()), default_user)
