"""What the tests of `hivedlab env` (labs/00_check_env.py) share: the script, the record's schema, a /proc/net/tcp
whose sshd listens on port 22, and one run of the command with its record read back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema

from tests.support.paths import ROOT

SCRIPT = ROOT / "labs" / "00_check_env.py"
SCHEMA = json.loads((ROOT / "configs" / "schemas" / "environment-record.schema.json").read_text(encoding="utf-8"))

TCP_HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
SSHD_LISTENING = TCP_HEADER + "   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000  0  0 1 1\n"


def validate(record: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(record)


def checks_by_id(record: dict[str, Any]) -> dict[str, Any]:
    return {c["id"]: c for c in record["checks"]}


def run_env(cli: Callable[..., Any], tmp_path: Path, *extra: str) -> tuple[Any, dict[str, Any] | None]:
    """`hivedlab env` for Carol in English; (the CLI result, the record written, or None)."""
    out = tmp_path / "env" / "Carol.json"
    result = cli("env", "--member", "Carol", "--linux-user", "", "--out", str(out), "--lang", "en", *extra)
    record = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    return result, record
