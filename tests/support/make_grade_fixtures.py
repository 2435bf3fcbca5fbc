"""Writes the grading fixtures: a real simulated run (`base/`) and tampered variants of it (`variants/<case>/`).

    .venv/bin/python -m tests.support.make_grade_fixtures    # the outputs are committed

`base/` is `hivedlab run all --seed 1` on the simulated cluster with the shipped inventory, without the charts and
report.html (grading reads neither). Each variant is an overlay: the files that differ from `base/`; a test copies
`base/` and then the overlay into a group folder. `variants/<case>/DELETE` lists base files the variant removes.
A forger re-chains the records it changed (re-hashing with `hivedlab.evidence.record_hash`), so that only the
tamper checks can catch it; an editor does not (the chain breaks).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hivedlab.evidence import ZERO_HASH, record_hash
from tests.support.paths import FIXTURES, ROOT

HERE = FIXTURES / "grade"

BASE = HERE / "base"
VARIANTS = HERE / "variants"
PRIORITY = "experiments/priority/evidence.jsonl"
SKIP_SUFFIXES = (".png", ".svg", ".html")

Records = list[dict[str, Any]]


def run_base() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        subprocess.run([sys.executable, "-m", "hivedlab", "run", "all", "--seed", "1", "--out", str(out)],
                       cwd=ROOT, check=False, stdout=subprocess.DEVNULL)
        if not (out / "run.json").is_file():
            raise SystemExit("hivedlab run all did not write a run directory")
        shutil.rmtree(BASE, ignore_errors=True)
        for path in sorted(out.rglob("*")):
            if path.is_file() and not path.name.endswith(SKIP_SUFFIXES):
                target = BASE / path.relative_to(out)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)


def read(rel: str) -> Records:
    return [json.loads(line) for line in (BASE / rel).read_text(encoding="utf-8").splitlines() if line.strip()]


def rechain(records: Records) -> str:
    prev = ZERO_HASH
    lines = []
    for record in records:
        record.pop("hash", None)
        record["prev"] = prev
        record["hash"] = prev = record_hash(record)
        lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def pods(records: Records) -> list[dict[str, Any]]:
    return [r for r in records if r.get("kind") == "object" and r["watch"]["resource"] == "pods"]


def write(case: str, files: dict[str, str], delete: tuple[str, ...] = ()) -> None:
    folder = VARIANTS / case
    folder.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    if delete:
        (folder / "DELETE").write_text("\n".join(delete) + "\n", encoding="utf-8")


def edited() -> None:
    """An honest-looking edit of one bound pod's node, without re-hashing: the chain breaks there."""
    lines = (BASE / PRIORITY).read_text(encoding="utf-8").splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if '"nodeName":"hostname-dan"' in line)
    lines[index] = lines[index].replace('"nodeName":"hostname-dan"', '"nodeName":"hostname-carol"', 1)
    write(f"chain-broken-at-record-{index}", {PRIORITY: "".join(lines)})


def truncated() -> None:
    """The log cut mid-record before the run ended (the end record and more are gone)."""
    lines = (BASE / PRIORITY).read_text(encoding="utf-8").splitlines(keepends=True)
    keep = len(lines) * 2 // 3
    write("truncated-log", {PRIORITY: "".join(lines[:keep]) + lines[keep][: len(lines[keep]) // 2]})


def forged(case: str, change: Callable[[Records], None]) -> None:
    records = read(PRIORITY)
    change(records)
    write(case, {PRIORITY: rechain(records)})


def rv_backwards(records: Records) -> None:
    bound = [r for r in pods(records) if r["watch"]["object"]["spec"].get("nodeName")]
    bound[1]["watch"]["object"]["metadata"]["resourceVersion"] = "1"


def uid_reused(records: Records) -> None:
    all_pods = pods(records)
    first = all_pods[0]["watch"]["object"]["metadata"]
    other = next(r for r in all_pods if r["watch"]["object"]["metadata"]["name"] != first["name"])
    uid = other["watch"]["object"]["metadata"]["uid"]
    for record in all_pods:
        if record["watch"]["object"]["metadata"]["uid"] == uid:
            record["watch"]["object"]["metadata"]["uid"] = first["uid"]


def no_annotations(records: Records) -> None:
    for record in pods(records):
        annotations = record["watch"]["object"]["metadata"].get("annotations", {})
        annotations.pop("hivedscheduler.microsoft.com/pod-bind-info", None)
        annotations.pop("hivedscheduler.microsoft.com/pod-leaf-cell-isolation", None)


def other_cluster(records: Records) -> None:
    """A log from another group's cluster, renamed consistently (nodes, bind info, config)."""
    for record in records:
        text = json.dumps(record)
        record.clear()
        record.update(json.loads(text.replace("hostname-dan", "gpu-box-7")))


def foreign_priority(records: Records) -> None:
    for record in records:
        action = record.get("action") or {}
        if action.get("type") == "submit" and action.get("job") == "low":
            action["protocol"] = action["protocol"].replace("jobPriorityClass: test", "jobPriorityClass: prod")


def overclaimed() -> None:
    claims = json.loads((BASE / "claims.json").read_text(encoding="utf-8"))
    for exp in claims["experiments"]:
        exp["verdict"] = "consistent"
        for answer in exp.get("answers", []):
            answer["verdict"] = "consistent"
    priority = next(e for e in claims["experiments"] if e["id"] == "priority")
    fact = next(f for f in priority["facts"] if f.get("node") == "hostname-dan")
    fact["node"] = "hostname-carol"
    write("claims-overclaimed", {"claims.json": json.dumps(claims, ensure_ascii=False, indent=2) + "\n"})


def not_template() -> None:
    write("report-not-template", {"report.md": "# 实验报告\n\n我们完成了全部实验，一切正常。\n"})


def missing_files() -> None:
    write("missing-files", {}, delete=("claims.json", "report.md", "experiments/gang/evidence.jsonl",
                                       "experiments/incremental/verdicts.json"))


def main() -> int:
    if "--keep-base" not in sys.argv:
        run_base()
    shutil.rmtree(VARIANTS, ignore_errors=True)
    edited()
    truncated()
    forged("forged-rv-backwards", rv_backwards)
    forged("forged-uid-reused", uid_reused)
    forged("forged-no-hived-annotations", no_annotations)
    forged("foreign-node", other_cluster)
    forged("foreign-priority", foreign_priority)
    overclaimed()
    not_template()
    missing_files()
    print(f"wrote {BASE.relative_to(ROOT)} and {len(list(VARIANTS.iterdir()))} variants")
    return 0


if __name__ == "__main__":
    sys.exit(main())
