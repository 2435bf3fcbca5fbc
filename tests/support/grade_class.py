"""A generated class of simulated submissions, honest ones and copies, for the grader's copy checks.

Honest groups run the lab on the simulated cluster, each with its own inventory (group name, members, users,
hostnames, GPUs) and seed. A copy is another group's run directory made to look like a new group's, each way a
course would try: the group renamed, the members and OpenPAI users renamed, the job names' tag changed, every time
shifted by a constant, the pod and framework uids replaced, and the hash chain recomputed (`rechain`). The tests
(`tests/checker/grading/test_copies.py`) and the benchmark (`benchmarks/bench_grade.py --copies`) use it.
"""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from hivedlab.cli.main import main
from hivedlab.evidence import canonical_json, format_time, parse_time, record_hash

ZERO = "0" * 64


def class_inventory(index: int) -> dict[str, Any]:
    """Group `index`'s inventory: its own name, users and hostnames; one or two workers, one or two GPUs each."""
    workers = 1 + index % 2
    members: list[dict[str, Any]] = [
        {"name": f"Dev {index}", "user": f"dev{index}", "roles": ["dev-box"], "hostname": f"dev-{index}",
         "ip": f"10.{index // 250}.{index % 250}.10"},
        {"name": f"Master {index}", "user": f"boss{index}", "roles": ["master"], "hostname": f"master-{index}",
         "ip": f"10.{index // 250}.{index % 250}.11"}]
    members += [{"name": f"Worker {index}-{n}", "user": f"w{index}x{n}", "roles": ["worker"],
                 "hostname": f"worker-{index}-{n}", "ip": f"10.{index // 250}.{index % 250}.{12 + n}",
                 "gpus": 2 if workers == 1 else 1 + (index // 2 + n) % 2} for n in range(workers)]
    return {"group": f"group-{index:04d}", "members": members}


def honest_run(out: Path, index: int, seed: int, experiment: str = "all", report: bool = False) -> Path:
    """`hivedlab run` on the simulated cluster with group `index`'s inventory and `seed`, into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    inventory = out.parent / f".{out.name}.inventory.yaml"
    inventory.write_text(yaml.safe_dump(class_inventory(index), sort_keys=False), encoding="utf-8")
    args = ["run", experiment, "--seed", str(seed), "--inventory", str(inventory), "--out", str(out)]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main([*args, *(() if report else ("--no-report",))])
    inventory.unlink()
    if code not in (0, 1):
        raise RuntimeError(f"hivedlab {' '.join(args)} failed: exit {code}")
    return out


def rechain(path: Path, edit: Callable[[dict[str, Any]], dict[str, Any]] = lambda record: record) -> None:
    """Each record of a log edited, and the hash chain recomputed over the edits (as a careful copier would)."""
    lines, prev = [], ZERO
    for line in path.read_text(encoding="utf-8").splitlines():
        record = edit(json.loads(line))
        record["prev"] = prev
        record["hash"] = prev = record_hash(record)
        lines.append(canonical_json(record)[:-1] + f',"hash":"{prev}"}}')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _logs(folder: Path) -> list[Path]:
    return sorted(folder.rglob("evidence.jsonl"))


def rename(folder: Path, names: Mapping[str, str]) -> None:
    """Every text file of a run directory with these names replaced (group, members, users, hostnames, job tags),
    the logs re-chained."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".yaml",
                                                                                      ".yml", ".md")):
        text = path.read_text(encoding="utf-8")
        for old, new in names.items():
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
    for log in _logs(folder):
        rechain(log)


def shift_times(folder: Path, seconds: float) -> None:
    """Every record's time moved by a constant, the logs re-chained."""
    def shifted(record: dict[str, Any]) -> dict[str, Any]:
        moment = parse_time(record["time"])
        assert moment is not None
        return {**record, "time": format_time(moment + timedelta(seconds=seconds))}
    for log in _logs(folder):
        rechain(log, shifted)


def new_uids(folder: Path) -> None:
    """Every object uid replaced by a fresh random one (the same one wherever the old one appears)."""
    for log in _logs(folder):
        text = log.read_text(encoding="utf-8")
        uids = {str(((json.loads(line).get("watch") or {}).get("object") or {}).get("metadata", {}).get("uid"))
                for line in text.splitlines()}
        for old in sorted(u for u in uids if u and u != "None"):
            text = text.replace(old, str(uuid.uuid4()))
        log.write_text(text, encoding="utf-8")
        rechain(log)


def disguise(folder: Path, index: int, way: str) -> None:
    """Make a copied run directory look like group `index`'s own, one `way` (or "all" of them)."""
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    source = yaml.safe_load((folder / "inventory.yaml").read_text(encoding="utf-8"))
    names: dict[str, str] = {}
    if way in ("group", "all"):
        names[str(record["group"])] = f"group-{index:04d}"
    if way in ("users", "all"):
        for number, member in enumerate(source["members"]):
            names[str(member["user"])] = f"copier{index}m{number}"
            names[str(member["name"])] = f"Copier {index} {number}"
    if way in ("tag", "all"):
        names[f"-{record['run_tag']}"] = f"-t{index}"
        names[f'"run_tag": "{record["run_tag"]}"'] = f'"run_tag": "t{index}"'
    if names:
        rename(folder, names)
    if way in ("times", "all"):
        shift_times(folder, 3600.0 * (index + 1) + 0.25)
    if way in ("uids", "all"):
        new_uids(folder)
    if way == "rechain":
        for log in _logs(folder):
            rechain(log, lambda record: {**record, "source": record["source"]})


WAYS = ("group", "users", "tag", "times", "uids", "rechain", "all")


HONEST = ((1, 1), (2, 1), (3, 5), (1, 2))  # (inventory, seed): two with one seed, one inventory with two seeds
COPIED = 1  # the first honest group's run is the one copied, each way
COPY_INDEX = 100  # the copiers' own inventory indices start here


def make_class(folder: Path, honest: tuple[tuple[int, int], ...] = HONEST, ways: tuple[str, ...] = WAYS) -> Path:
    """A submissions folder: `honest-<inventory>-s<seed>` groups and `copy-<way>` groups, each a copy of the first
    honest group's run disguised one way. Returns the submissions folder."""
    import shutil

    subs = folder / "subs"
    for index, seed in honest:
        honest_run(subs / f"honest-{index}-s{seed}", index, seed)
    original = subs / f"honest-{honest[0][0]}-s{honest[0][1]}"
    for number, way in enumerate(ways):
        target = subs / f"copy-{way}"
        shutil.copytree(original, target)
        disguise(target, COPY_INDEX + number, way)
    return subs


def another_run(folder: Path, seed: int) -> Path:
    """A built run directory (tests.support.grade_builders) made another run of the same plan: run.json's seed, and
    every gap between records `seed` ms longer per record, as another seed draws other durations (chain re-sealed)."""
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    (folder / "run.json").write_text(json.dumps({**record, "seed": seed}), encoding="utf-8")

    def later(entry: dict[str, Any]) -> dict[str, Any]:
        moment = parse_time(entry["time"])
        assert moment is not None
        return {**entry, "time": format_time(moment + timedelta(milliseconds=seed * entry["seq"]))}
    for log in _logs(folder):
        rechain(log, later)
    return folder
