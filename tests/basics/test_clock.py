"""The one clock rule: an instant prints with the same second everywhere, and a duration is the printed difference."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from hivedlab.basics.clock import date_time, elapsed, since_start, time_of_day, whole_seconds
from hivedlab.checker.report.wording import clock

EIGHT = datetime(2026, 1, 1, 8, tzinfo=timezone.utc).timestamp()


def test_an_instant_is_cut_down_to_its_second_not_rounded():
    assert whole_seconds(70.956) == 70
    assert whole_seconds(70.0) == 70
    assert whole_seconds(69.9999999) == 70  # float noise below a microsecond is not a second earlier


def test_clock_time_and_time_since_start_show_the_same_second():
    instant = EIGHT + 70.956
    assert time_of_day(instant) == "08:01:10"
    assert since_start(instant - EIGHT) == "T+0:01:10"
    assert clock(instant - EIGHT) == since_start(instant - EIGHT)  # the report's T+ is the same rule


def test_a_duration_is_the_difference_of_the_printed_instants():
    submitted, started = EIGHT + 6.9, EIGHT + 15.1  # printed 08:00:06 and 08:00:15
    assert (time_of_day(submitted), time_of_day(started)) == ("08:00:06", "08:00:15")
    assert elapsed(submitted, started) == 9


def test_wall_clock_is_shown_to_the_second():
    when = datetime(2026, 11, 26, 8, 39, 37, 190745, tzinfo=timezone.utc)
    assert date_time(when) == "2026-11-26 08:39:37 UTC"


def test_the_time_of_day_is_the_datetimes_across_its_whole_range():
    """The arithmetic gives what datetime prints, from year 1 to 9999 and before 1970; outside, datetime's error."""
    for instant in (-62_135_596_800, -62_135_596_799.5, -1.5, -0.2, 0, 59.999, 86_399.9, 1e9 + 0.5, EIGHT + 70.956,
                    253_402_300_799.9):
        expected = datetime.fromtimestamp(whole_seconds(instant), tz=timezone.utc).strftime("%H:%M:%S")
        assert time_of_day(instant) == expected, instant
    for instant in (-62_135_596_801, 253_402_300_800, 1e20):
        with pytest.raises((OverflowError, ValueError, OSError)):
            time_of_day(instant)
