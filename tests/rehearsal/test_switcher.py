"""A run on the rehearsal cluster switches HiveD's config itself only when the cluster is this machine's own, up,
and the one the run talks to (hivedlab.rehearsal.stack.switcher_for)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hivedlab.rehearsal.settings import ENV_HOME, ENV_PORT_OFFSET, Paths, Ports, load_settings
from hivedlab.rehearsal.stack import switcher_for
from hivedlab.rehearsal.supervisor import Started, save_record
from tests.support.paths import ROOT

HIVED = "http://127.0.0.1:29096"


def alive_as(pid: int) -> tuple[str, ...]:
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    return tuple(part.decode() for part in raw.split(b"\0") if part)


@pytest.fixture
def process() -> Iterator[subprocess.Popen[bytes]]:
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    child = subprocess.Popen(argv)
    deadline = time.monotonic() + 10
    while alive_as(child.pid) != tuple(argv) and time.monotonic() < deadline:  # forked, not yet exec'd
        time.sleep(0.01)
    yield child
    child.kill()
    child.wait()


def _cluster(home: Path, child: subprocess.Popen[bytes] | None, hived_url: str = HIVED, offset: int = 0) -> None:
    paths = Paths(home)
    paths.run.mkdir(parents=True)
    inventory = str(ROOT / "configs" / "group.example.yaml")
    paths.cluster.write_text(json.dumps({
        "kind": "rehearsal", "config": "two-vc", "inventory": inventory, "speedup": 5.0,
        "pai_url": "http://127.0.0.1:9186", "hived_url": hived_url, "apiserver": "https://127.0.0.1:26443",
        "kubeconfig": str(paths.kubeconfig), "pai_admin_token_file": str(paths.run / "pai-admin-token"),
        "programs": None, "port_offset": offset}))
    if child is not None:
        argv = tuple(str(a) for a in child.args)  # type: ignore[union-attr]
        save_record(paths.record, [Started("hivedscheduler", child.pid, argv, "log", 0.0)])


def test_the_local_cluster_that_serves_this_hived_is_switched(tmp_path: Path, process) -> None:
    _cluster(tmp_path, process)
    assert switcher_for(HIVED + "/", {ENV_HOME: str(tmp_path)}) is not None


def test_another_hived_a_stopped_cluster_or_no_cluster_is_not_touched(tmp_path: Path, process) -> None:
    _cluster(tmp_path / "other", process, hived_url="http://127.0.0.1:30096")
    _cluster(tmp_path / "stopped", None)
    for home in ("other", "stopped", "none"):
        assert switcher_for(HIVED, {ENV_HOME: str(tmp_path / home)}) is None


def test_a_cluster_started_with_a_port_offset_keeps_it_for_later_commands(tmp_path: Path) -> None:
    _cluster(tmp_path, None, offset=1000)
    assert load_settings(str(tmp_path), environ={}).ports == Ports().shifted(1000)
    assert load_settings(str(tmp_path), environ={ENV_PORT_OFFSET: "0"}).ports == Ports()
