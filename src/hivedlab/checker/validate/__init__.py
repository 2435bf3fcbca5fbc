"""`hivedlab validate`: job protocols, HiveD configs (bare or in services-configuration.yaml) and group inventories,
with the verdicts of OpenPAI v1.2.0's rest-server and HiveD v0.3.4, plus warnings for what they accept but is wrong.

    from hivedlab.checker.validate import validate_paths
    report = validate_paths(["jobs", "configs"])
    report.exit_code(strict=False)  # 0 no errors, 1 errors, 2 unreadable input
"""

from hivedlab.checker.validate.core import InputError, kind_of, load_targets, validate_paths
from hivedlab.checker.validate.formats import FORMATS, render
from hivedlab.checker.validate.validation_findings import ERROR, NOTE, RULES, WARNING, Report, ValidationFinding

__all__ = [
    "ERROR", "FORMATS", "NOTE", "RULES", "WARNING", "InputError", "Report", "ValidationFinding", "kind_of",
    "load_targets", "render", "validate_paths",
]
