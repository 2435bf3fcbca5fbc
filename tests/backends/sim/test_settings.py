"""The simulator's knobs and the durations it derives from a task's commands."""

from __future__ import annotations

import pytest

from hivedlab.backends.sim.settings import SimSettings, command_seconds, settings_from_mapping, task_seconds
from hivedlab.basics.errors import HivedlabError

MNIST = "python3 examples/mnist/main.py --epochs 1 --lr 0.01 --batch-size 64\n"


@pytest.mark.parametrize(
    ("command", "seconds", "training"),
    [
        ("sleep 5m", 300.0, False),
        ("sleep 30", 30.0, False),
        ("sleep 1h", 3600.0, False),
        ("sleep 2.5s", 2.5, False),
        ("nvidia-smi", 1.0, False),
        ("echo hello", 1.0, False),
        (MNIST, 60.0, True),
    ],
)
def test_command_seconds(command: str, seconds: float, training: bool) -> None:
    assert command_seconds(command, SimSettings()) == (seconds, training)


def test_task_seconds_jitters_training_only() -> None:
    settings = SimSettings()
    commands = (MNIST, "sleep 5m")
    assert task_seconds(commands, settings, 0.0) == 360.0
    assert task_seconds(commands, settings, 1.0) == pytest.approx(363.0)
    assert task_seconds(commands, settings, -1.0) == pytest.approx(357.0)


def test_overrides() -> None:
    settings = settings_from_mapping({"training_s": 30, "submit_gap_s": [0, 1], "durations": {"low": 90}})
    assert settings.training_s == 30.0 and settings.submit_gap_s == (0.0, 1.0) and settings.durations == {"low": 90.0}
    assert settings_from_mapping({}) == SimSettings()
    assert settings_from_mapping({"container_start_s": 3}).container_start_s == (3.0, 3.0)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"traning_s": 1}, "unknown key 'traning_s'"),
        ({"training_s": -1}, "non-negative number"),
        ({"training_s": True}, "non-negative number"),
        ({"submit_gap_s": [3, 1]}, "greater than max"),
        ({"submit_gap_s": "fast"}, "number or [min, max]"),
        ({"durations": [1]}, "durations"),
        ({"start": 5}, "RFC 3339"),
        (["x"], "expected a mapping"),
    ],
)
def test_bad_settings_are_one_line_errors(data: object, message: str) -> None:
    with pytest.raises(HivedlabError, match=None) as info:
        settings_from_mapping(data)  # type: ignore[arg-type]
    assert message in str(info.value) and "\n" not in str(info.value)
