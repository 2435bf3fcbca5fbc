"""The rubric's rule for a group that hivedlab itself sent to the simulated cluster because its hardware cannot hold
the lab's HiveD configs (a single worker with fewer than two GPUs; `hivedlab.lab_group.layouts.cannot_hold`).

run.json records it per run (`hardware: {<run>: {on: manual, why}}`); the group's environment records (`hivedlab env`,
measured on the machines) show the hardware. Both facts together excuse the simulator evidence of those runs; run.json
alone does not, and the TA is asked to look, with both facts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hivedlab.checker.grading.grade_findings import GradeFinding
from hivedlab.checker.grading.grader import GroupResult
from hivedlab.env_record import EnvRecord
from hivedlab.lab_group.rules import LAB_CONFIG_GPUS
from hivedlab.rundir import RUN_RECORD


@dataclass(frozen=True)
class HardwareExcuse:
    """The runs hivedlab put on the manual's (simulated) hardware, and whether the environment records show why."""

    runs: tuple[str, ...]
    shown: bool  # the records show a single worker with fewer GPUs than the lab's configs hold
    en: str
    zh: str

    def covers(self, experiment: str) -> bool:
        return self.shown and any(run.split("/")[0] == experiment for run in self.runs)

    def finding(self) -> GradeFinding | None:
        """A TA's look where run.json says so but the records do not show it."""
        if self.shown:
            return None
        return GradeFinding("provenance", "hardware-unconfirmed",
                            f"{self.en}: not confirmed, simulator evidence penalised",
                       f"{self.zh}：无法确认，按模拟集群证据扣分", RUN_RECORD)


def env_for(env: Mapping[str, EnvRecord], member: Any) -> EnvRecord | None:
    """A member's environment record (named by the member, their user or their machine)."""
    names = {member.name.lower(), member.user.lower(), member.hostname.lower()} - {""}
    for stem, record in env.items():
        if stem.lower() in names or (record.member or "").lower() in names:
            return record
    return None


def _gpu_count(record: EnvRecord | None) -> int | None:
    return record.gpu_count if record else None


def hardware_excuse(group: GroupResult) -> HardwareExcuse | None:
    """What run.json and the environment records say of the runs hivedlab put on the manual's hardware; None when
    run.json names none."""
    sub = group.submission
    entries = sub.record.hardware if sub.record else {}
    runs = tuple(sorted(key for key, value in entries.items() if value.get("on") == "manual"))
    if not runs:
        return None
    why = entries[runs[0]].get("why")
    why_en = str(why.get("en", "")) if isinstance(why, Mapping) else ""
    why_zh = str(why.get("zh", "")) if isinstance(why, Mapping) else ""
    workers = [m for m in sub.inventory.members if "worker" in m.roles] if sub.inventory is not None else []
    counts = [(worker.name, _gpu_count(env_for(sub.env, worker))) for worker in workers]
    shown = len(counts) == 1 and counts[0][1] is not None and counts[0][1] < LAB_CONFIG_GPUS
    seen_en = ", ".join(f"{name} {count} GPU" if count is not None else f"{name} no record" for name, count in counts)
    seen_zh = "，".join(f"{name} {count} 块 GPU" if count is not None else f"{name} 没有记录" for name, count in counts)
    en = (f"{', '.join(runs)} ran on the simulated cluster on the manual's hardware: run.json says {why_en or '-'}; "
          f"the environment records show {seen_en or 'no worker'}")
    zh = (f"{'、'.join(runs)} 在模拟集群上按实验手册的硬件运行：run.json 记录的原因是 {why_zh or '-'}；"
          f"环境记录显示 {seen_zh or '没有 worker'}")
    return HardwareExcuse(runs, shown, en, zh)
