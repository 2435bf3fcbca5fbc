"""Starting, recording and stopping the rehearsal cluster's processes.

Each process starts in a session of its own with its output in `logs/<name>.log`; its pid, command line and start
time go into the record (`run/processes.json`) before `up` goes on. `down` stops exactly the recorded processes, in
the reverse order, and only a pid whose command line is still the recorded one (a pid reused by another program is
left alone).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import write_atomic

STOP_WAIT_S = 10.0


@dataclass(frozen=True)
class Started:
    name: str
    pid: int
    argv: tuple[str, ...]
    log: str
    started: float


def load_record(path: Path) -> list[Started]:
    if not path.is_file():
        return []
    try:
        return [Started(p["name"], int(p["pid"]), tuple(p["argv"]), p["log"], float(p["started"]))
                for p in json.loads(path.read_text(encoding="utf-8"))]
    except (ValueError, KeyError, TypeError):
        raise HivedlabError(f"the record of started processes {path} is unreadable: stop them by hand "
                            "(their logs name them) and remove it") from None


def save_record(path: Path, started: list[Started]) -> None:
    write_atomic(path, json.dumps([asdict(s) for s in started], indent=2) + "\n")


def _cmdline(pid: int) -> tuple[str, ...] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return tuple(part.decode(errors="replace") for part in raw.split(b"\0") if part)


def alive(process: Started) -> bool:
    """Running, and still the program the record names (the pid was not reused)."""
    line = _cmdline(process.pid)
    return bool(line) and line == process.argv


class Supervisor:
    """Starts processes and keeps the record up to date as it goes."""

    def __init__(self, record: Path, logs: Path) -> None:
        self.record, self.logs = record, logs
        self.started = load_record(record)
        self.children: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, name: str, argv: list[str], env: Mapping[str, str] | None = None,
              cwd: Path | None = None) -> Started:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{name}.log"
        with log.open("ab") as out:
            try:
                child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         env=dict(env) if env is not None else None, cwd=cwd,
                                         start_new_session=True)
            except OSError as exc:
                raise HivedlabError(f"cannot start {name} ({argv[0]}): {exc.strerror or exc}") from None
        process = Started(name, child.pid, tuple(argv), str(log), time.time())
        self.children[child.pid] = child
        self.started.append(process)
        save_record(self.record, self.started)
        return process

    def wait(self, process: Started, ready: Callable[[], bool], timeout_s: float) -> None:
        """Until `ready()` holds; a process that exits or stays unready fails with the end of its log."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            child = self.children.get(process.pid)
            if (child.poll() is not None) if child is not None else not alive(process):
                time.sleep(0.2)  # let its last words reach the log
                raise HivedlabError(f"{process.name} exited at start: {last_line(Path(process.log))} "
                                    f"(log: {process.log})")
            if ready():
                return
            time.sleep(0.1)
        raise HivedlabError(f"{process.name} was not ready within {timeout_s:g} s: {last_line(Path(process.log))} "
                            f"(log: {process.log})")


def last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return lines[-1][:300] if lines else "(empty log)"


@contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """Hold the home's lock while a command starts or stops its processes: a second `up` in the same home would
    rewrite the first one's secrets and record under it and leave its processes running unrecorded."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise HivedlabError(f"another `hivedlab rehearsal` command is starting or stopping the cluster of "
                                f"{lock.parent}: wait for it to end, or use another --home / 另一个 hivedlab "
                                "rehearsal 命令正在启动或停止这个集群：请等它结束，或用 --home 换一个目录") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def stop_all(record: Path, wait_s: float = STOP_WAIT_S, only: set[str] | None = None) -> list[str]:
    """Stop every recorded process (or those named in `only`; SIGTERM, then SIGKILL after `wait_s`), newest first,
    and forget them. Returns a line per process."""
    said = []
    started = load_record(record)
    for process in reversed(started):
        if only is not None and process.name not in only:
            continue
        if not alive(process):
            said.append(f"{process.name}: not running")
            continue
        os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + wait_s
        while alive(process) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(process):
            os.kill(process.pid, signal.SIGKILL)
            said.append(f"{process.name}: killed (pid {process.pid})")
        else:
            said.append(f"{process.name}: stopped (pid {process.pid})")
    kept = [p for p in started if only is not None and p.name not in only]
    if kept:
        save_record(record, kept)
    else:
        record.unlink(missing_ok=True)
    return said
