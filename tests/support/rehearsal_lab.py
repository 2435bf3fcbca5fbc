"""A rehearsal cluster for the tests marked `rehearsal`: started with the lab's accounts, stopped afterwards.

Such tests run only when HIVEDLAB_REHEARSAL_PROGRAMS names the folder of OpenPAI's programs and `hivedlab rehearsal
build` has built Kubernetes in the home (HIVEDLAB_REHEARSAL_HOME or the default); `missing_parts` says why not. The
tests' clusters have a home of their own (the build's bin/ linked in) and ports moved by an offset per pytest
worker (`port_offset`), so a cluster the user runs is never touched and two tests' clusters never meet.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from hivedlab.rehearsal.programs import check_parts
from hivedlab.rehearsal.settings import load_settings

MEMBERS = ("alice", "bob", "carol", "dan")
TEST_PORT_OFFSET = 4000  # the tests' clusters: 4000, then 1000 more per pytest-xdist worker (gw0, gw1, ...)


def port_offset() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    return TEST_PORT_OFFSET + 1000 * (int(worker) if worker.isdigit() else 0)


def missing_parts() -> str | None:
    settings = load_settings()
    if settings.programs is None:
        return "HIVEDLAB_REHEARSAL_PROGRAMS names no folder of OpenPAI's programs"
    problems = [f"{p.name}: {p.problem}" for p in check_parts(settings.paths, settings.programs) if p.problem]
    return "; ".join(problems) or None


def hivedlab(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hivedlab", *args], capture_output=True, text=True, check=False,
                          timeout=timeout, env={**os.environ, **(env or {})})


@contextmanager
def rehearsal_lab(folder: Path, config: str, vcs: Sequence[str], speedup: int,
                  extra: Sequence[str] = ()) -> Iterator[dict[str, str]]:
    """`up` with `config` in a home of its own under `folder`, every member's account granted `vcs`; yields the
    environment a run needs (`LAB`: the folder for its output). `down` afterwards, whatever happened."""
    home = folder / "rehearsal-home"
    home.mkdir()
    (home / "bin").symlink_to(load_settings().paths.bin)
    own = {"HIVEDLAB_REHEARSAL_HOME": str(home), "HIVEDLAB_REHEARSAL_PORT_OFFSET": str(port_offset())}
    up = hivedlab("rehearsal", "up", "--config", config, "--speedup", str(speedup), *extra, env=own)
    assert up.returncode == 0, up.stderr
    env = {**own, **dict(line.removeprefix("export ").split("=", 1) for line in up.stdout.splitlines()
                         if line.startswith("export "))}
    try:
        passwords = folder / "passwords.yaml"
        passwords.write_text("".join(f"{u}: {u.title()}-pass-1234\n" for u in MEMBERS), encoding="utf-8")
        passwords.chmod(0o600)
        token = next(line.split(": ", 1)[1] for line in up.stdout.splitlines() if "admin's token" in line)
        tokens = folder / "tokens"
        grants = [arg for vc in vcs for arg in ("--vc", vc)]
        accounts = hivedlab("accounts", "--admin-token-file", token, "--passwords", str(passwords), *grants,
                            "--tokens-out", str(tokens), env=env)
        assert accounts.returncode == 0, accounts.stderr
        yield {**env, "HIVEDLAB_PAI_TOKEN_FILE": str(tokens), "HIVEDLAB_PAI_POLL_S": "1", "LAB": str(folder)}
    finally:
        down = hivedlab("rehearsal", "down", env=own)
        assert down.returncode == 0, down.stderr


def hivedlab_started(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """`hivedlab ARGS` started in the background (a run the test acts on while it goes)."""
    return subprocess.Popen([sys.executable, "-m", "hivedlab", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **env})


def kubectl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The build's kubectl against the test's cluster (`env` names its KUBECONFIG)."""
    program = load_settings().paths.program("kubectl")
    return subprocess.run([str(program), *args], capture_output=True, text=True, check=False, timeout=30,
                          env={**os.environ, **env})


def first_running_pod(env: dict[str, str], within_s: float) -> tuple[str, str] | None:
    """(pod, node) of the first pod seen Running in namespace default within `within_s` seconds, else None."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        pods = kubectl(env, "get", "pods", "-n", "default", "-o",
                       "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.phase}{\"\\n\"}{end}")
        running = [line.split() for line in pods.stdout.splitlines() if line.endswith(" Running")]
        if running:
            return running[0][0], running[0][1]
        time.sleep(0.2)
    return None
