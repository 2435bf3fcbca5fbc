"""HiveD-config checks: HiveD v0.3.4's own load verdict (`hivedlab.models.hived.load_config`), what the rest-server
needs from the config (skuTypes) and what OpenPAI's services configuration allows (both on the OpenPAI model page),
and the mistakes HiveD accepts silently (docs/hived-config-and-cells.md#the-config)."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from hivedlab.checker.validate.validation_findings import ERROR, NOTE, WARNING, ValidationFinding, locate
from hivedlab.models.hived import ConfigError, load_config
from hivedlab.models.openpai import hived_spec
from hivedlab.models.openpai.js_yaml import escape

_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SAFE_VC = re.compile(r"^[a-z0-9]+$")
_CANONICAL_MEMORY = re.compile(r"^\d+(Mi|Gi|Ti)$")


class _Out:
    def __init__(self, file: str, positions: Mapping[str, tuple[int, int]], base: str = "",
                 shift: tuple[int, int] | None = None) -> None:
        self.file, self.positions, self.base, self.shift = file, positions, base, shift
        self.items: list[ValidationFinding] = []

    def add(self, rule: str, severity: str, pointer: str, message: str) -> None:
        line, col = locate(self.positions, pointer)
        if self.shift is not None:  # the config is a block string inside services-configuration.yaml
            line, col = line + self.shift[0], col + self.shift[1]
        self.items.append(ValidationFinding(rule, severity, self.file, line, col, self.base + pointer, message))


def check_hived_config(
    data: Mapping[str, Any], positions: Mapping[str, tuple[int, int]], file: str, base: str = "",
    shift: tuple[int, int] | None = None,
) -> list[ValidationFinding]:
    """Every finding for one bare HiveD config (`base`/`shift` place it inside a services configuration)."""
    out = _Out(file, positions, base, shift)
    try:
        load_config(data)
    except ConfigError as exc:
        out.add("hived-load", ERROR, exc.pointer, f"HiveD refuses this config at start-up: {exc.message}")
        _over_capacity(data, exc.message, out)
    except (RecursionError, ValueError, TypeError, KeyError, AttributeError) as exc:
        out.add("hived-load", ERROR, "", f"HiveD refuses this config at start-up: {type(exc).__name__}: {exc}")
    if not isinstance(data, Mapping):
        return out.items
    raw_physical = data.get("physicalCluster")
    physical: Mapping[str, Any] = raw_physical if isinstance(raw_physical, Mapping) else {}
    types = {str(k): v for k, v in (physical.get("cellTypes") or {}).items() if isinstance(v, Mapping)} \
        if isinstance(physical.get("cellTypes"), Mapping) else {}
    _check_skus(physical, types, out)
    _check_cells(physical, types, out)
    _check_vcs(data, physical, types, out)
    return out.items


_INSUFFICIENT = re.compile(r"Insufficient physical cells at chain (\S+) level \d+: (\d+) needed, (\d+) available")


def _over_capacity(data: Any, message: str, out: _Out) -> None:
    """HiveD names the chain's first VC; point at the last VC that asks for the chain, the one that tipped it over
    (an extra `vc2`), with the fix."""
    found = _INSUFFICIENT.search(message)
    vcs = data.get("virtualClusters") if isinstance(data, Mapping) else None
    if not found or not isinstance(vcs, Mapping):
        return
    chain, need, available = found.groups()
    users = [str(vc) for vc, spec in vcs.items() if isinstance(spec, Mapping) and any(
        isinstance(cell, Mapping) and str(cell.get("cellType", "")).split(".")[0] == chain
        for cell in spec.get("virtualCells") or [] if isinstance(spec.get("virtualCells"), list))]
    if len(users) < 2:
        return
    last = users[-1]
    out.add("hived-vc", ERROR, f"/virtualClusters/{escape(last)}",
            f"VCs {', '.join(users)} together ask for {need} cells of chain {chain}, which has {available}: VC {last} "
            f"is one too many; remove {last} (or lower the cellNumber of a VC), or give the chain more nodes")


def check_addresses(data: Any, positions: Mapping[str, tuple[int, int]], file: str, workers: tuple[str, ...],
                    inventory: str) -> list[ValidationFinding]:
    """Each node's cellAddress against the inventory's worker hostnames (`validate` given both): a node the group
    does not have never joins, and HiveD keeps its cells waiting."""
    out = _Out(file, positions)
    physical = data.get("physicalCluster") if isinstance(data, Mapping) else None
    if not isinstance(physical, Mapping) or not workers:
        return []
    raw_types = physical.get("cellTypes")
    types = ({str(k): v for k, v in raw_types.items() if isinstance(v, Mapping)}
             if isinstance(raw_types, Mapping) else {})
    for pointer, node in _node_addresses(physical.get("physicalCells"), types):
        if node not in workers:
            close = difflib.get_close_matches(node, workers, n=1, cutoff=0.6)
            fix = f"did you mean {close[0]}?" if close else "use one of them."
            out.add("hived-inventory", ERROR, pointer + "/cellAddress",
                    f"node {node} is not a worker's hostname in {inventory} ({', '.join(workers)}): {fix} HiveD "
                    "would keep its cells waiting for a node that never joins")
    return out.items


def _node_addresses(cells: Any, types: Mapping[str, Mapping[str, Any]]) -> Iterator[tuple[str, str]]:
    """(pointer, node name) of every node-level cell with a cellAddress, in config order."""
    stack = [(cell, f"/physicalCluster/physicalCells/{i}", str(cell.get("cellType")), 0)
             for i, cell in enumerate(cells if isinstance(cells, list) else []) if isinstance(cell, Mapping)][::-1]
    while stack:
        cell, ptr, cell_type, depth = stack.pop()
        spec = types.get(cell_type)
        if spec is None or depth > 64:
            continue
        if spec.get("isNodeLevel") is True and cell.get("cellAddress") is not None:
            yield ptr, str(cell["cellAddress"]).rsplit("/", 1)[-1]
            continue
        children = cell.get("cellChildren")
        kids = list(enumerate(children)) if isinstance(children, list) else []
        stack += [(child, f"{ptr}/cellChildren/{j}", str(spec.get("childCellType")), depth + 1)
                  for j, child in reversed(kids) if isinstance(child, Mapping)]


def _leaf_types(types: Mapping[str, Mapping[str, Any]]) -> set[str]:
    return {str(spec.get("childCellType")) for spec in types.values()} - set(types)


def _check_skus(physical: Mapping[str, Any], types: Mapping[str, Mapping[str, Any]], out: _Out) -> None:
    skus = physical.get("skuTypes")
    if not isinstance(skus, Mapping) or not skus:
        out.add("hived-skutypes", ERROR, "/physicalCluster/skuTypes" if "skuTypes" in physical else "/physicalCluster",
                "no skuTypes: HiveD ignores them, but OpenPAI's rest-server does not start without them ('Cannot find "
                "skuTypes in hivedscheduler config.'); add one per leaf cell type, e.g. GPU: {gpu: 1, cpu: 2, "
                "memory: 4096Mi}")
        return
    units = hived_spec.resource_units({"physicalCluster": physical})
    for name, raw in skus.items():
        ptr = f"/physicalCluster/skuTypes/{escape(str(name))}"
        if not isinstance(raw, Mapping):
            out.add("hived-skutypes", ERROR, ptr, f"skuType {name} must be a mapping with gpu, cpu and memory")
            continue
        memory = raw.get("memory")
        if memory is None:
            out.add("hived-skutypes", ERROR, ptr, f"skuType {name} has no memory: every job that requests memory is "
                    "refused ('SKU does not configure memory'); add e.g. memory: 4096Mi")
        elif units[str(name)].memory == 0:
            out.add("hived-skutypes", ERROR, ptr + "/memory", f"memory {memory!r} is 0 MB for OpenPAI (it reads only "
                    "integers with Ki/Mi/Gi/Ti, anything else as bytes): every job requesting memory is refused; "
                    "write e.g. 4096Mi or 4Gi")
        elif not _CANONICAL_MEMORY.match(str(memory)):
            out.add("hived-skutypes", WARNING, ptr + "/memory", f"memory {memory!r} is read by OpenPAI as "
                    f"{units[str(name)].memory:g} MB; write an integer with Mi or Gi (e.g. 4096Mi) to be sure")
        for key in ("cpu", "gpu"):
            value = raw.get(key)
            if value is None:
                if key == "cpu":
                    out.add("hived-skutypes", ERROR, ptr, f"skuType {name} has no cpu: every job requesting CPU is "
                            "refused ('SKU does not configure CPU'); add cpu")
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                out.add("hived-skutypes", WARNING, ptr + f"/{key}", f"{key} {value!r} is read by OpenPAI as "
                        f"{getattr(units[str(name)], key):g} (parseInt); write a whole number")
    leaves = _leaf_types(types)
    for leaf in sorted(leaves - {str(s) for s in skus}):
        out.add("hived-skutypes", WARNING, "/physicalCluster/skuTypes",
                f"leaf cell type {leaf} has no skuType: the rest-server gives jobs in its VCs no resource unit; "
                f"add skuTypes.{leaf} (skuType names are the leaf cell types)")
    for name in skus:
        if str(name) not in leaves and leaves:
            out.add("hived-skutypes", WARNING, f"/physicalCluster/skuTypes/{escape(str(name))}",
                    f"skuType {name} is not a leaf cell type ({', '.join(sorted(leaves))}): jobs asking for it get "
                    "no cells of it")


def _check_cells(physical: Mapping[str, Any], types: Mapping[str, Mapping[str, Any]], out: _Out) -> None:
    cells = physical.get("physicalCells")
    if not isinstance(cells, list):
        return
    nodes: Counter[str] = Counter()
    node_ptr: dict[str, str] = {}
    pinned: Counter[str] = Counter()
    pinned_ptr: dict[str, str] = {}
    stack = [(cell, f"/physicalCluster/physicalCells/{i}", str(cell.get("cellType")), 0, str(cell.get("cellType")))
             for i, cell in enumerate(cells) if isinstance(cell, Mapping)][::-1]  # popped in config order
    while stack:
        cell, ptr, cell_type, depth, chain = stack.pop()
        spec = types.get(cell_type)
        if depth > 64 or spec is None:
            continue
        if spec.get("isNodeLevel") is True and cell.get("cellAddress") is not None:
            address = str(cell["cellAddress"]).rsplit("/", 1)[-1]
            nodes[chain + "\0" + address] += 1
            node_ptr.setdefault(chain + "\0" + address, ptr)
            if nodes[chain + "\0" + address] == 2:
                out.add("hived-cells", WARNING, ptr + "/cellAddress", f"node {address} appears twice in chain "
                        f"{chain} (first at {node_ptr[chain + chr(0) + address]}); HiveD accepts it and counts the "
                        "node's GPUs twice: list each node once")
        if cell.get("pinnedCellId") is not None:
            pid = str(cell["pinnedCellId"])
            pinned[pid] += 1
            if pinned[pid] == 2:
                out.add("hived-cells", WARNING, ptr + "/pinnedCellId", f"pinnedCellId {pid} is used twice (first at "
                        f"{pinned_ptr[pid]}); HiveD silently keeps only the last one: give each pinned cell its own id")
            pinned_ptr.setdefault(pid, ptr)
        children = cell.get("cellChildren")
        number = spec.get("childCellNumber")
        if isinstance(children, list) and children and isinstance(number, int):
            if len(children) > number:
                out.add("hived-cells", ERROR, ptr + "/cellChildren",
                        f"{len(children)} children but {cell_type} has childCellNumber {number}: HiveD crashes "
                        "(nil pointer) when a node of this cell turns bad "
                        "(docs/hived-config-and-cells.md#physical-cells); list exactly "
                        f"{number} or raise childCellNumber")
            elif len(children) < number:
                out.add("hived-cells", WARNING, ptr + "/cellChildren",
                        f"{len(children)} children but {cell_type} has childCellNumber {number}: HiveD accepts it "
                        "with less capacity, and its VC capacity check counts only the first cell's children; list "
                        f"all {number} or lower childCellNumber")
        child_type = str(spec.get("childCellType"))
        kids = list(enumerate(children)) if isinstance(children, list) else []
        for j, child in reversed(kids):
            if isinstance(child, Mapping):
                stack.append((child, f"{ptr}/cellChildren/{j}", child_type, depth + 1, chain))


def _check_vcs(data: Mapping[str, Any], physical: Mapping[str, Any], types: Mapping[str, Mapping[str, Any]],
               out: _Out) -> None:
    vcs = data.get("virtualClusters")
    if not isinstance(vcs, Mapping):
        return
    if "default" not in vcs:
        out.add("hived-vc", WARNING, "/virtualClusters", "there is no VC named 'default': OpenPAI gives every user "
                "the default VC and jobs without defaults.virtualCluster go there; keep a 'default' VC")
    chains = {str(c.get("cellType")) for c in physical.get("physicalCells") or [] if isinstance(c, Mapping)} \
        if isinstance(physical.get("physicalCells"), list) else set()
    used_pins: dict[str, str] = {}
    for vc, spec in vcs.items():
        ptr = f"/virtualClusters/{escape(str(vc))}"
        name = str(vc)
        if not _K8S_NAME.match(name):
            out.add("hived-vc", ERROR, ptr, f"VC name '{name}' cannot be part of a Kubernetes object name "
                    f"(StatefulSet hivedscheduler-ds-{name}), so its scheduler is never created and its jobs never "
                    f"run; use lower-case letters and digits, e.g. '{re.sub(r'[^a-z0-9]', '', name.lower()) or 'vc1'}'")
        elif not _SAFE_VC.match(name):
            out.add("hived-vc", WARNING, ptr, f"VC name '{name}' has '-', which the rest-server's VC API refuses "
                    "(^[A-Za-z0-9_]+$); use lower-case letters and digits only")
        if not isinstance(spec, Mapping):
            continue
        for i, entry in enumerate(spec.get("virtualCells") or [] if isinstance(spec.get("virtualCells"), list) else []):
            if isinstance(entry, Mapping) and isinstance(entry.get("cellType"), str):
                _check_path(entry["cellType"], f"{ptr}/virtualCells/{i}/cellType", types, chains, out)
        for i, entry in enumerate(spec.get("pinnedCells") or [] if isinstance(spec.get("pinnedCells"), list) else []):
            pid = str(entry.get("pinnedCellId")) if isinstance(entry, Mapping) else ""
            if pid in used_pins:
                out.add("hived-vc", WARNING, f"{ptr}/pinnedCells/{i}/pinnedCellId",
                        f"pinned cell {pid} is already given to VC {used_pins[pid]}: HiveD does not check it (only "
                        "the capacity check may catch it); give each pinned cell to one VC")
            used_pins.setdefault(pid, name)


def _check_path(path: str, ptr: str, types: Mapping[str, Mapping[str, Any]], chains: set[str], out: _Out) -> None:
    """`CHAIN.….TYPE`: HiveD ignores the middle segments and never checks that TYPE belongs to CHAIN
    (docs/hived-config-and-cells.md#virtual-clusters)."""
    parts = path.split(".")
    if parts[0] not in chains or parts[-1] not in types and parts[-1] not in _leaf_types(types):
        return  # HiveD's own verdict covers these
    below: list[str] = []
    cell_type = parts[0]
    while cell_type in types and len(below) < 64:
        cell_type = str(types[cell_type].get("childCellType"))
        below.append(cell_type)
    if len(parts) > 1 and parts[-1] not in below:
        out.add("hived-vc", WARNING, ptr, f"{parts[-1]} is not a cell type of chain {parts[0]} "
                f"({' > '.join(below) or 'no levels'}): HiveD loads it but places the VC's cells oddly; fix the path")
    elif len(parts) > 2:
        expected = below[: below.index(parts[-1]) + 1] if parts[-1] in below else []
        if parts[1:] != expected:
            out.add("hived-vc", NOTE, ptr, f"HiveD ignores the middle of '{path}'; the full path would be "
                    f"'{'.'.join([parts[0], *expected])}'")


def check_services_config(
    data: Mapping[str, Any], positions: Mapping[str, tuple[int, int]], file: str, text: str
) -> tuple[list[ValidationFinding], Mapping[str, Any] | None]:
    """The `hivedscheduler` section of services-configuration.yaml; returns its findings and the parsed config."""
    from hivedlab.models.openpai.js_yaml import YamlError, parse_yaml  # the same YAML reading as everything else

    section = data.get("hivedscheduler")
    findings: list[ValidationFinding] = []

    def add(severity: str, pointer: str, message: str) -> None:
        line, col = locate(positions, pointer)
        findings.append(ValidationFinding("services-config", severity, file, line, col, pointer, message))

    if not isinstance(section, Mapping):
        add(ERROR, "/hivedscheduler", "hivedscheduler must be a mapping with a 'config' block string")
        return findings, None
    config = section.get("config")
    if not isinstance(config, str):
        if config is not None:
            add(ERROR, "/hivedscheduler/config", "config must be a block string (config: |), not a "
                f"{type(config).__name__}: the OpenPAI config plugin re-indents it as text")
        else:
            add(WARNING, "/hivedscheduler", "no hivedscheduler.config: HiveD is not deployed and the rest-server uses "
                "the default scheduler")
        return findings, None
    if len(config.strip()) <= 1:
        add(WARNING, "/hivedscheduler/config", "hivedscheduler.config is empty: HiveD is not deployed and the "
            "rest-server uses the default scheduler")
        return findings, None
    key_line, _ = locate(positions, "/hivedscheduler/config")
    indent = _block_indent(text, key_line)
    try:
        inner = parse_yaml(config)
    except YamlError as exc:
        line = key_line + exc.line if exc.line else key_line
        findings.append(ValidationFinding("yaml-syntax", ERROR, file, line, exc.col + indent, "/hivedscheduler/config",
                                f"hivedscheduler.config: {exc.message} (HiveD fails with 'Failed to unmarshal YAML')"))
        return findings, None
    if not isinstance(inner.data, Mapping):
        add(ERROR, "/hivedscheduler/config", "hivedscheduler.config must hold a mapping (physicalCluster, "
            "virtualClusters)")
        return findings, None
    for key in ("webServerAddress", "waitingPodSchedulingBlockMilliSec"):
        if key in inner.data:
            add(ERROR, "/hivedscheduler/config", f"do not set {key} in hivedscheduler.config: OpenPAI already writes "
                "it into the same file, and the repeated key makes HiveD fail to read its config "
                "(docs/openpai-model.md#services-configuration)")
    shift = (key_line, indent)
    findings.extend(check_hived_config(inner.data, inner.positions, file, "/hivedscheduler/config", shift))
    findings.extend(ValidationFinding("yaml-dialect", WARNING, file, n.line + key_line, n.col + indent,
                            "/hivedscheduler/config" + n.pointer, n.message) for n in inner.dialect)
    return findings, inner.data


def _block_indent(text: str, key_line: int) -> int:
    lines = text.splitlines()
    for line in lines[key_line: key_line + 50]:
        if line.strip():
            return len(line) - len(line.lstrip(" "))
    return 0
