"""Run experiment plans on a backend (simulated or real) and write the run directory (docs/architecture.md).

`run_plan` drives one plan through the `hivedlab.backends.protocol.Backend` interface and writes the runner's action
records (`plan`, `config-switch`, `restart`, `submit`, `stop`, `step`, `end`; docs/experiment-plans.md) through the
same `EvidenceWriter` as the backend's observed objects. `run_experiments` runs several plans, writes run.json, the
inventory, the HiveD configs and the job files as submitted, then runs the post-run pipeline (`PIPELINE`: verdicts,
report) on the run directory.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from hivedlab import __version__
from hivedlab.backends.protocol import Backend, JobStatus, SubmitResult
from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import parse_yaml, read_json, read_text, write_atomic
from hivedlab.basics.resources import JOBS, shipped_name
from hivedlab.basics.text import Text
from hivedlab.checker.judge import judge_file
from hivedlab.checker.plans import Plan, RestartStep, Step, StopStep, SubmitStep, SwitchConfigStep, WaitStep
from hivedlab.checker.verdicts import to_json
from hivedlab.evidence import EvidenceWriter, format_time, log_source
from hivedlab.group.inventory import Inventory
from hivedlab.group.layouts import Layout, cannot_hold, manual_layout, plan_layout
from hivedlab.models.kubeflow.manifests import FORMS, ManifestError, for_run, looks_like_manifests, manifest_file
from hivedlab.models.openpai.naming import framework_name

MAX_JOB_NAME = 255  # docs/openpai-model.md#top-level
_NAME_LINE = re.compile(r"^name:[^\n]*$", re.MULTILINE)

BackendFactory = Callable[[Plan, EvidenceWriter], Backend]


@dataclass(frozen=True)
class Submitted:
    user: str
    job_key: str
    job_name: str
    accepted: bool


@dataclass(frozen=True)
class ExperimentRun:
    """What running one plan gave: where its log is and how it ended."""

    experiment: str
    evidence: Path
    status: str  # finished | failed | interrupted
    run_id: str  # the folder under experiments/ or contrast/: the plan's run id (`<id>@<scheduler>` for a contrast
    #              run, `Plan.run_id`), or `<id>/<user>` for one member's turn (`turn_folder`)
    contrast: bool  # run without HiveD, under contrast/ (docs/other-schedulers.md)
    reason: str = ""
    submitted: tuple[Submitted, ...] = ()
    hardware: Text | None = None  # why it ran on the manual's simulated hardware, not the group's (`layout_for`)
    layout_notes: tuple[Text, ...] = ()  # how the config on the group's own hardware differs from the manual's
    member: str = ""  # the user whose turn this run is; "" for the group's run (the one-member layout)


@dataclass(frozen=True)
class RunContext:
    out: Path
    cluster: str  # sim | pai | k8s
    seed: int | None
    inventory: Inventory
    run_tag: str  # makes job names unique per run: `s<seed>` on the simulator, a UTC stamp on a real cluster
    replace: bool = False  # simulated runs only: move an earlier simulated run of the same experiment aside
    member: str = ""  # whose turn (a user): their runs go to `<id>/<user>/` folders; "" = the first member's, `<id>/`


@dataclass(frozen=True)
class Turn:
    """One run of a plan: the group's (`member` "") or one member's turn (docs/evidence.md, "several members")."""

    plan: Plan
    member: str = ""

    @property
    def run_id(self) -> str:
        return turn_folder(self.plan, self.member)


def job_name_for(base: str, user: str, experiment: str, run_tag: str) -> str:
    """`<base>-<user>-<experiment>-<run>`: unique per member, experiment and run (names can never be reused,
    docs/openpai-model.md#endpoints), within the protocol's `^[a-zA-Z0-9_-]+$`, at most 255 characters."""
    text = re.sub(r"[^a-zA-Z0-9_-]", "-", f"{base}-{user}-{experiment}-{run_tag}")
    return re.sub(r"-{2,}", "-", text).strip("-")[:MAX_JOB_NAME]


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


def is_group_plan(plan: Plan) -> bool:
    """Every member submits at once (vc-safety, as the manual's step 4.2 asks): the plan has no turns; it runs once
    for the group, whoever's turn it is."""
    submits = [step for step in plan.steps if isinstance(step, SubmitStep)]
    return bool(submits) and all(step.as_ == "each-member" for step in submits)


def turn_folder(plan: Plan, member: str) -> str:
    """A run's folder under experiments/ (or contrast/): `<run id>`, or `<run id>/<user>` for a member's turn. A
    contrast run (ungraded, docs/other-schedulers.md) keeps its one folder, whoever submits."""
    return f"{plan.run_id}/{member}" if member and not is_group_plan(plan) and not plan.contrast else plan.run_id


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


def _step_dict(step: Step) -> dict[str, Any]:
    if isinstance(step, SubmitStep):
        return {"submit": {"job": step.job, "as": step.as_, "expect": step.expect}}
    if isinstance(step, WaitStep):
        return {"wait": {"job": list(step.jobs), "until": step.until, "timeout": step.timeout}}
    if isinstance(step, SwitchConfigStep):
        return {"switch_config": step.config}
    if isinstance(step, RestartStep):
        return {"restart": step.component}
    return {"stop": list(step.jobs)}


def _condition(status: JobStatus, until: str) -> bool:
    if until == "submitted":
        return status.state != "UNKNOWN"
    if until == "waiting":
        return status.waiting or status.ran or status.finished
    if until == "running":
        return status.ran or status.finished
    return status.finished


class _PlanRun:
    """One plan on one backend: the steps in order, every action recorded before the next one starts."""

    def __init__(self, turn: Turn, backend: Backend, writer: EvidenceWriter, ctx: RunContext) -> None:
        self.plan, self.backend, self.writer, self.ctx = turn.plan, backend, writer, ctx
        self.turn = turn
        self.submitted: list[Submitted] = []
        self.config = turn.plan.hived_config
        self.hardware: Text | None = None
        self.layout_notes: tuple[Text, ...] = ()

    def action(self, action_type: str, payload: dict[str, Any]) -> None:
        self.writer.write_action(action_type, payload, time=self.backend.now())

    def members(self, step: SubmitStep) -> tuple[str, ...]:
        return step_members(step, self.ctx.inventory.users, self.turn.member)

    def switch_config(self, name: str, index: int | None = None) -> None:
        """Put HiveD config `name` in place: the plan's own before the first step, or a `switch_config` step's
        while jobs run (its `config-switch` record then names the step)."""
        layout, why = layout_for(name, self.ctx)
        self.hardware = why or self.hardware
        if why is None:
            notes = (Text(zh, en) for zh, en in layout.notes)
            self.layout_notes = tuple(dict.fromkeys((*self.layout_notes, *notes)))
        text = layout.text
        write_atomic(_home(self.ctx, self.plan) / "hived" / f"{name}.yaml", text)
        self.backend.switch_config(name, text)
        self.config = name
        payload: dict[str, Any] = {"name": name, "text": text}
        if index is not None:
            payload["step"] = index
        self.action("config-switch", payload)

    def switch_step(self, index: int, step: SwitchConfigStep) -> str | None:
        self.switch_config(step.config, index)
        self.step(index, step, "reached")
        return None

    def restart(self, index: int, step: RestartStep) -> str | None:
        self.backend.restart_hived()
        self.action("restart", {"component": step.component, "config": self.config, "step": index})
        self.step(index, step, "reached")
        return None

    def submit(self, index: int, step: SubmitStep) -> str | None:
        job = self.plan.jobs[step.job]
        original = read_text(job.path, f"{self.plan.id}: job file jobs/{job.file}")
        base = _base_name(original, Path(job.file).stem)
        unexpected = []
        for user in self.members(step):
            name = job_name_for(base, user, self.plan.id, self.ctx.run_tag)
            if looks_like_manifests(original):  # a TFJob and its PodGroup (cluster k8s), named as Kubernetes wants
                try:
                    text, name = for_run(original, name, gang=self.plan.scheduler != "default")
                except ManifestError as exc:
                    raise HivedlabError(f"{self.plan.id}: jobs/{job.file}: {exc.message}") from None
            else:
                text = protocol_with_name(original, name)
            write_atomic(_home(self.ctx, self.plan) / "jobs" / self.turn.run_id / f"{name}.yaml", text)
            result: SubmitResult = self.backend.submit(user, step.job, text)
            self.action(
                "submit",
                {
                    "user": user,
                    "job": step.job,
                    "job_name": result.job_name or name,
                    "framework_name": result.framework_name or framework_name(user, name),
                    "protocol": text,
                    "expect": step.expect,
                    "reply": result.reply.as_dict(),
                },
            )
            self.submitted.append(Submitted(user, step.job, result.job_name or name, result.accepted))
            if result.accepted != (step.expect == "accepted"):
                unexpected.append(f"{user}: HTTP {result.reply.status}")
        detail = f"expected {step.expect}, got " + "; ".join(unexpected) if unexpected else ""
        self.step(index, step, "failed" if unexpected else "reached", detail)
        return None

    def targets(self, keys: Iterable[str]) -> list[Submitted]:
        wanted = set(keys)
        return [s for s in self.submitted if s.job_key in wanted and s.accepted]

    def wait(self, index: int, step: WaitStep) -> str | None:
        targets = self.targets(step.jobs)
        if not targets:
            self.step(index, step, "skipped", "no accepted submission of these jobs")
            return None

        def reached() -> bool:
            return all(_condition(self.backend.job_status(t.user, t.job_name), step.until) for t in targets)

        if self.backend.advance_until(reached, step.timeout):
            self.step(index, step, "reached")
            return None
        detail = f"{', '.join(step.jobs)} not {step.until} after {step.timeout:g} s"
        self.step(index, step, "timed-out", detail)
        return detail if step.on_timeout == "fail" else None

    def stop(self, index: int, step: StopStep) -> str | None:
        for target in self.targets(step.jobs):
            reply = self.backend.stop(target.user, target.job_name)
            self.action("stop", {"user": target.user, "job_name": target.job_name, "reply": reply.as_dict()})
        self.step(index, step, "reached")
        return None

    def step(self, index: int, step: Step, status: str, detail: str = "") -> None:
        payload: dict[str, Any] = {"index": index, "step": _step_dict(step), "status": status}
        if detail:
            payload["detail"] = detail
        self.action("step", payload)

    def run(self) -> tuple[str, str]:
        payload: dict[str, Any] = {
            "experiment": self.plan.id,
            "plan": shipped_name(self.plan.path),
            "cluster": self.ctx.cluster,
            "seed": self.ctx.seed,
            "members": list(self.ctx.inventory.users),
            "hived_config": self.plan.hived_config,
            "scheduler": self.plan.scheduler,
        }
        if self.turn.member:
            payload["turn"] = self.turn.member  # whose turn: that member submits the plan's jobs
        if self.writer.first_seq > 0:
            payload["resumed"] = True  # a later session of the same run: the log already holds the earlier ones
        self.action("plan", payload)
        if self.ctx.cluster != "k8s":  # a plain Kubernetes cluster has no HiveD config to put in place
            self.switch_config(self.plan.hived_config)
        for index, step in enumerate(self.plan.steps):
            if isinstance(step, SubmitStep):
                failure = self.submit(index, step)
            elif isinstance(step, WaitStep):
                failure = self.wait(index, step)
            elif isinstance(step, SwitchConfigStep):
                failure = self.switch_step(index, step)
            elif isinstance(step, RestartStep):
                failure = self.restart(index, step)
            else:
                failure = self.stop(index, step)
            if failure:
                return "failed", failure
        return "finished", ""


def run_plan(plan: Plan | Turn, backend: Backend, writer: EvidenceWriter, ctx: RunContext) -> ExperimentRun:
    """Run one plan (a member's turn of it, or the context's member's); always ends the log with an `end` record
    (finished, failed with the reason, interrupted)."""
    turn = plan if isinstance(plan, Turn) else Turn(plan, "" if is_group_plan(plan) else ctx.member)
    runner = _PlanRun(turn, backend, writer, ctx)
    try:
        status, reason = runner.run()
    except KeyboardInterrupt:
        runner.action("end", {"status": "interrupted", "reason": "interrupted by the user"})
        raise
    except HivedlabError as exc:
        status, reason = "failed", str(exc)
    payload = {"status": status, "reason": reason} if reason else {"status": status}
    runner.action("end", payload)
    return ExperimentRun(turn.plan.id, writer.path, status, turn.run_id, turn.plan.contrast, reason,
                         tuple(runner.submitted), hardware=runner.hardware, layout_notes=runner.layout_notes,
                         member=turn.member)


def layout_for(name: str, ctx: RunContext) -> tuple[Layout, Text | None]:
    """The config for the group's workers; on the simulated cluster, for a group that cannot hold it, the config on
    the manual's hardware with why (run.json's `hardware`, docs/architecture.md)."""
    why = cannot_hold(name, ctx.inventory)
    if why is not None and ctx.cluster == "sim":
        return manual_layout(name, ctx.inventory), why
    return plan_layout(name, ctx.inventory), None


def experiment_seed(seed: int, experiment: str) -> int:
    """Each experiment's own seed, so adding an experiment does not change the others' logs."""
    return int(hashlib.sha256(f"{seed}/{experiment}".encode()).hexdigest()[:12], 16)


def run_experiments(
    plans: Sequence[Plan],
    make_backend: BackendFactory,
    ctx: RunContext,
    progress: Callable[[str], None] | None = None,
    members: Sequence[str] | None = None,
    notice: Callable[[str], None] | None = None,
) -> list[ExperimentRun]:
    """Run plans one after another into `ctx.out`; a failed experiment is recorded and the next one runs.
    `members` (users, inventory order) gives each of them a turn of every plan (`plan_turns`); by default the one
    member is `ctx.member` (the first member when ""). `notice` is told, in one line, where an earlier simulated run
    was moved.

    Nothing a run recorded is deleted: a real run resumed in the same folder appends to each experiment's log (the
    chain goes on from its last whole record); a simulated run refuses a folder that already holds the experiment,
    unless `ctx.replace` moves the earlier one to `replaced/<UTC time>/` first (`prepare_folder`)."""
    started = format_time(datetime.now(timezone.utc))
    turns = plan_turns(plans, members or (ctx.member,))
    aside = prepare_folder(ctx, turns)
    if aside is not None and notice:
        notice(f"之前的模拟结果已移到 {aside}/ / the earlier simulated run was moved to {aside}/")
    ctx.out.mkdir(parents=True, exist_ok=True)
    write_atomic(ctx.out / "inventory.yaml", _inventory_text(ctx.inventory))
    results: list[ExperimentRun] = []
    extra: dict[str, Any] = {}
    for turn in turns:
        plan = turn.plan
        folder = _run_folder(ctx, turn)
        evidence = folder / "evidence.jsonl"
        (folder / "verdicts.json").unlink(missing_ok=True)  # derived from the log; judged again after the run
        if progress:
            progress(turn.run_id)
        with EvidenceWriter(evidence, "sim" if ctx.cluster == "sim" else "k8s") as writer:
            try:
                backend = make_backend(plan, writer)
            except BaseException:
                writer.close()
                if evidence.stat().st_size == 0:
                    evidence.unlink()  # no cluster, no log: leave nothing that looks like a run
                raise
            try:
                results.append(run_plan(turn, backend, writer, ctx))
            finally:
                backend.close()
                info = getattr(backend, "run_info", None)  # optional: what a backend learnt, e.g. openpai_version
                if isinstance(info, dict):
                    extra.update(info)
        _write_run_json(ctx, started, results, extra, finished=False)
    _write_run_json(ctx, started, results, extra, finished=True)
    return results


def _home(ctx: RunContext, plan: Plan) -> Path:
    """Where a run's files go: the run directory, or for a contrast run `contrast/` (its HiveD config and jobs
    under `contrast/hived/` and `contrast/jobs/`, out of the graded files; docs/other-schedulers.md)."""
    return ctx.out / "contrast" if plan.contrast else ctx.out


def _run_folder(ctx: RunContext, turn: Turn) -> Path:
    """The folder of a run's evidence, verdicts and charts: `experiments/<id>/`, a member's turn
    `experiments/<id>/<user>/`, or `contrast/<id>@<scheduler>/`."""
    return ctx.out / ("contrast" if turn.plan.contrast else "experiments") / turn.run_id


def prepare_folder(ctx: RunContext, plans: Sequence[Plan | Turn]) -> Path | None:
    """Check, before anything runs, that no recorded evidence would be lost; with `ctx.replace`, move earlier
    simulated runs of these experiments (log, verdicts, charts, job files) to `<out>/replaced/<UTC time>/`, which it
    returns (None when nothing was moved)."""
    turns = [p if isinstance(p, Turn) else Turn(p, "" if is_group_plan(p) else ctx.member) for p in plans]
    kept = [turn for turn in turns if log_source(_run_folder(ctx, turn) / "evidence.jsonl")]
    for turn in kept:
        evidence = _run_folder(ctx, turn) / "evidence.jsonl"
        source = log_source(evidence)
        if ctx.cluster != "sim" and source != "k8s":
            raise HivedlabError(f"{evidence} holds a simulated run; a real run needs its own --out folder")
        if ctx.cluster == "sim" and source != "sim":
            raise HivedlabError(f"{evidence} holds evidence from a real cluster, which hivedlab never replaces: "
                                "choose another --out folder for the simulated run")
        if ctx.cluster == "sim" and not ctx.replace:
            raise HivedlabError(f"{ctx.out} already holds a simulated run of {turn.run_id}: choose a new --out folder, "
                                f"or pass --replace to move the earlier run to {ctx.out / 'replaced'}/<time>/ / "
                                f"{ctx.out} 中已有 {turn.run_id} 的模拟结果："
                                "请换一个 --out 目录，或加 --replace 把旧结果移到 "
                                f"{ctx.out / 'replaced'}/<时间>/")
    if ctx.cluster != "sim" or not kept:
        return None
    aside = ctx.out / "replaced" / datetime.now(timezone.utc).strftime("%Y%m%dt%H%M%S%f")
    for turn in kept:
        for source_dir in (_run_folder(ctx, turn), _home(ctx, turn.plan) / "jobs" / turn.run_id):
            for path in _run_files(source_dir):
                target = aside / path.relative_to(ctx.out)
                target.parent.mkdir(parents=True, exist_ok=True)
                path.rename(target)
    return aside


def _hardware_entry(result: ExperimentRun) -> dict[str, Any]:
    """run.json's `hardware` of one run: the manual's simulated hardware and why, or the group's own, with how its
    config differs from the manual's (the layout's notes) when it does."""
    if result.hardware:
        return {"on": "manual", "why": result.hardware.as_dict()}
    entry: dict[str, Any] = {"on": "group"}
    if result.layout_notes:
        entry["notes"] = [note.as_dict() for note in result.layout_notes]
    return entry


def _run_files(folder: Path) -> list[Path]:
    """A run's own files: those in its folder, not the member turns' folders inside an experiment's folder."""
    return [path for path in folder.iterdir() if path.is_file()] if folder.is_dir() else []


def _inventory_text(inventory: Inventory) -> str:
    if inventory.source:
        try:
            return Path(inventory.source).read_text(encoding="utf-8")
        except OSError:
            pass
    members = [
        {"name": m.name, "user": m.user, "roles": list(m.roles), "hostname": m.hostname, "ip": m.ip, "gpus": m.gpus}
        for m in inventory.members
    ]
    return yaml.safe_dump({"group": inventory.group, "members": members}, sort_keys=False, allow_unicode=True)


def _previous_run(ctx: RunContext) -> dict[str, Any]:
    """The folder's run.json when it belongs to the same run (same cluster and run tag): a resumed run extends it."""
    try:
        previous = json.loads((ctx.out / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if (not isinstance(previous, dict)
            or (previous.get("cluster"), previous.get("run_tag")) != (ctx.cluster, ctx.run_tag)):
        return {}
    return previous


def submitters(run: ExperimentRun) -> list[str]:
    """The users whose jobs a run submitted, in the order they first submitted."""
    return list(dict.fromkeys(s.user for s in run.submitted))


def _write_run_json(
    ctx: RunContext, started: str, results: list[ExperimentRun], extra: dict[str, Any], finished: bool
) -> None:
    previous = _previous_run(ctx)
    sessions = [s for s in previous.get("sessions") or [previous.get("started")] if isinstance(s, str)]
    raw_outcomes = previous.get("outcomes")
    outcomes: dict[str, Any] = raw_outcomes if isinstance(raw_outcomes, dict) else {}
    outcomes = {**outcomes, **{r.run_id: {"status": r.status, "reason": r.reason} for r in results}}
    earlier = [e for e in previous.get("experiments") or [] if isinstance(e, str)]
    earlier_contrast = [e for e in previous.get("contrast") or [] if isinstance(e, str)]
    raw_hardware = previous.get("hardware")
    hardware: dict[str, Any] = raw_hardware if isinstance(raw_hardware, dict) else {}
    hardware = {**hardware, **{r.run_id: _hardware_entry(r) for r in results}}
    raw_members = previous.get("members")
    members: dict[str, Any] = raw_members if isinstance(raw_members, dict) else {}
    members = {**members, **{r.run_id: submitters(r) for r in results if not r.contrast}}
    run: dict[str, Any] = {
        **extra,
        "hivedlab_version": __version__,
        "cluster": ctx.cluster,
        "seed": ctx.seed,
        "group": ctx.inventory.group,
        "run_tag": ctx.run_tag,
        "started": sessions[0] if sessions else started,
        "sessions": sessions if started in sessions else [*sessions, started],  # when each (resumed) session began
        "finished": format_time(datetime.now(timezone.utc)) if finished else None,
        "experiments": list(dict.fromkeys([*earlier, *(r.experiment for r in results if not r.contrast)])),
        "contrast": list(dict.fromkeys([*earlier_contrast, *(r.run_id for r in results if r.contrast)])),
        "outcomes": outcomes,  # by run: the experiment id, or `<id>/<user>` for a member's turn
        "members": members,  # by run: whose jobs it submitted, in inventory order
        "hardware": hardware,  # by run: on the group's own workers, or the manual's simulated hardware and why
    }
    write_atomic(ctx.out / "run.json", json.dumps(run, ensure_ascii=False, indent=2) + "\n")


# -- after the run: the pipeline, declared once --------------------------------------------------------------------


@dataclass(frozen=True)
class PipelineStep:
    name: str
    run: Callable[[Path, Sequence[ExperimentRun], str], str]  # (out, runs, lang) -> a short note


@dataclass
class PipelineResult:
    notes: dict[str, str] = field(default_factory=dict)
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)


def _verdicts_step(out: Path, runs: Sequence[ExperimentRun], lang: str) -> str:
    """verdicts.json per experiment, judged by the plan's rules."""
    failed = []
    for run in runs:
        try:
            result = judge_file(run.evidence, run.experiment)
        except HivedlabError as exc:
            failed.append(f"{run.experiment}: {exc}")
            continue
        text = json.dumps(to_json(result), ensure_ascii=False, indent=2) + "\n"
        write_atomic(run.evidence.parent / "verdicts.json", text)
    if failed:
        raise HivedlabError("; ".join(failed))
    return f"{len(runs)} verdict file(s)"


def _report_step(out: Path, runs: Sequence[ExperimentRun], lang: str) -> str:
    from hivedlab.checker.report.build import build_report  # matplotlib loads only when a report is made

    result = build_report(out, lang)
    return f"report: {Path(result.markdown_path).name}, {Path(result.html_path).name}, charts {len(result.charts)}"


PIPELINE: tuple[PipelineStep, ...] = (
    PipelineStep("verdicts", _verdicts_step),
    PipelineStep("report", _report_step),  # writes the charts, report.md/html and claims.json
)


def run_pipeline(out: Path, runs: Sequence[ExperimentRun], lang: str = "zh") -> PipelineResult:
    """Run every PIPELINE step in order; a step that fails is noted and the next still runs."""
    result = PipelineResult()
    for step in PIPELINE:
        try:
            result.notes[step.name] = step.run(out, runs, lang)
        except HivedlabError as exc:
            result.notes[step.name] = f"failed: {exc}"
    for run in runs:
        path = run.evidence.parent / "verdicts.json"
        try:
            result.verdicts[run.run_id] = read_json(path)
        except HivedlabError:
            continue
    return result
