"""A check's finding, as `hivedlab doctor` prints it: which check, ok / warning / error, what was seen, the fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hivedlab.basics.text import Text


@dataclass(frozen=True)
class DoctorFinding:
    check: str
    status: str  # ok | skipped | warning | error
    message: Text
    fix: Text | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "message": self.message.as_dict(),
                "fix": self.fix.as_dict() if self.fix else None}


def ok(check: str, zh: str, en: str) -> DoctorFinding:
    return DoctorFinding(check, "ok", Text(zh, en))


def skipped(check: str, zh: str, en: str) -> DoctorFinding:
    """A check that does not apply to this cluster (the rehearsal cluster's portal): neither passed nor failed."""
    return DoctorFinding(check, "skipped", Text(zh, en))


def bad(check: str, zh: str, en: str, fix_zh: str, fix_en: str, status: str = "error") -> DoctorFinding:
    return DoctorFinding(check, status, Text(zh, en), Text(fix_zh, fix_en))


