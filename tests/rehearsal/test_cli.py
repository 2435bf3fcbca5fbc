"""`hivedlab rehearsal`: help, bad arguments, status and fault on a home with nothing started."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.pai_database import StalledPai

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HIVEDLAB_REHEARSAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HIVEDLAB_REHEARSAL_PROGRAMS", raising=False)
    return tmp_path / "home"


def test_help_has_examples(cli: Callable[..., Any]) -> None:
    result = cli("rehearsal", "--help")
    assert result.code == 0 and "hivedlab rehearsal up --programs" in result.out


def test_a_bad_action_is_a_usage_error(cli: Callable[..., Any]) -> None:
    result = cli("rehearsal", "start")
    assert result.code == 2 and "invalid choice" in result.err


def test_status_names_what_is_missing_and_that_the_cluster_is_down(cli: Callable[..., Any], home: Path) -> None:
    result = cli("rehearsal", "status", "--programs", str(home.parent / "no-programs"))
    assert result.code == 0
    assert "MISSING  kube-apiserver" in result.out and "hivedscheduler" in result.out
    assert result.out.rstrip().endswith("cluster: down")


def test_status_uses_the_programs_folder_up_recorded(cli: Callable[..., Any], home: Path) -> None:
    """`up --programs DIR` records DIR in cluster.json; a later `status` without the option checks that folder."""
    programs = home.parent / "recorded-programs"
    (home / "run").mkdir(parents=True)
    cluster = {"kind": "rehearsal", "config": "two-vc", "inventory": None, "speedup": 5.0, "pai_url": "http://x",
               "hived_url": "http://y", "apiserver": "https://z", "kubeconfig": "k", "pai_admin_token_file": "t",
               "programs": str(programs)}
    (home / "run" / "cluster.json").write_text(json.dumps(cluster), encoding="utf-8")
    result = cli("rehearsal", "status")
    assert result.code == 0, result.err
    assert "not named" not in result.out
    assert f"OpenPAI's programs: {programs} (the folder `up` was given)" in result.out
    assert str(programs) in result.out.split("OpenPAI's programs")[0]  # its parts are checked in that folder


def test_up_without_programs_is_one_line(cli: Callable[..., Any], home: Path) -> None:
    result = cli("rehearsal", "up")
    assert result.code == 2 and "HIVEDLAB_REHEARSAL_PROGRAMS" in result.err and len(result.err_lines) == 1


def test_a_home_inside_a_repository_is_refused(cli: Callable[..., Any], home: Path) -> None:
    result = cli("rehearsal", "status", "--home", str(REPO / "rehearsal-home"))
    assert result.code == 2 and "inside the git repository" in result.err


def test_fault_writes_what_the_emulator_reads(cli: Callable[..., Any], home: Path) -> None:
    result = cli("rehearsal", "fault", "--not-ready", "w2", "--exit-code", "job-x=3")
    assert result.code == 0
    assert json.loads(result.out) == {"not_ready": ["w2"], "exit_codes": {"job-x": 3}}
    assert cli("rehearsal", "fault", "--exit-code", "job-x=three").code == 2
    assert json.loads(cli("rehearsal", "fault", "--clear").out) == {"not_ready": [], "exit_codes": {}}


def test_env_and_switch_need_a_cluster_that_is_up(cli: Callable[..., Any], home: Path) -> None:
    assert "not up" in cli("rehearsal", "env").err
    assert "not up" in cli("rehearsal", "switch", "one-vc").err
    assert "needs a config" in cli("rehearsal", "switch").err


def test_status_names_a_rest_server_that_cannot_reach_its_database(cli: Callable[..., Any], home: Path, serve: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The rest-server runs and answers /api/v2/info, its job list never answers (v1.2.0's own pg 7 on Node >= 14,
    tests.support.pai_database): status says so with the fix, and exits 1."""
    pai = StalledPai(serve)
    monkeypatch.setattr("hivedlab.backends.pai.database.DATABASE_TIMEOUT_S", 0.5)
    run, programs = home / "run", home.parent / "programs"
    run.mkdir(parents=True)
    (run / "pai-admin-token").write_text(pai.token("admin"), encoding="utf-8")
    cluster = {"kind": "rehearsal", "config": "two-vc", "inventory": None, "speedup": 5.0, "pai_url": pai.url,
               "hived_url": "http://y", "apiserver": "https://z", "kubeconfig": "k",
               "pai_admin_token_file": str(run / "pai-admin-token"), "programs": str(programs)}
    (run / "cluster.json").write_text(json.dumps(cluster), encoding="utf-8")
    me = [part.decode() for part in Path(f"/proc/{os.getpid()}/cmdline").read_bytes().split(b"\0") if part]
    record = [{"name": "rest-server", "pid": os.getpid(), "argv": me, "log": "rest-server.log", "started": 0.0}]
    (run / "processes.json").write_text(json.dumps(record), encoding="utf-8")
    try:
        result = cli("rehearsal", "status")
    finally:
        pai.release.set()
    assert result.code == 1
    line = next(x for x in result.out.splitlines() if "rest-server's database" in x)
    assert line.startswith(f"STALLED  rest-server's database: the rest-server at {pai.url} answers /api/v2/info but "
                           "not its job list")
    assert f"`npm install --omit=dev --install-links --ignore-scripts pg@8.3.2` in {programs / 'rest-server'}" in line
    healthy = cli("rehearsal", "status")
    assert "ok       rest-server's database: the job list answers" in healthy.out and healthy.code == 0
