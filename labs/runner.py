"""Run experiment plans on a backend (simulated or real) and write the run directory (docs/architecture.md).

`run_plan` drives one plan through the `hivedlab.cluster.backend.Backend` interface and writes the runner's action records
(`plan`, `config-switch`, `submit`, `stop`, `step`, `end`) through the same `EvidenceWriter` as the backend's
observed objects. `run_experiments` runs several plans, writes run.json, the inventory, the HiveD configs and the
job files as submitted, then runs the post-run pipeline (`PIPELINE`: verdicts, report) on the run directory.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from hivedlab import __version__
from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import parse_yaml, read_json, read_text, write_atomic
from hivedlab.basics.resources import shipped_name
from hivedlab.checker.judge import judge_file
from hivedlab.checker.plans import Plan, StopStep, SubmitStep, WaitStep
from hivedlab.checker.report.build import build_report
from hivedlab.checker.verdicts import to_json
from hivedlab.cluster.backend import Backend, JobStatus, SubmitResult
from hivedlab.cluster.openpai.naming import framework_name
from hivedlab.evidence import EvidenceWriter, format_time
from hivedlab.group.inventory import Inventory
from hivedlab.group.layouts import plan_layout

MAX_JOB_NAME = 255  # spec/openpai.md §1.1
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
    reason: str = ""
    submitted: tuple[Submitted, ...] = ()
    run_id: str = ""  # the folder name: the experiment id, or `<id>@<scheduler>` for a contrast run
    contrast: bool = False  # run without HiveD, under contrast/ (docs/other-schedulers.md)


@dataclass(frozen=True)
class RunContext:
    out: Path
    cluster: str  # sim | pai
    seed: int | None
    inventory: Inventory
    run_tag: str  # makes job names unique per run: `s<seed>` on the simulator, a UTC stamp on a real cluster


def job_name_for(base: str, user: str, experiment: str, run_tag: str) -> str:
    """`<base>-<user>-<experiment>-<run>`: unique per member, experiment and run (names can never be reused,
    spec/openpai.md §4.2), within the protocol's `^[a-zA-Z0-9_-]+$`, at most 255 characters."""
    text = re.sub(r"[^a-zA-Z0-9_-]", "-", f"{base}-{user}-{experiment}-{run_tag}")
    return re.sub(r"-{2,}", "-", text).strip("-")[:MAX_JOB_NAME]


def protocol_with_name(text: str, name: str) -> str:
    """The job file's text with its top-level `name:` replaced (comments and layout kept)."""
    if not _NAME_LINE.search(text):
        return f"name: {name}\n{text}"
    return _NAME_LINE.sub(f"name: {name}", text, count=1)


def _base_name(text: str, fallback: str) -> str:
    try:
        data = parse_yaml(text, "")
    except HivedlabError:
        return fallback
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) and name else fallback


def _step_dict(step: SubmitStep | WaitStep | StopStep) -> dict[str, Any]:
    if isinstance(step, SubmitStep):
        return {"submit": {"job": step.job, "as": step.as_, "expect": step.expect}}
    if isinstance(step, WaitStep):
        return {"wait": {"job": list(step.jobs), "until": step.until, "timeout": step.timeout}}
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

    def __init__(self, plan: Plan, backend: Backend, writer: EvidenceWriter, ctx: RunContext) -> None:
        self.plan, self.backend, self.writer, self.ctx = plan, backend, writer, ctx
        self.submitted: list[Submitted] = []

    def action(self, action_type: str, payload: dict[str, Any]) -> None:
        self.writer.write_action(action_type, payload, time=self.backend.now())

    def members(self, step: SubmitStep) -> tuple[str, ...]:
        users = self.ctx.inventory.users
        return users if step.as_ == "each-member" else users[:1]

    def switch_config(self) -> None:
        name = self.plan.hived_config
        text = plan_layout(name, self.ctx.inventory).text
        write_atomic(_home(self.ctx, self.plan) / "hived" / f"{name}.yaml", text)
        self.backend.switch_config(name, text)
        self.action("config-switch", {"name": name, "text": text})

    def submit(self, index: int, step: SubmitStep) -> str | None:
        job = self.plan.jobs[step.job]
        original = read_text(job.path, f"{self.plan.id}: job file jobs/{job.file}")
        base = _base_name(original, Path(job.file).stem)
        unexpected = []
        for user in self.members(step):
            name = job_name_for(base, user, self.plan.id, self.ctx.run_tag)
            text = protocol_with_name(original, name)
            write_atomic(_home(self.ctx, self.plan) / "jobs" / self.plan.run_id / f"{name}.yaml", text)
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

    def step(self, index: int, step: SubmitStep | WaitStep | StopStep, status: str, detail: str = "") -> None:
        payload: dict[str, Any] = {"index": index, "step": _step_dict(step), "status": status}
        if detail:
            payload["detail"] = detail
        self.action("step", payload)

    def run(self) -> tuple[str, str]:
        self.action(
            "plan",
            {
                "experiment": self.plan.id,
                "plan": shipped_name(self.plan.path),
                "cluster": self.ctx.cluster,
                "seed": self.ctx.seed,
                "members": list(self.ctx.inventory.users),
                "hived_config": self.plan.hived_config,
                "scheduler": self.plan.scheduler,
            },
        )
        self.switch_config()
        for index, step in enumerate(self.plan.steps):
            if isinstance(step, SubmitStep):
                failure = self.submit(index, step)
            elif isinstance(step, WaitStep):
                failure = self.wait(index, step)
            else:
                failure = self.stop(index, step)
            if failure:
                return "failed", failure
        return "finished", ""


def run_plan(plan: Plan, backend: Backend, writer: EvidenceWriter, ctx: RunContext) -> ExperimentRun:
    """Run one plan; always ends the log with an `end` record (finished, failed with the reason, interrupted)."""
    runner = _PlanRun(plan, backend, writer, ctx)
    try:
        status, reason = runner.run()
    except KeyboardInterrupt:
        runner.action("end", {"status": "interrupted", "reason": "interrupted by the user"})
        raise
    except HivedlabError as exc:
        status, reason = "failed", str(exc)
    payload = {"status": status, "reason": reason} if reason else {"status": status}
    runner.action("end", payload)
    return ExperimentRun(plan.id, writer.path, status, reason, tuple(runner.submitted), plan.run_id, plan.contrast)


def experiment_seed(seed: int, experiment: str) -> int:
    """Each experiment's own seed, so adding an experiment does not change the others' logs."""
    return int(hashlib.sha256(f"{seed}/{experiment}".encode()).hexdigest()[:12], 16)


def run_experiments(
    plans: Sequence[Plan],
    make_backend: BackendFactory,
    ctx: RunContext,
    progress: Callable[[str], None] | None = None,
) -> list[ExperimentRun]:
    """Run plans one after another into `ctx.out`; a failed experiment is recorded and the next one runs."""
    started = format_time(datetime.now(timezone.utc))
    ctx.out.mkdir(parents=True, exist_ok=True)
    write_atomic(ctx.out / "inventory.yaml", _inventory_text(ctx.inventory))
    results: list[ExperimentRun] = []
    extra: dict[str, Any] = {}
    for plan in plans:
        folder = ctx.out / ("contrast" if plan.contrast else "experiments") / plan.run_id
        evidence = folder / "evidence.jsonl"
        for stale in (evidence, folder / "verdicts.json", *_files(_home(ctx, plan) / "jobs" / plan.run_id)):
            stale.unlink(missing_ok=True)  # a rerun into the same folder starts afresh
        if progress:
            progress(plan.run_id)
        with EvidenceWriter(evidence, "sim" if ctx.cluster == "sim" else "k8s") as writer:
            try:
                backend = make_backend(plan, writer)
            except BaseException:
                writer.close()
                if evidence.stat().st_size == 0:
                    evidence.unlink()  # no cluster, no log: leave nothing that looks like a run
                raise
            try:
                results.append(run_plan(plan, backend, writer, ctx))
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


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []


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


def _write_run_json(
    ctx: RunContext, started: str, results: list[ExperimentRun], extra: dict[str, Any], finished: bool
) -> None:
    run: dict[str, Any] = {
        **extra,
        "hivedlab_version": __version__,
        "cluster": ctx.cluster,
        "seed": ctx.seed,
        "group": ctx.inventory.group,
        "run_tag": ctx.run_tag,
        "started": started,
        "finished": format_time(datetime.now(timezone.utc)) if finished else None,
        "experiments": [r.run_id or r.experiment for r in results if not r.contrast],
        "contrast": [r.run_id for r in results if r.contrast],
        "outcomes": {r.run_id or r.experiment: {"status": r.status, "reason": r.reason} for r in results},
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
            result.verdicts[run.run_id or run.experiment] = read_json(path)
        except HivedlabError:
            continue
    return result
