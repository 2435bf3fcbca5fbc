"""The fixtures shared across the test tree. Helpers that are not fixtures live in `tests.support`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hivedlab.cli.main import main
from tests.support import fidelity
from tests.support.local import Handler, LocalServer
from tests.support.paths import FIXTURES, ROOT
from tests.support.quick_charts import stub_charts
from tests.support.sim_lab import SimLab, session_folder, shared_sim_lab, tree_digest
from tests.support.simkit import OPEN_WRITERS

RUN_SIM = FIXTURES / "report" / "run-sim"


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In an xdist worker, hand the fidelity scores the replay tests recorded to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["fidelity"] = fidelity.worker_scores()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist's controller: a worker finished; keep its fidelity scores."""
    fidelity.merge(getattr(node, "workeroutput", {}).get("fidelity", {}))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in fidelity.summary_lines():
        terminalreporter.write_line(line)


@pytest.fixture(scope="session", autouse=True)
def _no_group_yaml(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Run every test in a copy of the repository's top level without group.yaml (links to the rest), so that a
    developer's own, git-ignored ./group.yaml cannot change what a command reads; relative paths (jobs/, configs/)
    still work. Run folders (out*) are left out too, so that nothing a test writes lands in the repository."""
    here = tmp_path_factory.mktemp("repository")
    for entry in ROOT.iterdir():
        if entry.name != "group.yaml" and not entry.name.startswith("out"):
            (here / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    before = os.getcwd()
    os.chdir(here)
    try:
        yield here
    finally:
        os.chdir(before)


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        """stderr's lines but the one naming the group a command found by itself (`load_group`)."""
        return [line for line in self.err.splitlines() if not line.startswith("小组 / group: ")]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run `hivedlab ARGS...` in-process; argparse's exits are returned as codes, not raised."""

    def run(*args: str) -> CliResult:
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder that is the whole PATH: put fake programs in it."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder) + os.pathsep + "/bin" + os.pathsep + "/usr/bin")
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")  # never the machine's real daemon
    return folder


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], LocalServer]]:
    """Start local HTTP servers answering through a function; all are closed after the test."""
    servers: list[LocalServer] = []

    def start(handle: Handler) -> LocalServer:
        server = LocalServer(handle)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture(autouse=True)
def _close_sim_writers() -> Iterator[None]:
    """Close the evidence writers a simulated-cluster test left open."""
    yield
    while OPEN_WRITERS:
        OPEN_WRITERS.pop().close()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A private copy of the fixture run directory (five experiments on the simulated cluster)."""
    target = tmp_path / "run"
    shutil.copytree(RUN_SIM, target)
    return target


@pytest.fixture
def quick_charts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip matplotlib where a test is about the text: the chart files are still written, as a tiny SVG/PNG.
    A module- or session-scoped fixture does the same with `stub_charts` inside `pytest.MonkeyPatch.context()`."""
    stub_charts(monkeypatch)


@pytest.fixture(scope="session")
def sim_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimLab]:
    """`hivedlab run all` on the simulated cluster, made once per session (once for all xdist workers), with real
    charts and the report in Chinese. Read it; a test that changes a run directory uses `sim_lab.copy_to(tmp_path)`."""
    lab = shared_sim_lab(session_folder(tmp_path_factory.getbasetemp()))
    yield lab
    assert tree_digest(lab.out) == lab.digest, "a test changed the shared simulated run: copy it with copy_to first"
