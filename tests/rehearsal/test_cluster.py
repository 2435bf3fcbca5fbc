"""Against the real programs: `up`, the lab's smoke test with --cluster pai, `down` (marker `rehearsal`).

Run only when HIVEDLAB_REHEARSAL_PROGRAMS names the folder of OpenPAI's programs and `hivedlab rehearsal build` has
built Kubernetes in the home (HIVEDLAB_REHEARSAL_HOME or the default); skipped otherwise, with that reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hivedlab.rehearsal.programs import check_parts
from hivedlab.rehearsal.settings import load_settings

pytestmark = [pytest.mark.rehearsal, pytest.mark.slow]


def _missing() -> str | None:
    settings = load_settings()
    if settings.programs is None:
        return "HIVEDLAB_REHEARSAL_PROGRAMS names no folder of OpenPAI's programs"
    problems = [f"{p.name}: {p.problem}" for p in check_parts(settings.paths, settings.programs) if p.problem]
    return "; ".join(problems) or None


def hivedlab(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hivedlab", *args], capture_output=True, text=True, check=False,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    missing = _missing()
    if missing:
        pytest.skip(f"no rehearsal cluster to start: {missing}")
    up = hivedlab("rehearsal", "up", "--config", "one-vc", "--speedup", "30")
    assert up.returncode == 0, up.stderr
    env = dict(line.removeprefix("export ").split("=", 1) for line in up.stdout.splitlines()
               if line.startswith("export "))
    try:
        folder = tmp_path_factory.mktemp("lab")
        passwords = folder / "passwords.yaml"
        passwords.write_text("".join(f"{u}: {u.title()}-pass-1234\n" for u in ("alice", "bob", "carol", "dan")),
                             encoding="utf-8")
        passwords.chmod(0o600)
        token = next(line.split(": ", 1)[1] for line in up.stdout.splitlines() if "admin's token" in line)
        tokens = folder / "tokens"
        accounts = hivedlab("accounts", "--admin-token-file", token, "--passwords", str(passwords),
                            "--vc", "default", "--tokens-out", str(tokens), env=env)
        assert accounts.returncode == 0, accounts.stderr
        yield {**env, "HIVEDLAB_PAI_TOKEN_FILE": str(tokens), "HIVEDLAB_PAI_POLL_S": "1", "LAB": str(folder)}
    finally:
        down = hivedlab("rehearsal", "down")
        assert down.returncode == 0, down.stderr


def test_smoke_is_consistent_and_its_evidence_shows_emulated_containers(cluster: dict[str, str]) -> None:
    out = Path(cluster["LAB"]) / "out"
    run = hivedlab("run", "smoke", "--cluster", "pai", "--out", str(out), "--lang", "en", env=cluster)
    assert run.returncode == 0, run.stdout + run.stderr
    verdicts = json.loads((out / "experiments" / "smoke" / "verdicts.json").read_text(encoding="utf-8"))
    assert verdicts["verdict"] == "consistent"
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["cluster_kind"] == {"kind": "rehearsal",
                                      "emulated_nodes": ["hostname-bob", "hostname-carol", "hostname-dan"]}
    evidence = (out / "experiments" / "smoke" / "evidence.jsonl").read_text(encoding="utf-8")
    assert "emulated://" in evidence
    kubectl = load_settings().paths.program("kubectl")
    nodes = subprocess.run([str(kubectl), "get", "nodes", "-l", "hivedlab.rehearsal/emulated=true", "-o", "name"],
                           capture_output=True, text=True, check=False, env={**os.environ, **cluster})
    assert nodes.returncode == 0 and nodes.stdout.count("node/") == 3  # the master and the two workers
