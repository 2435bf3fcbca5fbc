"""Tokens as OpenPAI v1.2.0's rest-server makes them (`models/token.js` `sign`): a JWT of `{username,
application, iat[, exp]}`, read back without checking its (fake) signature."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

TOKEN_DAYS = 7  # config/token.js tokenExpireTime
ISSUED_AT = int(time.time())  # the `iat` of tokens made without an expiry, so that make_jwt(user) is one token


def make_jwt(user: str, application: bool = False, exp: int | None = None) -> str:
    """A JWT shaped as `models/token.js` `sign` makes it: `{username, application, iat[, exp]}` (signature fake)."""
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    claims: dict[str, Any] = {"username": user, "application": application}
    claims["iat"] = exp - TOKEN_DAYS * 86400 if exp is not None else ISSUED_AT
    if exp is not None:
        claims["exp"] = exp
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


def claims_of(token: str) -> dict[str, Any]:
    parts = token.split(".")
    try:
        return json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (IndexError, ValueError):
        return {}
