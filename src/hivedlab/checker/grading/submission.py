"""A group's submission: find the run directory in the group folder and read its parts, safely.

Nothing from a submission is executed: YAML goes through `safe_load`, JSON through `json.loads`, each under a size
cap; an escaping symlink, a FIFO or an oversized file becomes a finding. Missing parts are findings too: the grade
says what was missing instead of stopping the batch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.yaml_load import safe_load
from hivedlab.checker.grading.grade_findings import GradeFinding
from hivedlab.checker.grading.safefs import MAX_LISTED, GroupFolder, UnsafeFile
from hivedlab.env_record import EnvRecord, env_record_from_json
from hivedlab.lab_group.inventory import Inventory, inventory_from_mapping
from hivedlab.lab_group.layouts import SIM_WORKERS
from hivedlab.rundir import (
    CLAIMS,
    ENV,
    EVIDENCE,
    EXPERIMENTS,
    HIVED_CONFIGS,
    INVENTORY,
    JOBS,
    REPORT_MD,
    RUN_RECORD,
    VERDICTS,
    RunRecord,
)

SMALL_FILE_BYTES = 1 * 1024 * 1024  # run.json, inventory, env records, HiveD configs, verdicts, claims
REPORT_BYTES = 4 * 1024 * 1024
MAX_PARTS = 32  # env records, HiveD configs, experiments: a lab run has a handful of each
MAX_WALK_NODES = 100_000  # bound on walking parsed YAML (a file of anchors can describe a huge tree)
# `hivedlab.checker.report.freetext`'s markers around the students' own deployment notes
FREE_TEXT = re.compile(r"<!--\s*hivedlab:free-text\s+deploy\s*-->(.*?)<!--\s*/hivedlab:free-text\s*-->", re.S)
_MARKUP = re.compile(r"<!--.*?-->|<br\s*/?>|&nbsp;|[\s>*_#|`-]+", re.S)
# the template's default text in that block (`hivedlab.checker.report`) and the manual's prompt: not the
# students' words
PLACEHOLDERS = ("（在此填写。）", "(Write here.)", "简述部署中遇到的问题以及相应的解决方案。",
                "Briefly describe the problems you met during deployment and how you solved them.")


@dataclass(frozen=True)
class ExperimentFiles:
    id: str
    evidence: str | None  # group-folder-relative path of a readable evidence.jsonl
    evidence_path: Path | None  # its resolved path (inside the group folder)
    verdicts: Mapping[str, Any] | None
    job_files: tuple[str, ...]
    member: str = ""  # the user whose turn this run is (`experiments/<id>/<user>/`); "" for the experiment's own run
    # every run of the experiment when members took turns (docs/evidence.md), its own run first; this object's fields
    # are then those of the first of them
    turns: tuple[ExperimentFiles, ...] = ()


@dataclass(frozen=True)
class Submission:
    name: str
    folder: GroupFolder
    base: str  # the run directory relative to the group folder: "" or e.g. "out/"
    record: RunRecord | None  # run.json, when it is a JSON object
    inventory: Inventory | None
    env: Mapping[str, EnvRecord]  # by file stem
    hived_nodes: Mapping[str, frozenset[str]]  # HiveD config name -> cell addresses in it
    experiments: tuple[ExperimentFiles, ...]
    report_md: str | None
    claims: Any
    problems: tuple[GradeFinding, ...] = field(default=())

    def experiment(self, experiment_id: str) -> ExperimentFiles | None:
        return next((exp for exp in self.experiments if exp.id == experiment_id), None)

    @property
    def hostnames(self) -> frozenset[str] | None:
        """The group's machines: its inventory's hostnames, and the simulated workers of the manual's hardware when
        run.json says a simulated experiment ran on it (`hardware`, docs/architecture.md)."""
        if self.inventory is None:
            return None
        own = frozenset(m.hostname for m in self.inventory.members if m.hostname)
        record = self.record or RunRecord()
        manual = record.cluster == "sim" and any(entry.get("on") == "manual" for entry in record.hardware.values())
        return own | frozenset(SIM_WORKERS) if manual else own

    @property
    def allowed_nodes(self) -> frozenset[str] | None:
        """Nodes a log may name: in the inventory and in the HiveD configs (whichever of the two is there)."""
        hostnames = self.hostnames
        addresses = frozenset().union(*self.hived_nodes.values()) if self.hived_nodes else None
        if hostnames is not None and addresses is not None:
            return hostnames & addresses
        return hostnames if hostnames is not None else addresses


class _Reader:
    def __init__(self, folder: GroupFolder, base: str) -> None:
        self.folder = folder
        self.base = base
        self.problems: list[GradeFinding] = []

    def problem(self, code: str, en: str, zh: str, file: str = "", experiment: str | None = None) -> None:
        self.problems.append(GradeFinding("problem", code, en, zh, file, None, experiment))

    def text(self, rel: str, cap: int, required: bool = True) -> str | None:
        path = self.base + rel
        if not self.folder.exists(path):
            if required:
                self.problem("missing-file", f"{path} is missing", f"缺少 {path}", path)
            return None
        try:
            return self.folder.read_text(path, cap)
        except UnsafeFile as exc:
            self.problem(f"unsafe-{exc.code}", f"{path}: {exc.reason}", f"{path}：{_zh_reason(exc.code)}", path)
            return None

    def parsed(self, rel: str, kind: str, required: bool = True) -> Any:
        text = self.text(rel, SMALL_FILE_BYTES, required)
        if text is None:
            return None
        path = self.base + rel
        try:
            return json.loads(text) if kind == "json" else safe_load(text)
        except (ValueError, yaml.YAMLError, RecursionError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.problem("unparsable", f"{path}: not valid {kind.upper()} ({first})",
                         f"{path}：不是合法的 {kind.upper()}", path)
            return None


def _zh_reason(code: str) -> str:
    return {
        "symlink-outside": "指向组目录之外的符号链接，已拒绝读取",
        "not-a-file": "不是普通文件，已拒绝读取",
        "too-large": "文件过大，已拒绝读取",
        "not-utf8": "不是 UTF-8 文本",
        "missing": "缺失",
    }.get(code, "无法读取")


def deployment_text(report_md: str) -> str | None:
    """The students' own text in the deployment section, markup removed; None when report.md has no markers."""
    match = FREE_TEXT.search(report_md)
    if match is None:
        return None
    text = match.group(1)
    for placeholder in PLACEHOLDERS:
        text = text.replace(placeholder, "")
    return _MARKUP.sub(" ", text).strip()


# Markdown formatting around the students' words (comments, line breaks, list and heading marks, emphasis); unlike
# _MARKUP it keeps the hyphens inside words such as job-config-6
_FORMATTING = re.compile(r"<!--.*?-->|<br\s*/?>|&nbsp;|^[ \t]*(?:[-*+>]|#+|\d+\.)[ \t]+|[*_`|]", re.S | re.M)
_BLOCK = re.compile(r"<!--\s*hivedlab:free-text\s+([A-Za-z0-9][A-Za-z0-9_.-]*)\s*-->(.*?)"
                    r"<!--\s*/hivedlab:free-text\s*-->", re.S)


def free_text(report_md: str, prefix: str) -> dict[str, str]:
    """The students' own text in the free-text blocks named `prefix` + id, id -> text (markup and placeholders
    removed; "" when the block holds only the template's default)."""
    found = {}
    for match in _BLOCK.finditer(report_md):
        if match.group(1).startswith(prefix):
            text = match.group(2)
            for placeholder in PLACEHOLDERS:
                text = text.replace(placeholder, "")
            found[match.group(1)[len(prefix):]] = " ".join(_FORMATTING.sub(" ", text).split())
    return found


def find_run_dir(folder: GroupFolder) -> str:
    """'' when run.json is at the top of the group folder, else the one sub-folder (or sub-sub-folder) holding it."""
    if folder.exists(RUN_RECORD):
        return ""
    found = []
    for name in folder.list_dir():
        if folder.is_dir(name):
            if folder.exists(f"{name}/{RUN_RECORD}"):
                found.append(f"{name}/")
            else:
                found += [f"{name}/{sub}/" for sub in folder.list_dir(name)
                          if folder.is_dir(f"{name}/{sub}") and folder.exists(f"{name}/{sub}/{RUN_RECORD}")]
    return found[0] if len(found) == 1 else ""


def _addresses(config: Any) -> frozenset[str]:
    """Every cellAddress in a HiveD config's physicalCells tree (node names are among them)."""
    found: set[str] = set()
    stack = list(config.get("physicalCells") or []) if isinstance(config, Mapping) else []
    physical = config.get("physicalCluster") if isinstance(config, Mapping) else None
    if isinstance(physical, Mapping) and isinstance(physical.get("physicalCells"), list):
        stack += physical["physicalCells"]
    budget = MAX_WALK_NODES
    while stack and budget > 0:
        budget -= 1
        cell = stack.pop()
        if not isinstance(cell, Mapping):
            continue
        if isinstance(cell.get("cellAddress"), (str, int)):
            found.add(str(cell["cellAddress"]))
        if isinstance(cell.get("cellChildren"), list):
            stack += cell["cellChildren"]
    return frozenset(found)


def read_submission(root: Path, name: str | None = None, max_bytes: int | None = None) -> Submission:
    """Read a group's folder; never raises on its content (problems are findings)."""
    folder = GroupFolder(root) if max_bytes is None else GroupFolder(root, max_bytes)
    base = find_run_dir(folder)
    reader = _Reader(folder, base)
    for rel in dict.fromkeys(("", base.rstrip("/"))):
        count = folder.overfull(rel)
        if count is not None:
            shown = rel or "."
            more = "at least " if count >= MAX_LISTED else ""
            reader.problem("folder-too-big",
                           f"{shown}/ holds {more}{count} entries (a run directory holds a few dozen): "
                           f"only the run's own files were read", f"{shown}/ 中有{'至少' if more else ''} {count} 项"
                           "（运行目录只有几十个文件）：只读取了运行本身的文件", rel)
    for link in folder.escaping_symlinks():
        reader.problem("unsafe-symlink-outside", f"{link}: a symlink that leads outside the group folder (not read)",
                       f"{link}：指向组目录之外的符号链接（未读取）", link)
    run = reader.parsed(RUN_RECORD, "json")
    if run is not None and not isinstance(run, Mapping):
        reader.problem("bad-run-json", f"{base}{RUN_RECORD} is not a JSON object",
                       f"{base}{RUN_RECORD} 不是 JSON 对象", base + RUN_RECORD)
        run = None
    inventory = None
    raw_inventory = reader.parsed(INVENTORY, "yaml")
    if raw_inventory is not None:
        try:
            inventory = inventory_from_mapping(raw_inventory, base + INVENTORY, strict=False)
        except HivedlabError as exc:
            reader.problem("bad-inventory", str(exc), f"{base}inventory.yaml 不是有效的小组清单",
                           base + INVENTORY)
    env: dict[str, EnvRecord] = {}
    for entry in _capped(reader, ENV, MAX_PARTS):
        if entry.endswith(".json"):
            record = env_record_from_json(reader.parsed(f"{ENV}/{entry}", "json"))
            if record is not None:
                env[entry[: -len(".json")]] = record
    hived_nodes: dict[str, frozenset[str]] = {}
    for entry in _capped(reader, HIVED_CONFIGS, MAX_PARTS):
        if entry.endswith((".yaml", ".yml")):
            data = reader.parsed(f"{HIVED_CONFIGS}/{entry}", "yaml")
            if isinstance(data, Mapping):
                hived_nodes[entry.rsplit(".", 1)[0]] = _addresses(data)
    users = inventory.users if inventory else ()
    experiments = tuple(_read_experiment_runs(reader, exp, users)
                        for exp in _capped(reader, EXPERIMENTS, MAX_PARTS)
                        if folder.is_dir(f"{base}{EXPERIMENTS}/{exp}"))
    report_md = reader.text(REPORT_MD, REPORT_BYTES)
    if report_md is not None and deployment_text(report_md) is None:
        reader.problem("report-not-template", f"{base}report.md is not the hivedlab report template (no free-text "
                       "markers): was it rewritten by hand?",
                       f"{base}{REPORT_MD} 不是 hivedlab 报告模板（没有自由文本标记）", base + REPORT_MD)
    claims = reader.parsed(CLAIMS, "json")
    return Submission(
        name=name or root.name,
        folder=folder,
        base=base,
        record=RunRecord.from_json(run) if run is not None else None,
        inventory=inventory,
        env=env,
        hived_nodes=hived_nodes,
        experiments=experiments,
        report_md=report_md,
        claims=claims,
        problems=tuple(reader.problems),
    )


def _capped(reader: _Reader, rel: str, limit: int) -> list[str]:
    entries = reader.folder.list_dir(reader.base + rel)
    if len(entries) > limit:
        reader.problem("too-many-files", f"{reader.base}{rel}/ holds {len(entries)} entries; only the first {limit} "
                       "are read", f"{reader.base}{rel}/ 中有 {len(entries)} 项，只读取前 {limit} 项",
                       reader.base + rel)
    return entries[:limit]


def _holds_run(reader: _Reader, rel: str) -> bool:
    return any(reader.folder.exists(f"{reader.base}{rel}/{name}") for name in (EVIDENCE, VERDICTS))


def _read_experiment_runs(reader: _Reader, exp: str, users: tuple[str, ...]) -> ExperimentFiles:
    """An experiment folder: its own run, and each member's turn in a sub-folder (inventory order first)."""
    rel = f"{EXPERIMENTS}/{exp}"
    found = [name for name in reader.folder.list_dir(reader.base + rel)[:MAX_PARTS]
             if reader.folder.is_dir(f"{reader.base}{rel}/{name}") and _holds_run(reader, f"{rel}/{name}")]
    members = [u for u in users if u in found] + sorted(u for u in found if u not in users)
    own = [_read_experiment(reader, exp)] if _holds_run(reader, rel) or not members else []
    runs = own + [_read_experiment(reader, exp, member) for member in members]
    return replace(runs[0], turns=tuple(runs)) if members else runs[0]


def _read_experiment(reader: _Reader, exp: str, member: str = "") -> ExperimentFiles:
    folder, base = reader.folder, reader.base
    run = f"{exp}/{member}" if member else exp
    rel = f"{EXPERIMENTS}/{run}/{EVIDENCE}"
    path = base + rel
    evidence_path: Path | None = None
    if not folder.exists(path):
        reader.problem("missing-evidence", f"{path} is missing", f"缺少证据日志 {path}", path, exp)
    else:
        try:
            evidence_path = folder.checked_path(path)
        except UnsafeFile as exc:
            reader.problem(f"unsafe-{exc.code}", f"{path}: {exc.reason}", f"{path}：{_zh_reason(exc.code)}", path, exp)
    verdicts = reader.parsed(f"{EXPERIMENTS}/{run}/{VERDICTS}", "json", required=False)
    jobs = tuple(f"{base}{JOBS}/{run}/{name}" for name in folder.list_dir(f"{base}{JOBS}/{run}")
                 if name.endswith((".yaml", ".yml")))
    return ExperimentFiles(
        id=exp,
        evidence=path if evidence_path else None,
        evidence_path=evidence_path,
        verdicts=verdicts if isinstance(verdicts, Mapping) else None,
        job_files=jobs,
        member=member,
    )
