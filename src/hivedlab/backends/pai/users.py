"""OpenPAI v1.2.0's user API on a `PaiClient` (docs/deployment.md): read, create, grant virtual clusters; JWT expiry.

A user's virtual clusters are groups the rest-server creates at start-up, one per VC of the deployed HiveD config,
so a VC can be granted only while the config that defines it is in force. Passwords travel in request bodies only;
the client's call log redacts them.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from hivedlab.backends.pai.rest import PaiClient

TOKEN_LIFETIME_DAYS = 7  # rest-server's jwt-expire-time


@dataclass(frozen=True)
class AccountsFiles:
    """The files `hivedlab accounts` is given, so that the command can be printed as it must be run: with the admin's
    token file it does not ask for the admin's password; it asks each member's (or reads `--passwords FILE`)."""

    inventory: str | None = None
    admin_token_file: str | None = None
    tokens_out: str | None = None

    def command(self, vcs: Iterable[str]) -> str:
        """The `hivedlab accounts` line that grants `vcs` and logs every member in again."""
        parts = ["hivedlab", "accounts", "--inventory", self.inventory or "group.yaml"]
        parts += ["--admin-token-file", self.admin_token_file] if self.admin_token_file else []
        parts += [word for vc in sorted(set(vcs)) for word in ("--vc", vc)]
        parts += ["--tokens-out", self.tokens_out] if self.tokens_out else []
        return shlex.join(parts)


def get_user(client: PaiClient, username: str) -> dict[str, Any] | None:
    """`GET /api/v2/users/<name>`: the user object (`virtualCluster`, `admin`, ...), or None when there is none (v1.2.0
    answers 400 `NoUserError`, `controllers/v2/user.js` `getUser`; any valid token may read any user)."""
    return client.get_object(f"/api/v2/users/{quote(username)}", "NoUserError", f"read user {username}")


def user_vcs(user: dict[str, Any]) -> list[str]:
    """The virtual clusters a user object grants."""
    vcs = user.get("virtualCluster") or []
    return sorted(str(vc) for vc in vcs) if isinstance(vcs, list) else []


def create_user(client: PaiClient, username: str, password: str, vcs: list[str]) -> None:
    """`POST /api/v2/users` (admin): a non-admin user granted `vcs`."""
    body = {"username": username, "password": password, "admin": False, "virtualCluster": vcs}
    reply = client.request("POST", "/api/v2/users", json.dumps(body).encode(), "application/json")
    if reply.status != 201:
        raise client.fail(reply, f"create user {username}")


def grant_vcs(client: PaiClient, username: str, vcs: list[str]) -> None:
    """`PUT /api/v2/users` with a patch (admin): the user's virtual clusters become `vcs`."""
    body = {"data": {"username": username, "virtualCluster": vcs}, "patch": True}
    reply = client.request("PUT", "/api/v2/users", json.dumps(body).encode(), "application/json")
    if reply.status != 201:
        raise client.fail(reply, f"grant {', '.join(vcs)} to {username}")


def token_expiry(token: str) -> dt.datetime | None:
    """When a rest-server JWT expires (its `exp` claim, read, not verified), in UTC; None when it has none."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, TypeError):
        return None
    exp = payload.get("exp") if isinstance(payload, dict) else None
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        return None
    return dt.datetime.fromtimestamp(exp, dt.timezone.utc)
