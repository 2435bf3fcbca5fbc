"""`validate_paths`: walk the inputs, read each file within bounds, tell its kind by content, run its checks.

A file under a folder named `rejected/` (found by walking a folder) is a job that is meant to be refused: its errors
are expected and reported as notes, and it is an error if it is accepted after all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hivedlab.basics.resources import HIVED_CONFIGS
from hivedlab.checker.validate.hived import check_addresses, check_hived_config, check_services_config
from hivedlab.checker.validate.inventory import check_inventory
from hivedlab.checker.validate.jobs import HivedTarget, check_job, prepare_target
from hivedlab.checker.validate.kubeflow import SCHEMA_FILES, check_manifests
from hivedlab.checker.validate.plan import check_plan, looks_like_plan
from hivedlab.checker.validate.validation_findings import ERROR, NOTE, WARNING, Report, ValidationFinding
from hivedlab.models.kubeflow.manifests import ManifestError, looks_like_manifests, parse_manifests
from hivedlab.models.openpai.js_yaml import YamlError, parse_yaml

SHIPPED_HIVED_CONFIGS = HIVED_CONFIGS
MAX_FILE_BYTES = 1024 * 1024
MAX_FILES = 20_000
YAML_SUFFIXES = (".yaml", ".yml")
SKIP_DIRS = {"templates", "node_modules", "__pycache__"}
REJECTED_DIR = "rejected"


class InputError(Exception):
    """An input that cannot be used at all (e.g. a --hived-config that cannot be read): exit status 2."""


@dataclass(frozen=True)
class _Input:
    path: Path
    walked: bool  # found by walking a folder (not named on the command line)
    expect_rejection: bool


def kind_of(data: Any) -> str | None:
    """job | hived | services | inventory | plan, by content; None for anything else."""
    if not isinstance(data, Mapping):
        return None
    if "protocolVersion" in data:
        return "job"
    if "hivedscheduler" in data:
        return "services"
    if "physicalCluster" in data or "virtualClusters" in data:
        return "hived"
    if "members" in data:
        return "inventory"
    return "plan" if looks_like_plan(data) else None


def _expand(paths: Sequence[str | Path]) -> tuple[list[_Input], list[ValidationFinding]]:
    inputs: list[_Input] = []
    problems: list[ValidationFinding] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for found in _walk(path, problems):
                rejected = REJECTED_DIR in found.relative_to(path).parts[:-1] or path.name == REJECTED_DIR
                inputs.append(_Input(found, True, rejected))
                if len(inputs) > MAX_FILES:
                    problems.append(ValidationFinding("input-unreadable", ERROR, str(path), 0, 0, "",
                                            f"more than {MAX_FILES} YAML files; validate fewer at a time"))
                    return inputs[:MAX_FILES], problems
        elif path.is_file() and path.suffix == ".j2":
            problems.append(ValidationFinding("file-kind", WARNING, str(path), 0, 0, "",
                                              "a Jinja2 template, not validated: "
                                    "render it first (hivedlab scheduler-config) and validate the result"))
        elif path.is_file():
            inputs.append(_Input(path, False, False))
        else:
            reason = "no such file or folder" if not path.exists() else "not a regular file"
            problems.append(ValidationFinding("input-unreadable", ERROR, str(path), 0, 0, "",
                                              f"cannot read {path}: {reason}"))
    return inputs, problems


def _walk(folder: Path, problems: list[ValidationFinding]) -> Iterable[Path]:
    def on_error(exc: OSError) -> None:
        problems.append(ValidationFinding("input-unreadable", ERROR, str(exc.filename or folder), 0, 0, "",
                                f"cannot read {exc.filename or folder}: {exc.strerror or exc}"))

    for here, dirs, files in os.walk(folder, onerror=on_error):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        for name in sorted(files):
            if name.endswith(YAML_SUFFIXES) and not name.startswith("."):
                yield Path(here) / name


def _read(path: Path) -> tuple[str | None, int, ValidationFinding | None, bool]:
    """(text, size, finding, unreadable) with the size bound checked before reading."""
    name = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return None, size, ValidationFinding("file-too-large", ERROR, name, 0, 0, "", f"{size} bytes is over the "
                                       f"{MAX_FILE_BYTES}-byte limit for a config or job; not read"), False
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return None, 0, ValidationFinding("input-unreadable", ERROR, name, 0, 0, "",
                                f"cannot read {name}: {exc.strerror or exc}"), True
    if b"\0" in raw:
        return None, len(raw), ValidationFinding("file-binary", ERROR, name, 0, 0, "",
                                                 "a binary file, not YAML text"), False
    try:
        return raw.decode("utf-8-sig"), len(raw), None, False
    except UnicodeDecodeError as exc:
        return None, len(raw), ValidationFinding("file-binary", ERROR, name, 0, 0, "",
                                       f"not UTF-8 text (byte {exc.start}); save it as UTF-8"), False


def load_targets(hived_configs: Sequence[str | Path] | None) -> list[HivedTarget]:
    """The HiveD configs jobs are checked against: the given files, or every shipped configs/hived/*.yaml."""
    paths = [Path(p) for p in hived_configs] if hived_configs else sorted(SHIPPED_HIVED_CONFIGS.glob("*.yaml"))
    targets = []
    for path in paths:
        text, _, finding, _ = _read(path)
        if text is None:
            raise InputError(f"--hived-config {path}: {finding.message if finding else 'cannot read'}")
        try:
            data = parse_yaml(text).data
        except YamlError as exc:
            raise InputError(f"--hived-config {path}:{exc.line}:{exc.col}: {exc.message}") from None
        kind = kind_of(data)
        if kind == "services":
            section = data.get("hivedscheduler")
            config = section.get("config") if isinstance(section, Mapping) else None
            try:
                data = parse_yaml(config).data if isinstance(config, str) else None
            except YamlError as exc:
                raise InputError(f"--hived-config {path}: hivedscheduler.config: {exc.message}") from None
        elif kind != "hived":
            raise InputError(f"--hived-config {path}: not a HiveD config (no physicalCluster/virtualClusters) nor a "
                             "services-configuration.yaml with hivedscheduler.config")
        if not isinstance(data, Mapping):
            raise InputError(f"--hived-config {path}: hivedscheduler.config holds no HiveD config")
        targets.append(prepare_target(path.name, data))
    return targets


def validate_paths(
    paths: Sequence[str | Path],
    hived_configs: Sequence[str | Path] | None = None,
    strict: bool = False,
    user: str = "admin",
    as_walk: bool = False,
    inventory: str | Path | None = None,
) -> Report:
    """Validate files and folders; raises InputError only for an unusable --hived-config (or --inventory).

    `as_walk`: treat named files as if a folder walk had found them (YAML of unknown kind skipped, files under a
    rejected/ folder expected to be refused), for pre-commit, which names every changed file. With an inventory
    (`inventory`, or one among the files) each HiveD config's node addresses are checked against its workers.
    """
    del strict  # the verdict is the caller's: Report.exit_code(strict)
    inputs, findings = _expand(paths)
    group = _group_workers(inventory, inputs)
    unreadable = any(f.rule == "input-unreadable" for f in findings)
    cache: list[list[HivedTarget]] = [load_targets(hived_configs)] if hived_configs else []

    def targets() -> list[HivedTarget]:  # loaded on the first job only
        if not cache:
            cache.append(load_targets(hived_configs))
        return cache[0]

    files, kinds = [], {}
    for item in inputs:
        if as_walk and not item.walked:
            item = _Input(item.path, True, REJECTED_DIR in item.path.parts[:-1])
        name = str(item.path)
        text, size, problem, cannot = _read(item.path)
        files.append(name)
        if problem is not None:
            findings.append(problem)
            unreadable = unreadable or cannot
            continue
        assert text is not None
        found, kind = _validate_text(text, size, name, item, targets, user, group)
        if kind:
            kinds[name] = kind
        if item.expect_rejection:
            found = _expected(found, name)
        findings.extend(found)
    return Report(tuple(findings), tuple(files), unreadable, kinds)


def _expected(found: list[ValidationFinding], name: str) -> list[ValidationFinding]:
    errors = [f for f in found if f.severity == ERROR]
    if not errors:
        return found + [ValidationFinding("expected-rejection", ERROR, name, 0, 0, "",
                                          "this file is under a rejected/ folder, "
                                "so it is meant to be refused, but it passes: fix it or move it out")]
    return [ValidationFinding(f.rule, NOTE, f.file, f.line, f.col, f.pointer,
                              "expected rejection: " + _without_fix(f.message))
            if f.severity == ERROR else f for f in found]


def _without_fix(message: str) -> str:
    """A refusal without the fix hint that follows it (`… (HTTP 400 Code): ask for fewer cells…`): a file under
    rejected/ is meant to be refused, so there is nothing to fix."""
    return re.sub(r"(\(HTTP [^)]*\)): .*$", r"\1", message, flags=re.DOTALL)


def _validate_manifests(text: str, name: str, walked: bool) -> tuple[list[ValidationFinding], str | None]:
    """Kubernetes manifests (TFJob, PodGroup), several YAML documents to a file as kubectl takes them. Found by a
    folder walk, a file of other Kubernetes objects only (a Deployment, a Service) is not ours to judge."""
    try:
        manifests = parse_manifests(text)
    except ManifestError as exc:
        return [ValidationFinding("yaml-syntax", ERROR, name, exc.line, exc.col, "", exc.message)], None
    if walked and not any(kind in SCHEMA_FILES for kind in manifests.kinds()):
        return [], None
    return check_manifests(manifests, name), "manifests"


def _group_workers(inventory: str | Path | None, inputs: Sequence[_Input]) -> tuple[tuple[str, ...], str]:
    """The worker hostnames of the inventory given (--inventory, else the first inventory among the files) and its
    name; none without one."""
    candidates = [Path(inventory)] if inventory else [item.path for item in inputs if not item.walked]
    for path in candidates:
        text, _size, problem, _cannot = _read(path)
        if text is None:
            if inventory:
                raise InputError(f"--inventory {path}: {problem.message if problem else 'cannot read'}")
            continue
        try:
            data = parse_yaml(text).data
        except YamlError as exc:
            if inventory:
                raise InputError(f"--inventory {path}:{exc.line}:{exc.col}: {exc.message}") from None
            continue
        if kind_of(data) == "inventory":
            members = data.get("members")
            return tuple(str(m["hostname"]) for m in members if isinstance(m, Mapping) and m.get("hostname")
                         and "worker" in (m.get("roles") or ())), str(path)
        if inventory:
            raise InputError(f"--inventory {path}: not a group inventory (no members)")
    return (), ""


def _validate_text(text: str, size: int, name: str, item: _Input, targets: Callable[[], list[HivedTarget]],
                   user: str, group: tuple[tuple[str, ...], str]) -> tuple[list[ValidationFinding], str | None]:
    if not text.strip():
        return [ValidationFinding("file-empty", WARNING, name, 0, 0, "", "empty file: nothing to validate")], None
    if looks_like_manifests(text):
        return _validate_manifests(text, name, item.walked)
    try:
        parsed = parse_yaml(text)
    except YamlError as exc:
        return [ValidationFinding("yaml-syntax", ERROR, name, exc.line, exc.col, "", exc.message)], None
    data = parsed.data
    kind = kind_of(data)
    dialect = [ValidationFinding("yaml-dialect", WARNING, name, n.line, n.col, n.pointer,
                                 n.message) for n in parsed.dialect]
    if kind is None:
        if data is None:
            return [ValidationFinding("file-empty", WARNING, name, 1, 1, "",
                                      "the document is empty: nothing to validate")], None
        shape = "a mapping" if isinstance(data, Mapping) else "a list" if isinstance(data, list) else "a single value"
        if item.walked and isinstance(data, Mapping):
            return [], None  # some other YAML (a CI workflow...): not ours to judge
        severity = WARNING if item.walked else ERROR
        return [ValidationFinding("file-kind", severity, name, 1, 1, "",
                                  f"the top level is {shape}, not a job (protocolVersion)"
                        ", a HiveD config (physicalCluster/virtualClusters), a services configuration "
                        "(hivedscheduler), an inventory (members) or an experiment plan (steps, rules)")], None
    if kind == "plan":
        return check_plan(text, name), "plan"
    if kind == "job":
        return dialect + check_job(data, parsed.positions, name, targets(), user, size), "job"
    if kind == "hived":
        return dialect + check_hived_config(data, parsed.positions, name) + check_addresses(
            data, parsed.positions, name, *group), "hived"
    if kind == "services":
        found, _config = check_services_config(data, parsed.positions, name, text)
        return dialect + found, "services"
    return dialect + check_inventory(data, parsed.positions, name), "inventory"
