"""The table of wrong logs: for every rule of every plan, under every scheduler it judges, a log that shows the
behaviour the rule's `expected` text rules out (docs/checker.md, "Every rule held to its opposite").

Each wrong log starts from one run on the simulated cluster (seed 1, the example inventory): an honest run under
HiveD or under another scheduler, or a run of a deliberately broken simulator (`BROKEN`, HiveD's answers patched for
that run). An edit then changes what happened and the records are re-sealed (`tests/support/forge.py`), as anyone
can; an honest contrast run that already shows the opposite (the default scheduler starts a gang task by task) is
used as it is.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hivedlab.backends.sim import SimCluster
from hivedlab.evidence import EvidenceWriter
from hivedlab.models import hived
from hivedlab.models.hived import messages as hived_messages
from hivedlab.models.hived.annotations import BIND_INFO
from hivedlab.plans.loader import load_plan
from hivedlab.runner import RunContext, Turn, run_plan
from hivedlab.runner.backends import Opening, backend_factory
from tests.support import forge
from tests.support.simkit import INVENTORY

Rec = forge.Rec
Records = list[Rec]
Edit = Callable[[Records], Records]
Key = tuple[str, str, str]  # (plan id, rule id, scheduler)
Base = tuple[str, str]  # (plan id, the scheduler of an honest run or the name of a broken simulator)
WAITS = ("FailedScheduling", "Unschedulable")  # kube-batch v0.4 names its wait `Unschedulable`
Ask = Callable[[dict[str, Any]], Any]  # HiveD's real answer for a (possibly changed) scheduling spec
Broken = Callable[[SimCluster, Ask, Any, dict[str, Any]], Any]  # HiveD's broken answer: (cluster, ask, pod ref, spec)


# -- broken simulators ----------------------------------------------------------------------------------
@contextlib.contextmanager
def _patched(wrap: Broken) -> Iterator[None]:
    """`SimCluster._ask_hived` answers `wrap(cluster, ask, pod ref, spec)` for the length of one run."""
    real = SimCluster._ask_hived

    def ask_hived(self: SimCluster, ref: Any, spec: dict[str, Any], nodes: list[str], phase: Any) -> Any:
        return wrap(self, lambda changed: real(self, ref, changed, nodes, phase), ref, spec)

    SimCluster._ask_hived = ask_hived  # type: ignore[method-assign]
    try:
        yield
    finally:
        SimCluster._ask_hived = real  # type: ignore[method-assign]


def _never_preempts(cluster: SimCluster, ask: Ask, ref: Any, spec: dict[str, Any]) -> Any:
    """Every preemption HiveD would make is a wait for the VC's quota instead: a higher job waits for a lower one."""
    answer = ask(spec)
    if isinstance(answer, hived.Preempt):
        return hived.Wait(hived_messages.in_vc(hived_messages.INSUFFICIENT_CAPACITY, spec["virtualCluster"]))
    return answer


def _opportunistic_waits(cluster: SimCluster, ask: Ask, ref: Any, spec: dict[str, Any]) -> Any:
    """An opportunistic pod gets nothing while another pod is bound: it waits instead of using an idle GPU."""
    if spec.get("priority", 0) < 0 and any(uid != ref.uid for uid in cluster._bound):
        return hived.Wait(hived_messages.in_physical_cluster(hived_messages.INSUFFICIENT_CAPACITY))
    return ask(spec)


def _gang_allocation_ignored(cluster: SimCluster, ask: Ask, ref: Any, spec: dict[str, Any]) -> Any:
    """`gangAllocation: false` ignored: a job's single-GPU tasks are asked for in gangs of two."""
    if spec.get("affinityGroup") is None:
        framework = ref.name.split("-", 1)[0]
        spec = {**spec, "affinityGroup": {"name": f"broken/{framework}",
                                          "members": [{"podNumber": 2, "leafCellNumber": 1}]}}
    return ask(spec)


# a broken simulator's name -> the plan it runs and HiveD's broken answer
BROKEN: dict[str, tuple[str, Broken]] = {
    "priority/never-preempts": ("priority", _never_preempts),
    "opportunistic/never-preempts": ("opportunistic", _never_preempts),
    "opportunistic/waits": ("opportunistic", _opportunistic_waits),
    "incremental/gang-allocation-ignored": ("incremental", _gang_allocation_ignored),
    "reconfig/never-preempts": ("reconfig", _never_preempts),
}


def make_run(folder: Path, plan_id: str, how: str) -> Records:
    """One run of a shipped plan on the simulated cluster under scheduler `how`, or with the broken simulator
    named `how`: its log's records."""
    broken = BROKEN.get(f"{plan_id}/{how}")
    plan = load_plan(plan_id).for_scheduler("hived" if broken else how)
    log = folder / f"{plan_id}@{how}.jsonl"
    make = backend_factory("sim", Opening(INVENTORY, 1))
    with contextlib.ExitStack() as stack:
        if broken:
            stack.enter_context(_patched(broken[1]))
        writer = stack.enter_context(EvidenceWriter(log, "sim"))
        run_plan(Turn(plan), make(plan, writer), writer, RunContext(folder, "sim", 1, INVENTORY, "s1"))
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- reading a log's records ----------------------------------------------------------------------------
def _action(record: Rec) -> dict[str, Any]:
    action: dict[str, Any] = record.get("action") or {}
    return action


def framework(records: Records, job: str, user: str = "") -> str:
    """The framework (pod name prefix) of the plan job `job` (submitted by `user`, default the first to), from its
    submit record."""
    return str(next(_action(r)["framework_name"] for r in records if _action(r).get("type") == "submit"
                    and _action(r).get("job") == job and (not user or _action(r).get("user") == user)))


def _name(record: Rec) -> str:
    obj = forge.pod(record)
    return str(obj["metadata"]["name"]) if obj else ""


def _bound(record: Rec) -> bool:
    obj = forge.pod(record)
    return bool(obj and obj["spec"].get("nodeName"))


def _uids(records: Records, pod_name: str) -> list[str]:
    """The uids of the pods named `pod_name`, in the order they appear (a re-created pod has a new uid)."""
    found: list[str] = []
    for record in records:
        uid = forge.uid_of(record)
        if uid and _name(record) == pod_name and uid not in found:
            found.append(uid)
    return found


def _index(records: Records, test: Callable[[Rec], bool]) -> int:
    return next(i for i, r in enumerate(records) if test(r))


def _is_step(record: Rec, key: str) -> bool:
    action = _action(record)
    return action.get("type") == "step" and action.get("status") == "reached" and key in (action.get("step") or {})


# -- edits ----------------------------------------------------------------------------------------------
def as_is(records: Records) -> Records:
    """The honest run itself: its scheduler already does what the rule rules out."""
    return records


def relabel(scheduler: str) -> Edit:
    """The run's plan record names another scheduler: the log claims to be that scheduler's run."""
    def edit(records: Records) -> Records:
        records = copy.deepcopy(records)
        _action(records[_index(records, lambda r: _action(r).get("type") == "plan")])["scheduler"] = scheduler
        return records
    return edit


def _started(record: Rec) -> bool:
    statuses = (forge.pod(record) or {}).get("status", {}).get("containerStatuses") or []
    return any("running" in (status.get("state") or {}) for status in statuses)


def bound_early(job: str, task: str, attempt: int = 0, user: str = "") -> Edit:
    """The pod `<framework of job>-<task>` (its `attempt`-th pod of that name) is bound and starts as soon as it
    first waited: its records from its bind to its start move to just after its first wait event, with that
    event's time."""
    def edit(records: Records) -> Records:
        name = f"{framework(records, job, user)}-{task}"
        uid = _uids(records, name)[attempt]
        bind = _index(records, lambda r: forge.uid_of(r) == uid and _bound(r))
        start = _index(records, lambda r: forge.uid_of(r) == uid and _started(r))
        created = _index(records, lambda r: forge.uid_of(r) == uid)
        wait = next(i for i, r in enumerate(records) if i > created and forge.involved(r) == name
                    and r["watch"]["object"].get("reason") in WAITS)
        moving = [i for i in range(bind, start + 1) if forge.uid_of(records[i]) == uid]
        moved = [{**records[i], "time": records[wait]["time"]} for i in moving]
        kept = [r for i, r in enumerate(records) if i not in moving]
        at = wait + 1 - sum(1 for i in moving if i <= wait)
        return [*kept[:at], *moved, *kept[at:]]
    return edit


def moved_to(job: str, task: str, node: str, user: str = "") -> Edit:
    """Every record of the first pod `<framework of job>-<task>` says it was bound to `node`, GPU 0."""
    def edit(records: Records) -> Records:
        return forge.rebind(records, _uids(records, f"{framework(records, job, user)}-{task}")[0], node, "0")
    return edit


def never_bound(job: str, *tasks: str, user: str = "") -> Edit:
    """The pods of `tasks` of `job` are never bound: every record of them that names a node is gone, so they wait
    to the end."""
    def edit(records: Records) -> Records:
        names = {f"{framework(records, job, user)}-{task}" for task in tasks}
        return forge.drop(records, lambda r: _name(r) in names and _bound(r))
    return edit


def answered(job: str, status: int, message: str) -> Edit:
    """The submission of `job` is answered with HTTP `status` and `message`; a refused job leaves no other record
    (no framework, pod or event)."""
    def edit(records: Records) -> Records:
        fw = framework(records, job)
        records = copy.deepcopy(records)
        for record in records:
            action = _action(record)
            if action.get("type") == "submit" and action.get("job") == job:
                body = {"message": message, "status": status} if status < 300 else {
                    "code": "ForbiddenUserError" if status == 403 else "InvalidProtocolError", "message": message}
                action["reply"] = {"body": body, "status": status}
                action["expect"] = "accepted" if status < 300 else "rejected"
        if status < 300:
            return records
        return forge.drop(records, lambda r: _name(r).startswith(fw) or (forge.involved(r) or "").startswith(fw)
                          or ((r.get("watch") or {}).get("resource") == "frameworks"
                              and r["watch"]["object"]["metadata"]["name"] == fw))
    return edit


def failed_at_switch(job: str) -> Edit:
    """The task of `job` that ran when the config was switched fails (exit 137) right after the switch; what the
    log said of that pod afterwards (its preemption) is gone."""
    def edit(records: Records) -> Records:
        name = f"{framework(records, job)}-train-0"
        uid = _uids(records, name)[0]
        switch = _index(records, lambda r: _is_step(r, "switch_config"))
        last = copy.deepcopy([r for r in records[:switch] if forge.uid_of(r) == uid][-1])
        obj = forge.pod_of(last)
        obj["status"]["phase"] = "Failed"
        for status in obj["status"].get("containerStatuses") or []:
            started = ((status.get("state") or {}).get("running") or {}).get("startedAt")
            status["state"] = {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": started,
                                              "finishedAt": records[switch]["time"]}}
        failed = {**last, "time": records[switch]["time"], "watch": {**last["watch"], "type": "MODIFIED"}}
        deleted = {**failed, "watch": {**failed["watch"], "type": "DELETED"}}
        later = [r for r in records[switch + 1:] if forge.uid_of(r) != uid and not (
            forge.involved(r) == name and r["watch"]["object"].get("reason") == "Preempted")]
        return [*records[:switch + 1], failed, deleted, *later]
    return edit


def retry_bound_when_free(job: str, node: str, after: str) -> Edit:
    """The re-created pod of `job` is bound to `node` GPU 0 (its first pod's bind, moved there) once the last pod of
    `after` is deleted, and runs from then on."""
    def edit(records: Records) -> Records:
        first, retry = _uids(records, f"{framework(records, job)}-train-0")[:2]
        gone = set(_uids(records, f"{framework(records, after)}-train-0"))
        freed = max(i for i, r in enumerate(records) if forge.uid_of(r) in gone and r["watch"]["type"] == "DELETED")
        template = forge.pod_of(next(r for r in records if forge.uid_of(r) == first and _bound(r)))
        old = template["spec"]["nodeName"]
        bind_annotations = {key: value.replace(old, node) if key == BIND_INFO else value
                            for key, value in template["metadata"]["annotations"].items()}
        pending = copy.deepcopy([r for r in records[:freed] if forge.uid_of(r) == retry][-1])
        forge.pod_of(pending)["status"]["phase"] = "Running"
        bind = {**pending, "time": records[freed]["time"], "watch": {**pending["watch"], "type": "MODIFIED"}}
        result = copy.deepcopy([*records[:freed + 1], bind, *records[freed + 1:]])
        for record in result[freed + 1:]:
            if forge.uid_of(record) == retry:
                obj = forge.pod_of(record)
                obj["spec"]["nodeName"] = node
                obj["metadata"]["annotations"] = {**obj["metadata"].get("annotations", {}), **bind_annotations}
        return result
    return edit


# -- the table ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WrongLog:
    """How a rule is held to its opposite: the run it starts from, the edit, and what the answer must say."""

    base: Base
    edit: Edit
    says: str  # a phrase the rule's (English) answer must hold: it names what went wrong
    what: str  # the wrong behaviour, in a few words (docs/checker.md's table)


def wrong(plan: str, how: str, edit: Edit, says: str, what: str) -> WrongLog:
    return WrongLog((plan, how), edit, says, what)


CAROL, DAN = "hostname-carol", "hostname-dan"  # the example inventory's workers: default's and vc1's (two-vc)
ACCEPTED = "Update job job-over-quota-gang-alice-incremental-s1 for user alice successfully."
OVER_QUOTA = "Job requests 4 SKUs, exceeds maximum 2 SKUs in VC default."

TABLE: dict[Key, WrongLog] = {
    ("vc-safety", "on-vc-node", "hived"): wrong(
        "vc-safety", "hived", moved_to("prod", "train-0", CAROL, user="bob"), "outside VC vc1's cells",
        "a vc1 job bound to the default VC's GPU"),
    ("vc-safety", "waits-not-borrowing", "hived"): wrong(
        "vc-safety", "hived", moved_to("prod", "train-0", CAROL, user="bob"),
        "placed outside its own VC's cells",
        "a waiting vc1 job placed on the idle default VC's GPU"),
    ("vc-safety", "one-after-another", "hived"): wrong(
        "vc-safety", "hived", bound_early("prod", "train-0", user="bob"),
        "ran on the same machine before",
        "a job bound while the one before it still runs"),
    ("priority", "high-preempts-low", "hived"): wrong(
        "priority", "never-preempts", as_is, "nothing was preempted",
        "the prod job waits until the test job ends (no preemption)"),
    ("priority", "low-retried-after-high", "hived"): wrong(
        "priority", "hived", bound_early("low", "train-0", attempt=1), "had ended",
        "the re-created test job runs again before the prod job ends"),
    ("priority", "both-on-vc1", "hived"): wrong(
        "priority", "hived", moved_to("low", "train-0", CAROL), "outside VC vc1's cells",
        "the test job bound to the default VC's GPU"),
    ("opportunistic", "oppo-starts-at-once", "hived"): wrong(
        "opportunistic", "waits", as_is, "It waited for",
        "the oppo job waits for the prod job although a GPU is idle"),
    ("opportunistic", "guest-preempts-oppo", "hived"): wrong(
        "opportunistic", "never-preempts", as_is, "nothing was preempted",
        "the default VC's test job waits for the oppo job (no preemption)"),
    ("opportunistic", "oppo-waits-for-any-gpu", "hived"): wrong(
        "opportunistic", "hived", bound_early("oppo", "train-0", attempt=1), "had ended",
        "the re-created oppo job runs at once, while the prod job still holds the GPU"),
    ("reconfig", "both-keep-running", "hived"): wrong(
        "reconfig", "hived", failed_at_switch("default-job"), "Before the next submission",
        "the switch ends the default job"),
    ("reconfig", "both-demoted", "hived"): wrong(
        "reconfig", "never-preempts", as_is, "nothing was preempted",
        "the test job waits: the running jobs kept their priority"),
    ("reconfig", "vc1-submission", "hived"): wrong(
        "reconfig", "hived", answered("late-vc1", 403, "User alice is not allowed to do operation in vc1"),
        "got HTTP 403",
        "the vc1 submission refused after the switch"),
    ("reconfig", "vc1-job-stranded", "hived"): wrong(
        "reconfig", "hived", retry_bound_when_free("vc1-job", CAROL, "default-job"),
        "a later attempt was bound",
        "the former vc1 job's new attempt runs once a GPU is free"),
    ("smoke", "every-job-ran", "hived"): wrong(
        "smoke", "hived", never_bound("single", "smoke-0", user="carol"), "never ran",
        "a member's job never runs, yet the run finished"),
    ("kubeflow-gang", "partial-start", "default"): wrong(
        "kubeflow-gang", "kube-batch", relabel("default"), "all or nothing",
        "a kube-batch run relabelled: the second job's pods wait, then bind together"),
    ("kubeflow-gang", "deadlock", "default"): wrong(
        "kubeflow-gang", "default", never_bound("dl-b", "worker-1", "worker-2"),
        "a partial start that never completed",
        "the second 3-worker job's waiting workers are never bound"),
}

for _scheduler in ("kube-batch", "volcano"):
    TABLE[("kubeflow-gang", "all-or-nothing", _scheduler)] = wrong(
        "kubeflow-gang", "default", relabel(_scheduler), "a partial start",
        "a default-scheduler run relabelled: the second job's PS and worker-0 run while worker-1 waits")
    TABLE[("kubeflow-gang", "no-deadlock", _scheduler)] = wrong(
        "kubeflow-gang", "default", relabel(_scheduler), "started partially instead of waiting whole",
        "a default-scheduler run relabelled: the second 3-worker job starts partially, then completes")

GANG_SAYS = {"gang-waits": "already had tasks bound", "gang-together": "not bound in one scheduling round"}
for _rule, _says in GANG_SAYS.items():
    for _scheduler in ("hived", "kube-batch"):
        TABLE[("gang", _rule, _scheduler)] = wrong(
            "gang", _scheduler, bound_early("gang", "train-0"), _says,
            "the gang's task 0 bound while the holder runs, task 1 only after it")
    TABLE[("gang", _rule, "default")] = wrong(
        "gang", "default", as_is, _says, "the default scheduler's own run: it starts the gang task by task")

INCREMENTAL_SAYS = {"starts-partially": "It waited for", "tasks-one-after-another": "it waited as a whole"}
for _rule, _says in INCREMENTAL_SAYS.items():
    for _scheduler, _base, _edit in (("hived", "gang-allocation-ignored", as_is), ("kube-batch", "kube-batch", as_is),
                                     ("default", "kube-batch", relabel("default"))):
        TABLE[("incremental", _rule, _scheduler)] = wrong(
            "incremental", _base, _edit, _says, "the incremental job's tasks wait for the whole job, as a gang")
for _scheduler in ("hived", "default", "kube-batch"):
    TABLE[("incremental", "over-quota-gang-rejected", _scheduler)] = wrong(
        "incremental", _scheduler, answered("over-gang", 202, ACCEPTED), "it was accepted",
        "the 4-GPU gang job accepted")
    TABLE[("incremental", "over-quota-incremental-partial", _scheduler)] = wrong(
        "incremental", _scheduler, answered("over-elastic", 400, OVER_QUOTA), "was rejected at submission",
        "the 4-GPU incremental job refused at submission")
