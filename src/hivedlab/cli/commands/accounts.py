"""`hivedlab accounts`: the manual's step 3.1 — every member's OpenPAI user, their virtual clusters, their token.

With the admin's token it creates each member's user through the rest-server's user API (or grants the VCs an
existing user lacks), logs in as each member and writes `user: token` lines to a mode-600 file outside the
repository (docs/deployment.md). The members' initial passwords come from the person running it — a prompt, or a
mode-600 file of `user: password` lines outside the repository — never from the inventory. Run twice, it changes
nothing that is already right and only logs in again (login tokens last 7 days).
"""

from __future__ import annotations

import argparse
import datetime as dt
import getpass
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from hivedlab.backends.pai.addresses import PAI_URL_ENV, pai_address
from hivedlab.backends.pai.rest import TOKEN_FILE_ENV, PaiClient, PaiError, clean_token, read_token_file
from hivedlab.backends.pai.tokens import parse_tokens
from hivedlab.backends.pai.users import TOKEN_LIFETIME_DAYS, create_user, get_user, grant_vcs, token_expiry, user_vcs
from hivedlab.basics.errors import EXIT_FINDINGS, HivedlabError
from hivedlab.basics.secrets import read_secret, refuse_inside_repository, write_secret
from hivedlab.basics.text import Text
from hivedlab.cli.options import add_format, add_inventory, add_lang, new_parser
from hivedlab.lab_group.inventory import load_group

ADMIN_TOKEN_ENV = "HIVEDLAB_PAI_ADMIN_TOKEN"
ADMIN_TOKEN_FILE_ENV = "HIVEDLAB_PAI_ADMIN_TOKEN_FILE"
DEFAULT_TOKENS = "~/.pai-tokens"
MIN_PASSWORD = 6  # the rest-server's rule

EXAMPLES = """\
  hivedlab accounts --inventory group.yaml --admin-token-file ~/.pai-admin-token    # asks each member's password
  hivedlab accounts --inventory group.yaml --passwords ~/pai-passwords.yaml --vc default --vc vc1
  HIVEDLAB_PAI_URL=http://10.0.1.2 hivedlab accounts --inventory group.yaml --tokens-out ~/.pai-tokens
"""


@dataclass
class AccountOutcome:
    """What happened to one member's account."""

    member: str
    user: str
    account: str  # created | granted | unchanged | failed
    vcs: list[str]
    token: bool
    expires: str | None
    problem: Text | None = None


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(
        prog,
        "Create the members' OpenPAI users with the admin's token, grant them the cluster's virtual clusters, log in "
        "as each and write their tokens to a mode-600 file (manual step 3.1). Safe to run twice. / 用管理员 token "
        "为组员创建 OpenPAI 用户、授权 VC、登录并把 token 写入权限为 600 的文件（手册 3.1）。",
        EXAMPLES,
    )
    add_inventory(parser)
    parser.add_argument("--pai-url", metavar="URL",
                        help=f"the OpenPAI master (default: {PAI_URL_ENV}, else http://<the inventory's master ip>)")
    parser.add_argument("--admin-token-file", metavar="FILE",
                        help=f"a chmod-600 file with the admin's token (default: {ADMIN_TOKEN_FILE_ENV} or "
                             f"{ADMIN_TOKEN_ENV}; without one, asks the admin's password)")
    parser.add_argument("--passwords", metavar="FILE",
                        help="a chmod-600 file of `user: password` lines outside the repository (default: ask)")
    parser.add_argument("--vc", action="append", metavar="NAME",
                        help="a virtual cluster to grant, repeatable (default: every VC the cluster has now)")
    parser.add_argument("--tokens-out", default=DEFAULT_TOKENS, metavar="FILE",
                        help=f"the members' token file, outside the repository (default: {DEFAULT_TOKENS})")
    add_format(parser, ("text", "json"))
    add_lang(parser)
    return parser


def admin_token(token_file: str | None) -> tuple[str, tuple[str, str]]:
    """The admin's token (from --admin-token-file, HIVEDLAB_PAI_ADMIN_TOKEN_FILE or HIVEDLAB_PAI_ADMIN_TOKEN, without
    the line break `echo` leaves) and words naming where it came from; '' when none is given."""
    path = token_file or os.environ.get(ADMIN_TOKEN_FILE_ENV)
    if path:
        file = Path(path).expanduser()
        if not file.exists():
            raise HivedlabError(
                f"no admin token file {file}: leave --admin-token-file out to type the admin's password instead "
                f"(hivedlab logs in as admin), or write the admin's token into {file} with `umask 077` (mode 600) / "
                f"找不到管理员 token 文件 {file}：去掉 --admin-token-file 即可输入管理员密码（hivedlab 会以 admin "
                f"登录），或在 `umask 077` 下把管理员的 token 写入 {file}（权限 600）")
        source = (f"the admin token in {file}", f"{file} 中的管理员 token")
        return clean_token(read_token_file(file), source[0]), source
    source = (f"the admin token {ADMIN_TOKEN_ENV}", f"管理员 token {ADMIN_TOKEN_ENV}")
    return clean_token(os.environ.get(ADMIN_TOKEN_ENV, ""), source[0]), source


def admin_client(url: str, token_file: str | None) -> PaiClient:
    """A client with the admin's token (a file, the environment, or a login with the admin's password)."""
    token, source = admin_token(token_file)
    client = PaiClient(url, token or None, retries=2, backoff_s=0.5, token_source=source)
    client.info()  # the master answers, before any password is typed
    if not token:
        if not sys.stdin.isatty():
            raise HivedlabError(f"no admin token: give --admin-token-file or set {ADMIN_TOKEN_ENV} (or run in a "
                                "terminal to type the admin's password)")
        client.login("admin", getpass.getpass("OpenPAI admin password / 管理员密码: "))
    who = client.user or ""
    found = get_user(client, who) if who else None
    if not found or not found.get("admin"):
        client.close()
        raise HivedlabError(f"the admin token belongs to {who or 'an unknown user'}, not to an OpenPAI admin: log in "
                            "as admin (quick-start's default password is admin-password) and use that token")
    return client


def read_passwords(path: str | None, users: tuple[str, ...]) -> dict[str, str]:
    """Each member's initial password: from a mode-600 file outside the repository, else typed in a terminal."""
    if path:
        file = Path(path).expanduser()
        try:
            data = yaml.safe_load(read_secret(file, "password file"))
        except yaml.YAMLError:
            data = None
        if not isinstance(data, dict):
            raise HivedlabError(f"password file {file}: expected `user: password` lines")
        found = {str(user).lower(): str(password) for user, password in data.items() if password is not None}
    elif sys.stdin.isatty():
        found = {user: getpass.getpass(f"initial OpenPAI password for {user} / {user} 的初始密码: ") for user in users}
    else:
        raise HivedlabError("no passwords: give --passwords FILE (`user: password` lines, chmod 600, outside the "
                            "repository) or run in a terminal to type them")
    missing = [user for user in users if user not in found]
    if missing:
        raise HivedlabError(f"no password for {', '.join(missing)}: add `{missing[0]}: PASSWORD` to the password file")
    short = [user for user in users if len(found[user]) < MIN_PASSWORD]
    if short:
        raise HivedlabError(f"the password for {', '.join(short)} is shorter than {MIN_PASSWORD} characters, which "
                            "OpenPAI refuses")
    return found


def wanted_vcs(cluster_vcs: list[str], asked: list[str] | None) -> list[str]:
    """The VCs to grant; one the deployed HiveD config lacks cannot be granted (its group does not exist)."""
    vcs = sorted(set(asked)) if asked else cluster_vcs
    absent = [vc for vc in vcs if vc not in cluster_vcs]
    if absent:
        raise HivedlabError(
            f"{', '.join(absent)} is not a virtual cluster of the config in force (the cluster has "
            f"{', '.join(cluster_vcs) or 'none'}): VCs are granted through groups the rest-server makes from the "
            "deployed HiveD config, so apply the config that defines it (`hivedlab scheduler-config two-vc` for vc1), "
            "then run `hivedlab accounts` again")
    return vcs


def settle(admin: PaiClient, url: str, member: str, user: str, password: str, vcs: list[str]) -> tuple[AccountOutcome,
                                                                                                       str]:
    """Create or update one member's user and log in as them: (outcome, token or '')."""
    found = get_user(admin, user)
    if found is None:
        create_user(admin, user, password, vcs)
        account, granted = "created", vcs
    else:
        have = user_vcs(found)
        granted = sorted(set(have) | set(vcs))
        account = "unchanged" if granted == have else "granted"
        if account == "granted":
            grant_vcs(admin, user, granted)
    session = PaiClient(url, retries=2)
    try:
        token = session.login(user, password)
    except PaiError as exc:
        if exc.code != "IncorrectPasswordError":
            raise
        problem = Text(f"{user} 已存在且密码不同：请 {user} 自己登录门户并把 token 写入 token 文件，或由管理员在 User "
                       "Management 中重置密码",
                       f"{user} already exists with another password: {user} logs in to the portal and saves the "
                       "token in the token file, or the admin resets the password in User Management")
        return AccountOutcome(member, user, account, granted, False, None, problem), ""
    finally:
        session.close()
    expires = token_expiry(token) or dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=TOKEN_LIFETIME_DAYS)
    return AccountOutcome(member, user, account, granted, True, expires.strftime("%Y-%m-%d %H:%M UTC")), token


def merge_tokens(path: Path, tokens: dict[str, str]) -> None:
    """Write the members' tokens into the token file, keeping the lines of other users already there."""
    old = parse_tokens(read_token_file(path), None).tokens if path.exists() else {}
    merged = {**old, **tokens}
    write_secret(path, "".join(f"{user}: {token}\n" for user, token in sorted(merged.items())))


def run(args: argparse.Namespace) -> int:
    inventory = load_group(args.inventory)
    tokens_path = Path(args.tokens_out).expanduser()
    refuse_inside_repository(tokens_path.parent, "the token file",
                             f"give a file outside it with --tokens-out (default: {DEFAULT_TOKENS})")
    url = pai_address(inventory, args.pai_url, os.environ, "--pai-url")
    passwords = read_passwords(args.passwords, inventory.users)
    admin = admin_client(url, args.admin_token_file)
    try:
        vcs = wanted_vcs(sorted(admin.virtual_clusters()), args.vc)
        outcomes, tokens = [], {}
        for member in inventory.members:
            outcome, token = settle(admin, url, member.name, member.user, passwords[member.user], vcs)
            outcomes.append(outcome)
            if token:
                tokens[member.user] = token
    finally:
        admin.close()
    if tokens:
        merge_tokens(tokens_path, tokens)
    if args.format == "json":
        print(json.dumps({"token_file": str(tokens_path) if tokens else None, "token_days": TOKEN_LIFETIME_DAYS,
                          "members": [asdict(o) for o in outcomes]}, ensure_ascii=False, indent=2))
    else:
        _print_text(outcomes, tokens_path if tokens else None, args.lang)
    return EXIT_FINDINGS if any(o.problem for o in outcomes) else 0


ACCOUNT_ZH = {"created": "已创建", "granted": "已授权新的 VC", "unchanged": "无需改动"}


def _print_text(outcomes: list[AccountOutcome], tokens_path: Path | None, lang: str) -> None:
    for o in outcomes:
        account = ACCOUNT_ZH.get(o.account, o.account) if lang == "zh" else o.account
        token = (f"token 有效至 {o.expires}" if lang == "zh" else f"token valid until {o.expires}") if o.token else (
            "没有 token" if lang == "zh" else "no token")
        print(f"{o.member} ({o.user}): {account}; VC {', '.join(o.vcs)}; {token}")
        if o.problem:
            print(("  问题：" if lang == "zh" else "  problem: ") + o.problem.get(lang))
    if tokens_path is None:
        return
    if lang == "zh":
        print(f"token 已写入 {tokens_path}（权限 600）。登录 token 有效期 {TOKEN_LIFETIME_DAYS} 天，过期前再运行一次 "
              f"`hivedlab accounts` 即可续期。运行实验前：export {TOKEN_FILE_ENV}={tokens_path}")
    else:
        print(f"tokens written to {tokens_path} (mode 600). Login tokens last {TOKEN_LIFETIME_DAYS} days: run "
              f"`hivedlab accounts` again before they expire. Before the experiments: export "
              f"{TOKEN_FILE_ENV}={tokens_path}")
