"""Starting, recording and stopping processes: exactly the recorded ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hivedlab.basics.errors import HivedlabError
from hivedlab.rehearsal.supervisor import Started, Supervisor, alive, exclusive, load_record, save_record, stop_all

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_start_records_and_stop_all_stops_exactly_the_recorded_processes(tmp_path: Path) -> None:
    record = tmp_path / "processes.json"
    supervisor = Supervisor(record, tmp_path / "logs")
    started = supervisor.start("sleeper", SLEEPER)
    child = supervisor.children[started.pid]
    supervisor.wait(started, lambda: alive(started), 5)  # alive once it has exec'd the recorded command line
    stranger = subprocess.Popen(SLEEPER)
    try:
        assert [p.name for p in load_record(record)] == ["sleeper"]
        said = stop_all(record)
        child.wait(5)
        assert said == [f"sleeper: stopped (pid {started.pid})"]
        assert not record.exists()
        assert stranger.poll() is None
    finally:
        for process in (stranger, child):
            process.kill()
            process.wait()


def test_a_reused_pid_is_left_alone(tmp_path: Path) -> None:
    record = tmp_path / "processes.json"
    other = subprocess.Popen(SLEEPER)
    try:
        save_record(record, [Started("etcd", other.pid, ("etcd", "--name", "x"), "log", 0.0)])
        assert stop_all(record) == ["etcd: not running"]
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_a_process_that_dies_at_start_fails_with_its_last_log_line(tmp_path: Path) -> None:
    supervisor = Supervisor(tmp_path / "processes.json", tmp_path / "logs")
    started = supervisor.start("broken", [sys.executable, "-c", "print('bad flag --x'); raise SystemExit(1)"])
    with pytest.raises(HivedlabError, match="broken exited at start: bad flag --x"):
        supervisor.wait(started, lambda: False, 10)


def test_a_missing_program_is_one_line(tmp_path: Path) -> None:
    supervisor = Supervisor(tmp_path / "processes.json", tmp_path / "logs")
    with pytest.raises(HivedlabError, match="cannot start etcd"):
        supervisor.start("etcd", [str(tmp_path / "no-such-etcd")])


def test_an_unreadable_record_is_one_line(tmp_path: Path) -> None:
    record = tmp_path / "processes.json"
    record.write_text("{", encoding="utf-8")
    with pytest.raises(HivedlabError, match="unreadable"):
        load_record(record)


def test_a_second_command_on_the_same_home_is_refused_while_the_first_holds_it(tmp_path: Path) -> None:
    lock = tmp_path / "home" / "lock"
    with exclusive(lock):
        with pytest.raises(HivedlabError, match="another `hivedlab rehearsal` command") as refused:
            with exclusive(lock):
                pass
        assert "\n" not in str(refused.value)
    with exclusive(lock):  # free again once the first is done
        pass
