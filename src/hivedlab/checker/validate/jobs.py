"""Job-protocol checks: the rest-server's verdict (schema, semantic checks, HiveD checks against each candidate HiveD
config, submission crashes), then warnings for what it accepts but is likely wrong."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hivedlab.checker.validate.validation_findings import ERROR, NOTE, WARNING, ValidationFinding, locate
from hivedlab.models.openpai import hived_spec, js_yaml, protocol

MAX_BODY_BYTES = 100 * 1024
_HIVED_KEYS = ("jobPriorityClass", "taskRoles", "lazyPreemptionEnable", "gangReleaseEnable", "ignoreK8sSuggestedNodes")
_HIVED_ROLE_KEYS = ("skuType", "pinnedCellId", "affinityGroupName", "skuNum")
_EXTRAS_KEYS = ("gangAllocation", "hivedScheduler", "submitFrom", "com.microsoft.pai.runtimeplugin", "storages")


@dataclass(frozen=True)
class HivedTarget:
    """A HiveD config a job is checked against, prepared once per run."""

    name: str  # shown in messages (the file name)
    config: Mapping[str, Any]  # the bare HiveD config
    leaf_cells: Mapping[str, Mapping[str, int]]  # VC -> leaf type -> leaf cells
    pinned: Mapping[str, frozenset[str]]  # VC -> its pinned cell ids
    pod_max: Mapping[str, Mapping[str, int]]  # VC ("" = whole cluster) -> leaf type -> most leaf cells one pod can get


def prepare_target(name: str, config: Mapping[str, Any]) -> HivedTarget:
    vcs = config.get("virtualClusters") if isinstance(config, Mapping) else None
    pinned = {}
    for vc, spec in (vcs.items() if isinstance(vcs, Mapping) else ()):
        cells = spec.get("pinnedCells") if isinstance(spec, Mapping) else None
        pinned[str(vc)] = frozenset(str(c.get("pinnedCellId")) for c in cells or [] if isinstance(c, Mapping))
    return HivedTarget(name, config, hived_spec.vc_leaf_cells(config), pinned, _pod_max(config))


def _pod_max(config: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """A pod runs on one node: at most a node's leaf cells, or a smaller preassigned VC cell's
    (docs/hived-config-and-cells.md#the-vc-view)."""
    physical = config.get("physicalCluster") if isinstance(config, Mapping) else None
    types = physical.get("cellTypes") if isinstance(physical, Mapping) else None
    types = {str(k): v for k, v in types.items() if isinstance(v, Mapping)} if isinstance(types, Mapping) else {}
    cells = physical.get("physicalCells") if isinstance(physical, Mapping) else None
    chains = {str(c.get("cellType")) for c in cells if isinstance(c, Mapping)} if isinstance(cells, list) else set()

    def below(chain: str) -> list[str]:  # the chain's types, top first
        out = [chain]
        while out[-1] in types and len(out) < 64:
            out.append(str(types[out[-1]].get("childCellType")))
        return out

    def node_cap(chain: str, cell_type: str) -> int:
        levels = below(chain)
        nodes = [t for t in levels if t in types and types[t].get("isNodeLevel") is True]
        node = nodes[-1] if nodes else chain
        top = cell_type if cell_type in levels and levels.index(cell_type) > levels.index(node) else node
        return hived_spec.leaf_of(top, types)[1]

    result: dict[str, dict[str, int]] = {"": {}}
    for chain in chains:
        leaf = below(chain)[-1]
        result[""][leaf] = max(result[""].get(leaf, 0), node_cap(chain, chain))
    vcs = config.get("virtualClusters") if isinstance(config, Mapping) else None
    for vc, spec in (vcs.items() if isinstance(vcs, Mapping) else ()):
        caps: dict[str, int] = {}
        entries = spec.get("virtualCells") if isinstance(spec, Mapping) else None
        for entry in entries if isinstance(entries, list) else []:
            path = str(entry.get("cellType", "")).split(".") if isinstance(entry, Mapping) else [""]
            if path[0] in chains:
                leaf = below(path[0])[-1]
                caps[leaf] = max(caps.get(leaf, 0), node_cap(path[0], path[-1]))
        result[str(vc)] = caps
    return result


class _Out:
    """Collects findings for one file, placing each at its key."""

    def __init__(self, file: str, positions: Mapping[str, tuple[int, int]]) -> None:
        self.file, self.positions = file, positions
        self.items: list[ValidationFinding] = []

    def add(self, rule: str, severity: str, pointer: str, message: str) -> None:
        line, col = locate(self.positions, pointer)
        self.items.append(ValidationFinding(rule, severity, self.file, line, col, pointer, message))


def check_job(
    data: Mapping[str, Any],
    positions: Mapping[str, tuple[int, int]],
    file: str,
    targets: Sequence[HivedTarget],
    user: str = "admin",
    size: int = 0,
) -> list[ValidationFinding]:
    """Every finding for one job protocol; errors exactly where the rest-server refuses it."""
    out = _Out(file, positions)
    if size > MAX_BODY_BYTES:
        out.add("job-body-too-large", ERROR, "", f"the job is {size} bytes; the rest-server accepts at most "
                f"{MAX_BODY_BYTES} bytes (HTTP 413): shorten it")
    issues = protocol.schema_issues(data)
    for issue in issues:
        rule = "job-hived-schema" if issue.stage == protocol.STAGE_HIVED_SCHEMA else "job-schema"
        out.add(rule, ERROR, issue.pointer, issue.message)
    if any(i.stage == protocol.STAGE_SCHEMA for i in issues):
        return out.items
    semantic = protocol.semantic_issues(data)
    for issue in semantic:
        out.add("job-semantic", ERROR, issue.pointer, issue.message + _semantic_hint(issue.message))
    _warnings(data, out)
    if semantic or issues:
        return out.items
    _check_hived(data, out, targets, user)
    return out.items


def _semantic_hint(message: str) -> str:
    if message.startswith("Prerequisite "):
        return " Add a prerequisite of that type and name, or fix the reference."
    if message.startswith("Duplicate "):
        return " Give each one its own name."
    return ""


def _check_hived(data: Mapping[str, Any], out: _Out, targets: Sequence[HivedTarget], user: str) -> None:
    vc = hived_spec.js_get(data, "defaults", "virtualCluster", default="default")
    candidates = [t for t in targets if vc in t.leaf_cells]
    if not targets:
        out.add("job-unknown-vc", ERROR, "/defaults/virtualCluster" if "defaults" in data else "",
                "no HiveD config to check the job against: pass --hived-config FILE (a HiveD config or "
                "services-configuration.yaml)")
        return
    if not candidates:
        names = ", ".join(t.name for t in targets)
        known = sorted({v for t in targets for v in t.leaf_cells})
        close = difflib.get_close_matches(str(vc), known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else f"; known VCs: {', '.join(known) or 'none'}"
        if vc == "default":
            out.add("job-unknown-vc", ERROR, "/defaults/virtualCluster" if "defaults" in data else "",
                    f"VC 'default' is not defined in any HiveD config ({names}){hint}. The rest-server accepts the "
                    "job (every user has 'default'), but HiveD refuses its pods: 'VC default does not exists!'")
            return
        out.add("job-unknown-vc", ERROR, "/defaults/virtualCluster",
                f"VC '{vc}' is not defined in any HiveD config ({names}){hint}. The rest-server answers 403 "
                f"ForbiddenUserError: User {user} is not allowed to do operation in {vc}")
        return
    verdicts = []
    for target in candidates:
        plan = hived_spec.plan_hived(data, user, target.config, target.leaf_cells)
        problems = list(plan.problems)
        crash = hived_spec.dump_crash(plan.specs) if not problems else None
        if crash is not None:
            problems.append(crash)
        verdicts.append((target, plan, problems))
    accepted = [v for v in verdicts if not v[2]]
    for target, _plan, problems in verdicts:
        for problem in problems:
            severity = ERROR if not accepted else NOTE
            prefix = f"[{target.name}] " if len(candidates) > 1 else ""
            if accepted:
                prefix = (f"accepted with {accepted[0][0].name}; with {target.name} the rest-server would refuse it: ")
            skus = ", ".join(hived_spec.resource_units(target.config))
            out.add(_problem_rule(problem), severity, problem.pointer, prefix + _problem_text(problem, skus))
    for target, plan, _ in accepted:
        _plan_warnings(data, plan, target, out, len(candidates) > 1)


def _problem_rule(problem: hived_spec.Problem) -> str:
    if problem.stage == "submit":
        return "job-instances"
    return "job-quota" if problem.message.startswith("Job requests") else "job-hived"


def _problem_text(problem: hived_spec.Problem, skus: str) -> str:
    head = f"{problem.message} (HTTP {problem.status}{' ' + problem.code if problem.code else ''})"
    if problem.stage == "submit":
        return head + ": a gang job needs 'instances' on every task role; add instances: 1"
    if problem.message.startswith("Cannot read property"):
        return head + f": the rest-server crashes on a skuType the cluster does not have; use one of: {skus}"
    if problem.message.startswith("Job requests"):
        return head + ": ask for fewer cells, or set extras.gangAllocation: false to run it incrementally"
    return head


def _plan_warnings(data: Mapping[str, Any], plan: hived_spec.HivedPlan, target: HivedTarget, out: _Out,
                   tag: bool) -> None:
    prefix = f"[{target.name}] " if tag else ""
    for role, spec in plan.specs.items():
        base = f"/taskRoles/{js_yaml.escape(role)}"
        if spec["leafCellNumber"] == 0:
            out.add("job-never-scheduled", WARNING, base + "/resourcePerInstance",
                    prefix + "gpu, cpu and memoryMB are all 0, so leafCellNumber is 0: HiveD refuses the pod "
                    "('LeafCellNumber is non-positive') and the job waits forever; request at least one resource")
        _check_fits(data, role, spec, plan, target, out, prefix)
        pinned = spec.get("pinnedCellId")
        if pinned is not None and plan.opportunistic:
            out.add("job-never-scheduled", WARNING, f"/extras/hivedScheduler/taskRoles/{role}/pinnedCellId",
                    prefix + f"an opportunistic job cannot use pinned cell {pinned}: HiveD refuses the pod")
        elif pinned is not None and pinned not in target.pinned.get(plan.virtual_cluster, frozenset()):
            out.add("job-never-scheduled", WARNING, f"/extras/hivedScheduler/taskRoles/{role}/pinnedCellId",
                    prefix + f"VC {plan.virtual_cluster} does not have pinned cell {pinned}: HiveD refuses the pod")


def _check_fits(data: Mapping[str, Any], role: str, spec: Mapping[str, Any], plan: hived_spec.HivedPlan,
                target: HivedTarget, out: _Out, prefix: str) -> None:
    """A pod that needs more leaf cells than one node of its VC holds waits forever (pinned cells not considered)."""
    cells = spec.get("leafCellNumber")
    if not isinstance(cells, int) or cells <= 1 or spec.get("pinnedCellId") is not None:
        return
    caps = target.pod_max.get("" if plan.opportunistic else plan.virtual_cluster, {})
    sku = spec.get("leafCellType")
    cap = caps.get(sku, 0) if sku is not None else max(caps.values(), default=0)
    if not caps or cells <= cap:
        return
    units = hived_spec.resource_units(target.config)
    unit = units.get(sku) if sku is not None else next(iter(plan.vc.cell_units.values()), None)
    per_cell = f" (one cell = gpu {unit.gpu:g}, cpu {unit.cpu:g}, memoryMB {unit.memory:g})" if unit else ""
    where = "any node of the cluster" if plan.opportunistic else f"a node of VC {plan.virtual_cluster}"
    out.add("job-never-scheduled", WARNING, f"/taskRoles/{js_yaml.escape(role)}/resourcePerInstance",
            prefix + f"each pod of task role {role} needs {cells} leaf cells{per_cell}, but {where} holds at most "
            f"{cap}: HiveD can never place it and the job waits forever; lower gpu, cpu and memoryMB to fit {cap}")


def _warnings(data: Mapping[str, Any], out: _Out) -> None:
    raw_extras = data.get("extras")
    extras: Mapping[str, Any] = raw_extras if isinstance(raw_extras, Mapping) else {}
    if "gangAllocation" in extras and not isinstance(extras["gangAllocation"], bool):
        out.add("job-gang-allocation", WARNING, "/extras/gangAllocation",
                f"gangAllocation is {extras['gangAllocation']!r}, not a boolean: HiveD then schedules the job "
                "incrementally while the Framework treats it as gang "
                "(docs/openpai-model.md#gang-allocation-and-affinity-groups); write true or false")
    _unknown_keys(extras, _EXTRAS_KEYS, "/extras", out, "extras")
    hived = extras.get("hivedScheduler")
    if isinstance(hived, Mapping):
        _unknown_keys(hived, _HIVED_KEYS, "/extras/hivedScheduler", out, "extras.hivedScheduler")
        for role, spec in (hived.get("taskRoles") or {}).items() if isinstance(hived.get("taskRoles"), Mapping) else ():
            if isinstance(spec, Mapping):
                _unknown_keys(spec, _HIVED_ROLE_KEYS, f"/extras/hivedScheduler/taskRoles/{js_yaml.escape(role)}",
                              out, "a HiveD task role")
                if "skuNum" in spec:
                    out.add("job-unknown-key", NOTE, f"/extras/hivedScheduler/taskRoles/{js_yaml.escape(role)}/skuNum",
                            "skuNum is ignored by the rest-server: the number of cells comes from resourcePerInstance")
    for role, spec in (data.get("taskRoles") or {}).items():
        resources = spec.get("resourcePerInstance") if isinstance(spec, Mapping) else None
        for key, value in (resources or {}).items() if isinstance(resources, Mapping) else ():
            if key != "ports" and isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
                out.add("job-resources", WARNING, f"/taskRoles/{js_yaml.escape(role)}/resourcePerInstance/{key}",
                        f"{key} is negative ({value}); the rest-server accepts it but it makes no sense: use 0 or more")


def _unknown_keys(mapping: Mapping[str, Any], known: Sequence[str], base: str, out: _Out, what: str) -> None:
    for key in mapping:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.75)
        if close:
            out.add("job-unknown-key", WARNING, f"{base}/{js_yaml.escape(str(key))}",
                    f"'{key}' in {what} is ignored by the rest-server; did you mean '{close[0]}'?")
