"""HiveD's cells as the running scheduler shows them, against the config rendered for the group: the VCs with their
cell types and numbers, the nodes, the top-level cells (pure; `hivedlab doctor`'s HiveD check)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import yaml

from hivedlab.backends.pai.doctor_findings import DoctorFinding, bad, ok
from hivedlab.models.hived.config import PhysicalCellSpec, is_node_type, load_config, node_name


def expected_cells(config_text: str) -> dict[str, Any]:
    """From a HiveD config: {vcs: {vc: {cellType: number}}, nodes: [...], top: Counter of top physical cell types}."""
    config = load_config(yaml.safe_load(config_text))

    def nodes_of(cell: PhysicalCellSpec) -> list[str]:
        info = config.cell_types[cell.cell_type]
        if is_node_type(info):
            return [node_name(cell.address)]
        return [node for child in cell.children for node in nodes_of(child)]

    vcs: dict[str, dict[str, int]] = {}
    for vc in config.virtual_clusters:
        cells = vcs.setdefault(vc.name, {})
        for virtual in vc.virtual_cells:
            cells[virtual.cell_type] = cells.get(virtual.cell_type, 0) + virtual.cell_number
    nodes = sorted(node for cell in config.physical_cells for node in nodes_of(cell))
    return {"vcs": vcs, "nodes": nodes, "top": Counter(cell.cell_type for cell in config.physical_cells)}


def _cells(tree: Any) -> list[dict[str, Any]]:
    """Every cell of a HiveD status tree (lists and cellChildren)."""
    if isinstance(tree, list):
        return [cell for item in tree for cell in _cells(item)]
    if isinstance(tree, dict):
        return [tree, *_cells(tree.get("cellChildren") or [])]
    return []


def observed_cells(physical: Any, virtual: Any) -> dict[str, Any]:
    """The same shape as `expected_cells` from HiveD's inspect API answers."""
    vcs = {}
    for vc, tree in (virtual or {}).items():
        vcs[str(vc)] = dict(Counter(str(cell.get("cellType")).split(".")[-1] for cell in _cells(tree)))
    nodes = sorted(node_name(str(c.get("cellAddress"))) for c in _cells(physical) if c.get("isNodeLevel"))
    top = Counter(str(c.get("cellType")) for c in (physical if isinstance(physical, list) else []))
    return {"vcs": vcs, "nodes": nodes, "top": top}


def compare_cells(name: str, expected: dict[str, Any], seen: dict[str, Any]) -> list[DoctorFinding]:
    """HiveD's VCs, cells and nodes against the config `name` rendered for the inventory (pure)."""
    fix_zh = (f"用 `hivedlab scheduler-config {name} --inventory group.yaml` 重新生成并推送配置，"
              "重启 hivedscheduler 和 rest-server（手册 4.1 / 4.5），然后再运行 `hivedlab doctor`")
    fix_en = (f"render and push the config again with `hivedlab scheduler-config {name} --inventory group.yaml`, "
              "restart hivedscheduler and rest-server (manual 4.1 / 4.5), then run `hivedlab doctor` again")
    findings = []
    if sorted(seen["vcs"]) != sorted(expected["vcs"]):
        findings.append(bad("hived-vcs", f"HiveD 的 VC 是 {', '.join(sorted(seen['vcs'])) or '无'}，{name} 应为 "
                            f"{', '.join(sorted(expected['vcs']))}",
                            f"HiveD's VCs are {', '.join(sorted(seen['vcs'])) or 'none'}; {name} has "
                            f"{', '.join(sorted(expected['vcs']))}", fix_zh, fix_en))
    for vc, cells in sorted(expected["vcs"].items()):
        have = seen["vcs"].get(vc)
        if have is None:
            continue
        wrong = {t: (n, have.get(t, 0)) for t, n in cells.items() if have.get(t, 0) != n}
        if wrong:
            zh = "；".join(f"{t} 应有 {n} 个，HiveD 有 {h} 个" for t, (n, h) in wrong.items())
            en = "; ".join(f"{t}: {n} expected, HiveD has {h}" for t, (n, h) in wrong.items())
            findings.append(bad("hived-cells", f"VC {vc} 的 cell 与 {name} 不同：{zh}",
                                f"VC {vc}'s cells differ from {name}: {en}", fix_zh, fix_en))
    if seen["nodes"] != expected["nodes"] or seen["top"] != expected["top"]:
        findings.append(bad(
            "hived-nodes", f"HiveD 的节点 {', '.join(seen['nodes']) or '无'}（顶层 cell {dict(seen['top'])}）"
            f"与 {name} 的 {', '.join(expected['nodes'])}（{dict(expected['top'])}）不同",
            f"HiveD's nodes {', '.join(seen['nodes']) or 'none'} (top cells {dict(seen['top'])}) differ from {name}'s "
            f"{', '.join(expected['nodes'])} ({dict(expected['top'])})", fix_zh, fix_en))
    if not findings:
        summary = ", ".join(f"{vc}: " + " ".join(f"{n}×{t}" for t, n in cells.items())
                            for vc, cells in sorted(expected["vcs"].items()))
        findings.append(ok("hived", f"HiveD 的 VC 和 cell 与 {name} 一致"
                                    f"（{summary}；节点 {', '.join(expected['nodes'])}）",
                           f"HiveD's VCs and cells match {name} ({summary}; nodes {', '.join(expected['nodes'])})"))
    return findings


