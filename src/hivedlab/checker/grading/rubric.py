"""The grading rubric: YAML checked against `configs/schemas/rubric.schema.json`, loaded into frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import read_json, read_yaml
from hivedlab.basics.resources import CONFIGS, SCHEMAS
from hivedlab.basics.text import Text

DEFAULT_RUBRIC = CONFIGS / "rubric.default.yaml"
RUBRIC_SCHEMA = SCHEMAS / "rubric.schema.json"

# Default titles: (zh, en); "{exp}" is the experiment id.
_ITEM_TITLES = {
    "ran": ("{exp}：实验已运行完成", "{exp}: experiment run to the end"),
    "right-answer": ("{exp}：结论正确（复核证据）", "{exp}: right answer (re-judged from the evidence)"),
    "evidence-complete": ("{exp}：证据完整", "{exp}: evidence complete"),
    "explanation": ("{exp}：小组自己的解释", "{exp}: the group's own explanation"),
    "environment-table": ("实验环境表完整", "Environment table complete"),
    "deployment-notes": ("部署问题与解决方案", "Deployment notes present"),
    "claims-supported": ("报告结论与证据一致", "Report claims supported by the evidence"),
}
_PENALTY_TITLES = {
    "simulator-evidence": ("使用模拟集群的证据", "Simulator evidence where a real cluster was required"),
    "rehearsal-evidence": ("演练集群的证据（真实控制面，模拟 GPU）",
                           "Rehearsal-cluster evidence (real control plane, emulated GPUs)"),
    "broken-chain": ("证据日志哈希链断裂", "Evidence log hash chain broken"),
    "forgery": ("证据中有真实集群不会产生的记录", "Evidence a real cluster cannot produce"),
    "unsupported-claim": ("证据不支持的报告结论", "Report claim the evidence does not support"),
    "foreign-jobs": ("任务、VC 或优先级不是实验规定的", "Jobs, VCs or priorities are not the lab's"),
}


@dataclass(frozen=True)
class Item:
    id: str
    check: str
    points: float
    title: Text
    experiment: str | None = None
    hidden: bool = False


@dataclass(frozen=True)
class Penalty:
    id: str
    check: str
    points: float
    title: Text
    max: float | None = None
    hidden: bool = False


@dataclass(frozen=True)
class Rubric:
    title: Text
    items: tuple[Item, ...]
    penalties: tuple[Penalty, ...]
    require_real_cluster: bool = True
    floor: float = 0.0
    deployment_notes_min_chars: int = 40
    explanation_min_chars: int = 40
    source: str = ""

    def max_points(self, include_hidden: bool = True) -> float:
        return sum(item.points for item in self.items if include_hidden or not item.hidden)

    @property
    def experiments(self) -> tuple[str, ...]:
        """Experiment ids the rubric grades, in first-mention order."""
        seen: dict[str, None] = {}
        for item in self.items:
            if item.experiment:
                seen.setdefault(item.experiment, None)
        return tuple(seen)


def _text(raw: Any, default: tuple[str, str], exp: str | None) -> Text:
    if isinstance(raw, dict):
        return Text(zh=str(raw["zh"]), en=str(raw["en"]))
    return Text(zh=default[0].format(exp=exp), en=default[1].format(exp=exp))


def rubric_from_mapping(data: Any, source: str = "rubric") -> Rubric:
    """Validate parsed YAML against the schema and build a Rubric; one-line HivedlabError on any problem."""
    schema = read_json(RUBRIC_SCHEMA)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(top level)"
        raise HivedlabError(f"{source}: not a valid rubric at {where}: {first.message}")
    items = tuple(
        Item(
            id=raw["id"],
            check=raw["check"],
            points=float(raw["points"]),
            title=_text(raw.get("title"), _ITEM_TITLES[raw["check"]], raw.get("experiment")),
            experiment=raw.get("experiment"),
            hidden=bool(raw.get("hidden", False)),
        )
        for raw in data["items"]
    )
    penalties = tuple(
        Penalty(
            id=raw["id"],
            check=raw["check"],
            points=float(raw["points"]),
            title=_text(raw.get("title"), _PENALTY_TITLES[raw["check"]], None),
            max=float(raw["max"]) if "max" in raw else None,
            hidden=bool(raw.get("hidden", False)),
        )
        for raw in data.get("penalties", [])
    )
    ids = [entry.id for entry in items] + [entry.id for entry in penalties]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise HivedlabError(f"{source}: item/penalty id used twice: {', '.join(duplicates)}")
    return Rubric(
        title=_text(data.get("title"), ("评分", "Grades"), None),
        items=items,
        penalties=penalties,
        require_real_cluster=bool(data.get("require_real_cluster", True)),
        floor=float(data.get("floor", 0)),
        deployment_notes_min_chars=int(data.get("deployment_notes_min_chars", 40)),
        explanation_min_chars=int(data.get("explanation_min_chars", 40)),
        source=source,
    )


def load_rubric(path: str | Path | None = None) -> Rubric:
    """Load a rubric file; the shipped default when no path is given."""
    target = Path(path) if path else DEFAULT_RUBRIC
    return rubric_from_mapping(read_yaml(target, f"rubric {target}"), str(target))
