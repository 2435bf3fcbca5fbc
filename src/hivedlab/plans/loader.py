"""Experiment plans (`labs/experiments/<id>.yaml`): load, check against the plan schema, and normalise.

A TA adds an experiment by adding a file; `load_plans()` picks it up. Each rule is parsed into its kind's typed
parameters (`rule_params`). Errors are one-line `HivedlabError`s.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

from hivedlab.basics.errors import BilingualError, HivedlabError
from hivedlab.basics.files import read_json, read_yaml
from hivedlab.basics.resources import EXPERIMENTS, HIVED_CONFIGS, JOBS, SCHEMAS, SMOKE_PLANS
from hivedlab.basics.text import Text
from hivedlab.lab_group.layouts import CONFIG_VCS
from hivedlab.plans.rule_params import Rule, job_refs, parse_rule, rule_label, vc_refs

PLAN_SCHEMA = SCHEMAS / "experiment-plan.schema.json"


@dataclass(frozen=True)
class SubmitStep:
    job: str
    as_: str = "first-member"  # each-member | first-member
    expect: str = "accepted"  # accepted | rejected
    reply_status: int | None = None  # for expect: rejected
    reply_message: str | None = None


@dataclass(frozen=True)
class WaitStep:
    jobs: tuple[str, ...]
    until: str  # submitted | waiting | running | finished
    timeout: float = 3600.0
    on_timeout: str = "fail"  # fail | continue


@dataclass(frozen=True)
class StopStep:
    jobs: tuple[str, ...]


@dataclass(frozen=True)
class SwitchConfigStep:
    """Switch HiveD to another config while the plan's jobs run (what the admin does with paictl)."""

    config: str  # configs/hived/templates/<config>.yaml.j2


@dataclass(frozen=True)
class RestartStep:
    """Restart HiveD with the config it runs (crash recovery)."""

    component: str = "hived"


Step = SubmitStep | WaitStep | StopStep | SwitchConfigStep | RestartStep


@dataclass(frozen=True)
class PlanJob:
    key: str
    file: str  # relative to jobs/
    role: dict[str, str] | None = None

    @property
    def path(self) -> Path:
        return JOBS / self.file


@dataclass(frozen=True)
class Plan:
    """A loaded plan. `raw` is the YAML as a dict (for the `plan` evidence record); `rules` typed (`rule_params`)."""

    id: str
    order: int
    title: dict[str, str]
    hived_config: str
    jobs: dict[str, PlanJob]
    steps: tuple[Step, ...]
    questions: dict[str, tuple[str, ...]]
    rules: tuple[Rule, ...]
    sim: dict[str, Any]
    path: Path
    manual_step: str | None = None
    summary: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] | None = None
    optional: bool = False  # not one of the report's main rows; `hivedlab run all` leaves it out
    schedulers: tuple[str, ...] = ("hived",)  # what `hivedlab run` runs it under unless --scheduler picks one
    row_name: Text | None = None  # the lab report's row in the manual's words (`report_row`), when it has one
    row_question: Text | None = None
    scheduler: str = "hived"  # the scheduler of this run of the plan (`for_scheduler`)

    @property
    def contrast(self) -> bool:
        """A run without HiveD: outside the report's five rows and the grade (docs/other-schedulers.md)."""
        return self.scheduler != "hived"

    @property
    def run_id(self) -> str:
        """The run's folder name: the plan id, or `<id>@<scheduler>` for a contrast run."""
        return f"{self.id}@{self.scheduler}" if self.contrast else self.id

    def for_scheduler(self, scheduler: str) -> Plan:
        return replace(self, scheduler=scheduler)


@dataclass(frozen=True)
class RuleSet:
    """What the judge needs of a plan (`to_ruleset`)."""

    experiment: str
    title: Text
    questions: tuple[Text, ...]
    rules: tuple[Rule, ...]
    job_names: dict[str, str]  # protocol name (e.g. job-config-1) -> plan job key


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    schema = read_json(PLAN_SCHEMA)
    return jsonschema.Draft202012Validator(schema)


def _where(error: jsonschema.ValidationError) -> str:
    return "/".join(str(part) for part in error.absolute_path) or "(top level)"


def _parse_step(raw: dict[str, Any]) -> Step:
    if "submit" in raw:
        body = raw["submit"]
        if isinstance(body, str):
            return SubmitStep(job=body)
        reply = body.get("reply") or {}
        return SubmitStep(
            job=body["job"],
            as_=body.get("as", "first-member"),
            expect=body.get("expect", "accepted"),
            reply_status=reply.get("status"),
            reply_message=reply.get("message"),
        )
    if "wait" in raw:
        body = raw["wait"]
        jobs = (body["job"],) if isinstance(body["job"], str) else tuple(body["job"])
        return WaitStep(jobs, body["until"], float(body.get("timeout", 3600)), body.get("on_timeout", "fail"))
    if "switch_config" in raw:
        return SwitchConfigStep(raw["switch_config"])
    if "restart" in raw:
        return RestartStep(raw["restart"])
    stop = raw["stop"]
    return StopStep((stop,) if isinstance(stop, str) else tuple(stop))


def _step_jobs(step: Step) -> tuple[str, ...]:
    if isinstance(step, SubmitStep):
        return (step.job,)
    return step.jobs if isinstance(step, WaitStep | StopStep) else ()


def _check_vcs(where: str, rule: Rule, configs: tuple[str, ...]) -> None:
    """A rule's VCs (`vc`, `idle_vc`, `outside_vc`) are VCs of a config the plan uses, on every layout."""
    known = {vc for config in configs for vc in CONFIG_VCS.get(config, ())}
    if not known or not all(config in CONFIG_VCS for config in configs):
        return
    for key, vc in vc_refs(rule.params).items():
        if vc not in known:
            raise HivedlabError(f"{where}: {key} {vc!r} is not a VC of {', '.join(configs)} "
                                f"(VCs: {', '.join(sorted(known))})")


def _parse_rules(name: str, data: Any) -> tuple[Rule, ...] | None:
    """The plan's rules, typed (`rule_params`); None when `rules` is no list of mappings (the schema says why)."""
    raw = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(raw, list) or not all(isinstance(rule, dict) for rule in raw):
        return None
    rules = []
    for index, rule in enumerate(raw):
        try:
            rules.append(parse_rule(rule))
        except HivedlabError as exc:
            raise HivedlabError(f"{name}: {rule_label(index, rule)}: {exc}") from None
    return tuple(rules)


def plan_from_dict(data: Any, path: Path) -> Plan:
    """Check a parsed plan against the schema and the cross-references; raise a one-line HivedlabError."""
    name = path.name
    rules = _parse_rules(name, data)
    errors = list(_validator().iter_errors(data))
    if errors:
        first = best_match(errors)
        message = first.message if len(first.message) <= 160 else first.message[:157] + "..."
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise HivedlabError(f"{name}: {_where(first)}: {message}{more}")
    if data["id"] != path.stem:
        raise HivedlabError(f"{name}: id {data['id']!r} must equal the file name {path.stem!r}")
    jobs = {key: PlanJob(key, body["file"], body.get("role")) for key, body in data["jobs"].items()}
    steps = tuple(_parse_step(raw) for raw in data["steps"])
    for index, step in enumerate(steps):
        for key in _step_jobs(step):
            if key not in jobs:
                raise HivedlabError(f"{name}: steps/{index}: unknown job {key!r} (jobs: {', '.join(jobs)})")
        if (isinstance(step, SwitchConfigStep)
                and not (HIVED_CONFIGS / "templates" / f"{step.config}.yaml.j2").is_file()):
            known = ", ".join(sorted(p.name.removesuffix(".yaml.j2")
                                     for p in (HIVED_CONFIGS / "templates").glob("*.j2")))
            raise HivedlabError(f"{name}: steps/{index}: no HiveD config template {step.config!r} (known: {known})")
    questions = {lang: tuple(data["questions"][lang]) for lang in ("zh", "en")}
    if len(questions["zh"]) != len(questions["en"]):
        raise HivedlabError(f"{name}: questions: zh and en must list the same number of questions")
    assert rules is not None  # the schema holds `rules` to a list of mappings
    for index, rule in enumerate(rules):
        where = f"{name}: {rule_label(index, data['rules'][index])}"
        for key in job_refs(rule.params):
            if key not in jobs:
                raise HivedlabError(f"{where}: unknown job {key!r} (jobs: {', '.join(jobs)})")
        if rule.question >= len(questions["en"]):
            raise HivedlabError(f"{where}: question {rule.question} does not exist")
        _check_vcs(where, rule, (data["hived_config"], *(s.config for s in steps if isinstance(s, SwitchConfigStep))))
    row = data.get("report_row")
    return Plan(
        id=data["id"],
        order=data["order"],
        title=dict(data["title"]),
        hived_config=data["hived_config"],
        jobs=jobs,
        steps=steps,
        questions=questions,
        rules=rules,
        sim=dict(data.get("sim") or {}),
        path=path,
        manual_step=data.get("manual_step"),
        summary=dict(data.get("summary") or {"zh": data["title"]["zh"], "en": data["title"]["en"]}),
        raw=data,
        optional=bool(data.get("optional", False)),
        schedulers=tuple(data.get("schedulers") or ("hived",)),
        row_name=Text(**row["name"]) if row else None,
        row_question=Text(**row["question"]) if row else None,
    )


def _resolve(path_or_id: str | Path, folder: Path) -> Path:
    text = str(path_or_id)
    candidate = Path(text)
    if candidate.suffix in (".yaml", ".yml") or candidate.is_file():  # a folder named `smoke` is no plan
        return candidate
    found = folder / f"{text}.yaml"
    smoke = SMOKE_PLANS / f"{text}.yaml"
    return smoke if not found.is_file() and smoke.is_file() else found


def load_plan(path_or_id: str | Path, folder: Path = EXPERIMENTS) -> Plan:
    """Load a plan by id (`gang`) or by path; unknown ids get a 'did you mean' hint."""
    path = _resolve(path_or_id, folder)
    if not path.is_file():
        import difflib

        known = sorted(p.stem for p in folder.glob("*.yaml"))
        close = difflib.get_close_matches(str(path_or_id), known, n=1)
        hint = (Text(f"（是不是 '{close[0]}'？）", f" (did you mean '{close[0]}'?)") if close
                else Text(f"（已有的计划：{', '.join(known)}）", f" (known: {', '.join(known)})"))
        named = str(path_or_id)
        raise BilingualError(Text(f"没有实验计划 {named!r}", f"no experiment plan {named!r}") + hint)
    return plan_from_dict(read_yaml(path, path.name), path)


def load_plans(folder: Path = EXPERIMENTS, contrast: bool = False) -> list[Plan]:
    """The lab's plans (those that run under HiveD; optional ones included) in the folder, sorted by `order` (then
    id); with `contrast`, also the plans that run only without HiveD (docs/other-schedulers.md)."""
    plans = [load_plan(path, folder) for path in sorted(folder.glob("*.yaml"))]
    if not contrast:
        plans = [plan for plan in plans if "hived" in plan.schedulers]
    return sorted(plans, key=lambda plan: (plan.order, plan.id))


def main_plans(folder: Path = EXPERIMENTS) -> list[Plan]:
    """The plans `hivedlab run all` runs and the report's main table lists: every plan not marked `optional`."""
    return [plan for plan in load_plans(folder) if not plan.optional]


def protocol_name(job: PlanJob) -> str:
    """The job protocol's `name` (e.g. job-config-1); the file stem when the file cannot be read."""
    try:
        data = read_yaml(job.path)
    except HivedlabError:
        data = None
    name = data.get("name") if isinstance(data, dict) else None
    return str(name) if name else Path(job.file).stem


def to_ruleset(plan: Plan) -> RuleSet:
    """What the judge needs of a plan."""
    questions = tuple(Text(zh, en) for zh, en in zip(plan.questions["zh"], plan.questions["en"], strict=True))
    names = {protocol_name(job): key for key, job in plan.jobs.items()}
    return RuleSet(plan.id, Text(plan.title["zh"], plan.title["en"]), questions, plan.rules, names)


@cache
def ruleset_for(experiment: str) -> RuleSet:
    """The rules of a shipped plan, by experiment id (loaded once per process)."""
    return to_ruleset(load_plan(experiment))
