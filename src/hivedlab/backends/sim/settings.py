"""The simulator's knobs: how long things take on the simulated cluster (a plan's `sim:` block overrides them).

Durations never change HiveD's decisions; verdicts rest on the order and overlap of events
(docs/lab-experiments.md). The seed varies only what varies on a real cluster: task durations within
`training_jitter`, container start within `container_start_s`, and the gap before each submission within
`submit_gap_s`.

| key | default | meaning |
| --- | --- | --- |
| `start` | `2026-01-01T08:00:00Z` | virtual time of the first record |
| `training_s` | 60 | a training command (anything but `sleep`/a short shell command), e.g. one MNIST epoch |
| `training_jitter` | 0.05 | a training command lasts `training_s` × (1 ± jitter), drawn from the seed |
| `short_command_s` | 1 | `echo`, `nvidia-smi`, `ls`, `cat`, `true`, `pwd`, `hostname`, `date`, `env` |
| `container_start_s` | [2, 5] | from bind to the app container running; one draw per job and scheduling round |
| `submit_gap_s` | [0.5, 2.0] | virtual time before each submission (members never submit at the same instant) |
| `framework_create_s` | 1 | from the REST reply to the Framework's creation (database-controller write-merger) |
| `pod_create_s` | 0.5 | from a (new) framework attempt or task retry to its pods' creation |
| `tfjob` | false | jobs behave as Kubeflow TFJobs (docs/other-schedulers.md), see below |
| `grace_s` | 2 | from a pod's deletion request (preemption, kill, stop) to its removal |
| `durations` | {} | `{plan job key: seconds}`: a fixed task duration for that job, overriding its commands |

With `tfjob`, a job's pods are created back to back at one instant, as tf-operator v0.5's single worker thread creates
every pod of one TFJob in one pass; they carry no PriorityClass; a task trains only once every task of its job runs, and
a parameter server runs until it is deleted (docs/other-schedulers.md, "The pods").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from hivedlab.basics.errors import HivedlabError

SHORT_COMMANDS = ("echo", "nvidia-smi", "ls", "cat", "true", "pwd", "hostname", "date", "env")
_SLEEP = re.compile(r"^sleep\s+(\d+(?:\.\d+)?)([smhd]?)$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class SimSettings:
    start: str = "2026-01-01T08:00:00Z"
    training_s: float = 60.0
    training_jitter: float = 0.05
    short_command_s: float = 1.0
    container_start_s: tuple[float, float] = (2.0, 5.0)
    submit_gap_s: tuple[float, float] = (0.5, 2.0)
    framework_create_s: float = 1.0
    pod_create_s: float = 0.5
    tfjob: bool = False
    grace_s: float = 2.0
    durations: Mapping[str, float] = field(default_factory=dict)


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise HivedlabError(f"sim.{key}: expected a non-negative number, got {value!r}")
    return float(value)


def _range(key: str, value: Any) -> tuple[float, float]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (_number(key, value), _number(key, value))
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise HivedlabError(f"sim.{key}: expected a number or [min, max], got {value!r}")
    low, high = _number(key, value[0]), _number(key, value[1])
    if low > high:
        raise HivedlabError(f"sim.{key}: min {low} is greater than max {high}")
    return (low, high)


def settings_from_mapping(data: Mapping[str, Any] | None, base: SimSettings | None = None) -> SimSettings:
    """Apply a plan's `sim:` block; unknown keys and bad values are one-line errors."""
    settings = base or SimSettings()
    if not data:
        return settings
    if not isinstance(data, Mapping):
        raise HivedlabError(f"sim: expected a mapping, got {type(data).__name__}")
    known = {f.name for f in fields(SimSettings)}
    changes: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise HivedlabError(f"sim: unknown key {key!r} (known: {', '.join(sorted(known))})")
        if key == "start":
            if not isinstance(value, str):
                raise HivedlabError(f"sim.start: expected an RFC 3339 time string, got {value!r}")
            changes[key] = value
        elif key in ("container_start_s", "submit_gap_s"):
            changes[key] = _range(key, value)
        elif key == "tfjob":
            if not isinstance(value, bool):
                raise HivedlabError(f"sim.tfjob: expected true or false, got {value!r}")
            changes[key] = value
        elif key == "durations":
            if not isinstance(value, Mapping):
                raise HivedlabError("sim.durations: expected a mapping {job key: seconds}")
            changes[key] = {str(k): _number(f"durations.{k}", v) for k, v in value.items()}
        else:
            changes[key] = _number(key, value)
    return SimSettings(**{**settings.__dict__, **changes})


def command_seconds(command: str, settings: SimSettings) -> tuple[float, bool]:
    """How long one command of a task runs: (seconds, is_training). Training time is jittered by the caller."""
    text = " ".join(command.split())
    match = _SLEEP.match(text)
    if match:
        return float(match.group(1)) * _UNIT_S[match.group(2)], False
    head = text.split(" ", 1)[0] if text else ""
    if not text or head in SHORT_COMMANDS:
        return settings.short_command_s, False
    return settings.training_s, True


def task_seconds(commands: tuple[str, ...], settings: SimSettings, jitter: float) -> float:
    """A task's run time: its commands in order; `jitter` in [-1, 1] scales every training command alike."""
    total = 0.0
    for command in commands:
        seconds, training = command_seconds(command, settings)
        total += seconds * (1 + settings.training_jitter * jitter) if training else seconds
    return total
