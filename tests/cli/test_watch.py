"""`hivedlab watch`: help, bad configuration, and a real run against the local API server ended by SIGINT."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from hivedlab.evidence import read_evidence
from tests.support.k8s_server import KUBECONFIG, FakeApiServer
from tests.support.records import object_of


def test_help(cli) -> None:
    result = cli("watch", "--help")
    assert result.code == 0 and "examples:" in result.out and "--kubeconfig" in result.out


def test_log_is_required(cli) -> None:
    assert cli("watch").code == 2


def test_missing_kubeconfig_is_one_line(cli, tmp_path: Path) -> None:
    result = cli("watch", "--log", str(tmp_path / "w.jsonl"), "--kubeconfig", str(tmp_path / "nope"))
    assert result.code == 2 and "no kubeconfig" in result.err and result.err.count("\n") == 1


def test_unknown_context_is_one_line(cli, tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(KUBECONFIG.format(url="http://127.0.0.1:9"), encoding="utf-8")
    result = cli("watch", "--log", str(tmp_path / "w.jsonl"), "--kubeconfig", str(config), "--context", "nope")
    assert result.code == 2 and "cannot configure" in result.err and "Traceback" not in result.err


def test_records_until_sigint(cli, tmp_path: Path) -> None:
    log, config = tmp_path / "w.jsonl", tmp_path / "kubeconfig"
    with FakeApiServer() as server:
        config.write_text(KUBECONFIG.format(url=server.url), encoding="utf-8")
        server.add("pods", "p0")

        def interrupt() -> None:
            deadline = time.monotonic() + 10
            pause = threading.Event()
            while time.monotonic() < deadline:
                if log.exists() and any(r.resource == "pods" for r in read_evidence(log).records):
                    break
                pause.wait(0.01)
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=interrupt, daemon=True).start()
        result = cli("watch", "--log", str(log), "--kubeconfig", str(config), "--context", "lab")
    assert result.code == 0 and "stopped" in result.err
    evidence = read_evidence(log)
    assert evidence.chain_ok and evidence.warnings == ()
    assert [object_of(r)["metadata"]["name"] for r in evidence.records if r.resource == "pods"] == ["p0"]


def test_watcher_built_from_kubeconfig_as_the_real_backend_does(tmp_path: Path) -> None:
    from hivedlab.backends.watcher import Watcher
    from hivedlab.evidence import EvidenceWriter

    log, config = tmp_path / "w.jsonl", tmp_path / "kubeconfig"
    with FakeApiServer() as server:
        config.write_text(KUBECONFIG.format(url=server.url), encoding="utf-8")
        server.add("pods", "p0")
        with EvidenceWriter(log, "k8s") as writer:
            watcher = Watcher(writer=writer, kubeconfig=str(config), context="lab", namespace="default")
            watcher.start()
            deadline, pause = time.monotonic() + 10, threading.Event()
            while not any(r.resource == "pods" for r in read_evidence(log).records):
                assert time.monotonic() < deadline
                pause.wait(0.01)
            watcher.stop(timeout=5)
    assert [r.watch_type for r in read_evidence(log).records if r.resource == "pods"] == ["LISTED"]
