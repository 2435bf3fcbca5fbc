"""A read-back evidence record's payload, for tests that know which kind of record they hold.

`Record.object` and `Record.action` are Optional (a record is one or the other); these fail the test with the
record's seq when the payload is not there, and give the type checker a plain dict.
"""

from __future__ import annotations

from typing import Any

from hivedlab.evidence import Record


def object_of(record: Record) -> dict[str, Any]:
    """The raw object a `kind: object` record holds."""
    assert record.object is not None, f"record {record.seq} holds no object"
    return record.object


def action_of(record: Record) -> dict[str, Any]:
    """The payload of a `kind: action` record."""
    assert record.action is not None, f"record {record.seq} holds no action"
    return record.action
