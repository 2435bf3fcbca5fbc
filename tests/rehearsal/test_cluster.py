"""Against the real programs: `up`, the lab's smoke test with --cluster pai, `down` (marker `rehearsal`).

Run only when HIVEDLAB_REHEARSAL_PROGRAMS names the folder of OpenPAI's programs and `hivedlab rehearsal build` has
built Kubernetes in the home (HIVEDLAB_REHEARSAL_HOME or the default); skipped otherwise, with that reason.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hivedlab.rehearsal.settings import load_settings
from tests.support.rehearsal_lab import hivedlab, missing_parts, rehearsal_lab

pytestmark = [pytest.mark.rehearsal, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    missing = missing_parts()
    if missing:
        pytest.skip(f"no rehearsal cluster to start: {missing}")
    with rehearsal_lab(tmp_path_factory.mktemp("lab"), "one-vc", ["default"], speedup=30) as env:
        yield env


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
    kubectl = load_settings().paths.program("kubectl")  # the build's, linked into the tests' home
    nodes = subprocess.run([str(kubectl), "get", "nodes", "-l", "hivedlab.rehearsal/emulated=true", "-o", "name"],
                           capture_output=True, text=True, check=False, env={**os.environ, **cluster})
    assert nodes.returncode == 0 and nodes.stdout.count("node/") == 3  # the master and the two workers
