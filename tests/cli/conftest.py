"""Fixtures of the `hivedlab env` tests: the machine's /proc/net and os-release."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.envcheck import probes
from tests.support.envcheck_runs import SSHD_LISTENING


@pytest.fixture
def proc_net(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """/proc/net as on a machine whose sshd listens on port 22 (write `tcp` again for another machine)."""
    folder = tmp_path / "proc-net"
    folder.mkdir()
    (folder / "tcp").write_text(SSHD_LISTENING, encoding="utf-8")
    monkeypatch.setattr(probes, "PROC_NET", str(folder))
    return folder


@pytest.fixture
def ubuntu(tmp_path: Path) -> Path:
    path = tmp_path / "os-release"
    path.write_text('ID=ubuntu\nVERSION_ID="18.04"\nPRETTY_NAME="Ubuntu 18.04.5 LTS"\n', encoding="utf-8")
    return path
