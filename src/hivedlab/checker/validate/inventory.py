"""Group-inventory findings: the inventory's own rules (`hivedlab.lab_group.inventory`) located in the file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hivedlab.checker.validate.validation_findings import ValidationFinding, locate
from hivedlab.lab_group.rules import inventory_problems


def check_inventory(data: Mapping[str, Any], positions: Mapping[str, tuple[int, int]],
                    file: str) -> list[ValidationFinding]:
    findings = []
    for problem in inventory_problems(data):
        line, col = locate(positions, problem.pointer)
        findings.append(ValidationFinding("inventory", problem.severity, file, line, col, problem.pointer,
                                          problem.text.en))
    return findings
