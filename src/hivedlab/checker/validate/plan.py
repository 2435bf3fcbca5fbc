"""Experiment plans (`labs/experiments/<id>.yaml`): checked by the loader that runs them (`hivedlab.plans.loader`),
so `hivedlab validate` refuses exactly what `hivedlab run` would: the schema, each rule's typed parameters
(`hivedlab.plans.rule_params`), the job, VC and question references."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import parse_yaml
from hivedlab.checker.validate.validation_findings import ERROR, ValidationFinding
from hivedlab.plans.loader import plan_from_dict


def looks_like_plan(data: Any) -> bool:
    """A plan by content: its steps and its rules."""
    return isinstance(data, Mapping) and "steps" in data and "rules" in data


def check_plan(text: str, name: str) -> list[ValidationFinding]:
    """The loader's one-line error as a finding; none for a plan it loads. The text is read as the loader reads it
    (PyYAML), not as the rest-server reads a job."""
    try:
        plan_from_dict(parse_yaml(text, Path(name).name), Path(name))
    except HivedlabError as exc:
        return [ValidationFinding("plan", ERROR, name, 0, 0, "", str(exc))]
    return []
