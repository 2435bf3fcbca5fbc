"""Who submits what, under which name: a plan's turns, the job names, the Kubernetes form of a plan."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import parse_yaml
from hivedlab.basics.resources import JOBS
from hivedlab.lab_group.inventory import Inventory
from hivedlab.models.kubeflow.manifests import FORMS, looks_like_manifests, manifest_file
from hivedlab.models.openpai.naming import TURN_MARK
from hivedlab.models.openpai.protocol import job_name_rule
from hivedlab.plans.loader import Plan, SubmitStep
from hivedlab.runner.run_types import Turn, is_group_plan

_NAME_LINE = re.compile(r"^name:[^\n]*$", re.MULTILINE)


def job_name_for(base: str, user: str, experiment: str, run_tag: str, turn: bool = False) -> str:
    """`<base>-<user>-<experiment>-<run>`, `<base>-<user>-<experiment>-turn-<run>` for a member's turn: unique per
    member, experiment and run, and a member's turn apart from the group's run that the same member submitted (names
    can never be reused, docs/openpai-model.md#endpoints), within the protocol's rule (`job_name_rule`: its characters,
    its length)."""
    rule = job_name_rule()
    text = re.sub(f"[^{rule.characters}]", "-", f"{base}-{user}-{experiment}-{TURN_MARK if turn else ''}{run_tag}")
    return re.sub(r"-{2,}", "-", text).strip("-")[:rule.max_length]


def protocol_with_name(text: str, name: str) -> str:
    """The job file's text with its top-level `name:` replaced (comments and layout kept)."""
    if not _NAME_LINE.search(text):
        return f"name: {name}\n{text}"
    return _NAME_LINE.sub(f"name: {name}", text, count=1)


def _base_name(text: str, fallback: str) -> str:
    if looks_like_manifests(text):
        return fallback  # the file's stem: the manifests' objects are named after it
    try:
        data = parse_yaml(text, "")
    except HivedlabError:
        return fallback
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) and name else fallback


def step_members(step: SubmitStep, users: tuple[str, ...], member: str = "") -> tuple[str, ...]:
    """Who a submit step submits as: every member at once, or the member whose turn it is (the first by default)."""
    if step.as_ == "each-member":
        return users
    return (member,) if member else users[:1]


def plan_turns(plans: Sequence[Plan], members: Sequence[str] = ("",)) -> list[Turn]:
    """The runs to make, in the manual's order: each plan in turn, and within it each member in `members`' order; a
    group plan (`is_group_plan`) runs once, a contrast run once as the first of `members`. `members` ("",) is the
    one-member layout (the inventory's first member submits)."""
    turns: list[Turn] = []
    for plan in plans:
        whose = [""] if is_group_plan(plan) else list(members[:1]) if plan.contrast else list(members)
        turns += [Turn(plan, member) for member in whose]
    return turns


def submitting_members(turns: Iterable[Turn], inventory: Inventory) -> tuple[str, ...]:
    """Every member whose jobs the runs submit, in inventory order (their tokens are tried before a real run)."""
    wanted = {user for turn in turns for step in turn.plan.steps if isinstance(step, SubmitStep)
              for user in step_members(step, inventory.users, turn.member)}
    return tuple(user for user in inventory.users if user in wanted)


def k8s_plans(plans: Sequence[Plan], scheduler: str | None, manifests: str | None) -> tuple[list[Plan], str]:
    """The runs on a plain Kubernetes cluster, with the plans' jobs replaced by the chosen form's manifests; the
    plan's `kube-batch` runs go to the form's gang scheduler. Returns (plans, form)."""
    form = manifests or ("volcano" if scheduler == "volcano" else "kube-batch")
    if scheduler in ("kube-batch", "volcano") and scheduler != FORMS[form].scheduler:
        raise HivedlabError(f"--scheduler {scheduler} does not read the {form} manifests' PodGroups: pick "
                            f"--scheduler {FORMS[form].scheduler} or --manifests {scheduler}")
    runs = []
    for plan in plans:
        jobs = {key: replace(job, file=manifest_file(job.file, form)) for key, job in plan.jobs.items()}
        if not all((JOBS / job.file).is_file() for job in jobs.values()):
            raise HivedlabError(f"{plan.id} has no Kubernetes manifests under jobs/: on --cluster k8s only "
                                "kubeflow-gang runs (docs/kubeflow-on-kubernetes.md)")
        wanted = [scheduler] if scheduler else list(plan.schedulers)
        for name in wanted:
            if name == "hived":
                raise HivedlabError("a plain Kubernetes cluster runs no HiveD: --scheduler default, kube-batch or "
                                    "volcano")
            runs.append(replace(plan, jobs=jobs).for_scheduler(FORMS[form].scheduler if name == "kube-batch" else name))
    return runs, form

