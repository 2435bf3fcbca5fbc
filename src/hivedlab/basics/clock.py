"""The one way hivedlab prints a time: whole seconds, cut down (as a clock shows them), never rounded.

Every instant the report, the verdicts and the charts print goes through `whole_seconds`, so one instant prints with
the same second everywhere (08:01:10.956 is 08:01:10 in a sentence, T+0:01:10 in a table), and a duration is the
difference of the two printed instants, so "submitted 08:00:06, started 08:00:15" comes with "9 s after submission".
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

_EPSILON_DIGITS = 6  # evidence times carry microseconds; cut float noise below that before flooring
_FIRST, _LAST = -62_135_596_800, 253_402_300_799  # 0001-01-01 00:00:00 and 9999-12-31 23:59:59 UTC


def whole_seconds(seconds: float) -> int:
    """The whole second an instant falls in (cut down, like a clock's second hand)."""
    return math.floor(round(seconds, _EPSILON_DIGITS))


def elapsed(start: float, end: float) -> int:
    """Seconds between two instants as printed: the difference of their whole seconds."""
    return max(0, whole_seconds(end) - whole_seconds(start))


def time_of_day(epoch: float) -> str:
    """An instant (seconds since the Unix epoch) as the UTC time of day, e.g. 08:01:10 (the verdicts print
    thousands: the arithmetic, not a datetime, where the instant is one a datetime can hold; it raises otherwise)."""
    whole = whole_seconds(epoch)
    if not _FIRST <= whole <= _LAST:
        return datetime.fromtimestamp(whole, tz=timezone.utc).strftime("%H:%M:%S")
    second = whole % 86_400
    return f"{second // 3600:02d}:{second % 3600 // 60:02d}:{second % 60:02d}"


def since_start(seconds: float) -> str:
    """Seconds since the experiment began as T+h:mm:ss."""
    whole = whole_seconds(seconds)
    return f"T+{whole // 3600:d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def date_time(when: datetime) -> str:
    """A date and time to the second in UTC, e.g. 2026-11-26 08:39:37 UTC (no microseconds)."""
    moment = when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)
    return datetime.fromtimestamp(whole_seconds(moment.timestamp()), tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
