"""Group-inventory findings: the inventory's own rules (`hivedlab.group.inventory`) located in the file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hivedlab.checker.validate.findings import Finding, locate
from hivedlab.group.inventory import inventory_problems


def check_inventory(data: Mapping[str, Any], positions: Mapping[str, tuple[int, int]], file: str) -> list[Finding]:
    findings = []
    for problem in inventory_problems(data):
        line, col = locate(positions, problem.pointer)
        findings.append(Finding("inventory", problem.severity, file, line, col, problem.pointer, problem.text.en))
    return findings
