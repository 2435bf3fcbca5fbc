"""Trim a run directory recorded on the rehearsal cluster into a small fixture (tests/fixtures/rehearsal-recorded/).

Run: .venv/bin/python -m tests.support.trim_recorded_runs RUN_DIR FIXTURE_DIR

Keeps what the checker, the report and the grader read (`KEPT`, `KEPT_DIRS`, each run's evidence.jsonl and
verdicts.json); drops the font, the HTML report, the charts and the REST call log. In each evidence log it drops the
parts of the recorded objects that nothing judges (every object's `managedFields` and `selfLink`, a Framework's pod
templates and its copy of the job's YAML, a pod's volumes, init containers and tolerations, of its containers all but
`CONTAINER_KEPT`, of their environment all but `ENV_KEPT`), then writes the hash chain again with
`hivedlab.evidence.record_hash`: seq, prev and times stay as recorded. Paths under the run directory become relative.
`hivedlab check` and `hivedlab report` on the trimmed copy must give what they give on the untrimmed run (the README
of the fixtures says how each was recorded).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from hivedlab.evidence import ZERO_HASH, canonical_json, record_hash

KEPT = ("run.json", "inventory.yaml", "claims.json", "report.md", "pai/submitted.json", "pai/user-stops.jsonl")
KEPT_DIRS = ("hived", "jobs", "contrast/hived", "contrast/jobs")


CONTAINER_KEPT = {"name", "image", "env", "resources", "ports"}
ENV_KEPT = ("NVIDIA_VISIBLE_DEVICES", "PAI_JOB_NAME", "TF_CONFIG")  # the GPUs HiveD gave, the job, TF's cluster


def _slim(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
        metadata.pop("selfLink", None)
    spec = obj.get("spec")
    if obj.get("kind") == "Framework" and isinstance(spec, dict):
        ((metadata or {}).get("annotations") or {}).pop("config", None)  # the job's YAML: in jobs/ as submitted
        for role in spec.get("taskRoles") or []:
            (role.get("task") or {}).pop("pod", None)
    if obj.get("kind") == "Pod" and isinstance(spec, dict):
        for key in ("volumes", "initContainers", "tolerations"):
            spec.pop(key, None)
        for container in spec.get("containers") or []:
            for key in set(container) - CONTAINER_KEPT:
                container.pop(key)
            container["env"] = [e for e in container.get("env") or [] if e.get("name") in ENV_KEPT]
    return obj


def trim_log(source: Path, target: Path) -> None:
    previous = ZERO_HASH
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        watched = record.get("watch")
        if isinstance(watched, dict) and isinstance(watched.get("object"), dict):
            _slim(watched["object"])
        record["prev"] = previous
        record.pop("hash", None)
        previous = record_hash(record)
        lines.append(canonical_json(record)[:-1] + f',"hash":"{previous}"}}')  # as the writer writes it
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def trim_run(run: Path, fixture: Path) -> None:
    if fixture.exists():
        shutil.rmtree(fixture)
    for name in KEPT:
        if (run / name).is_file():
            (fixture / name).parent.mkdir(parents=True, exist_ok=True)
            text = (run / name).read_text(encoding="utf-8")
            (fixture / name).write_text(text.replace(str(run) + "/", "").replace(str(run), "."), encoding="utf-8")
    for name in KEPT_DIRS:
        if (run / name).is_dir():
            shutil.copytree(run / name, fixture / name)
    for log in run.glob("*/**/evidence.jsonl"):
        folder = log.parent.relative_to(run)
        trim_log(log, fixture / folder / "evidence.jsonl")
        verdicts = log.parent / "verdicts.json"
        if verdicts.is_file():
            text = verdicts.read_text(encoding="utf-8")
            (fixture / folder / "verdicts.json").write_text(text.replace(str(run) + "/", ""), encoding="utf-8")


if __name__ == "__main__":
    trim_run(Path(sys.argv[1]).resolve(), Path(sys.argv[2]))
