"""One plan on one backend: its steps in order, every action recorded in the evidence log before the next starts
(`plan`, `config-switch`, `restart`, `submit`, `stop`, `step`, `end`; docs/experiment-plans.md)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from hivedlab.backends.protocol import Backend, JobStatus, SubmitResult
from hivedlab.basics.errors import HivedlabError, caused_by_interrupt
from hivedlab.basics.files import read_text, write_atomic
from hivedlab.basics.resources import JOBS as SHIPPED_JOBS
from hivedlab.basics.resources import shipped_name
from hivedlab.basics.text import Text
from hivedlab.evidence import EvidenceWriter
from hivedlab.lab_group.layouts import Layout, cannot_hold, manual_layout, plan_layout
from hivedlab.models.kubeflow.manifests import ManifestError, for_run, looks_like_manifests
from hivedlab.models.openpai.naming import framework_name
from hivedlab.plans.loader import RestartStep, Step, StopStep, SubmitStep, SwitchConfigStep, WaitStep
from hivedlab.rundir import Ends, RunOutcome, stopped_outcome
from hivedlab.runner.refusals import Refusal, refusal
from hivedlab.runner.run_types import ExperimentRun, RunContext, RunInterrupted, Submitted, Turn
from hivedlab.runner.turns import _base_name, job_name_for, protocol_with_name, step_members


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

    def __init__(self, turn: Turn, backend: Backend, writer: EvidenceWriter, ctx: RunContext,
                 notice: Callable[[str], None] | None = None) -> None:
        self.plan, self.backend, self.writer, self.ctx = turn.plan, backend, writer, ctx
        self.turn = turn
        self.notice = notice
        self.submitted: list[Submitted] = []
        self.refusals: list[Refusal] = []
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
        write_atomic(self.ctx.run_dir.hived_config(name, self.plan.contrast), text)
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
            name = job_name_for(base, user, self.plan.id, self.ctx.run_tag, turn=self.turn.run_id != self.plan.run_id)
            if looks_like_manifests(original):  # a TFJob and its PodGroup (cluster k8s), named as Kubernetes wants
                try:
                    text, name = for_run(original, name, gang=self.plan.scheduler != "default")
                except ManifestError as exc:
                    raise HivedlabError(f"{self.plan.id}: jobs/{job.file}: {exc.message}") from None
            else:
                text = protocol_with_name(original, name)
            write_atomic(self.ctx.run_dir.jobs_folder(self.turn.run_id, self.plan.contrast) / f"{name}.yaml", text)
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
                self.refused(refusal(user, result.job_name or name, f"{SHIPPED_JOBS.name}/{job.file}", step.expect,
                                     result.reply.status, result.reply.body))
        detail = f"expected {step.expect}, got " + "; ".join(unexpected) if unexpected else ""
        self.step(index, step, "failed" if unexpected else "reached", detail)
        return None

    def refused(self, found: Refusal) -> None:
        """Said at once, where it happens; the run then ends `refused` with the first one's sentence."""
        self.refusals.append(found)
        if self.notice:
            self.notice(found.notice(self.turn.run_id))

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

    def run(self) -> RunOutcome:
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
            stopped = self.stopped_by_user() if index else None
            if stopped is not None:  # `hivedlab stop` from another terminal: nothing more is submitted or awaited
                return stopped
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
                return RunOutcome(Ends.FAILED, failure)
        if self.refusals:
            first = self.refusals[0].sentence()
            return RunOutcome(Ends.REFUSED, first.en, first.zh)
        return RunOutcome(Ends.FINISHED)

    def stopped_by_user(self) -> RunOutcome | None:
        """A stop of this run's jobs by the user (`hivedlab stop`, or yes to the Ctrl-C question) that the run
        directory records: the run ends `stopped`, saying who stopped what and when."""
        return stopped_outcome(self.ctx.run_dir.user_stops(),
                               [f"{s.user}~{s.job_name}" for s in self.submitted if s.accepted])

    def end(self, outcome: RunOutcome) -> RunOutcome:
        """The log's `end` record, and the outcome as run.json keeps it (with the end's time)."""
        at = self.backend.now()
        self.writer.write_action("end", outcome.end_payload(), time=at)
        return replace(outcome, at=at) if outcome.status != Ends.FINISHED and not outcome.at else outcome


def run_plan(turn: Turn, backend: Backend, writer: EvidenceWriter, ctx: RunContext,
             notice: Callable[[str], None] | None = None) -> ExperimentRun:
    """Run one turn of a plan; always ends the log with an `end` record (`hivedlab.rundir.RunOutcome`: finished,
    refused, failed with the reason, interrupted, stopped by the user). `notice` is told of a refusal the moment it
    happens."""
    runner = _PlanRun(turn, backend, writer, ctx, notice)
    try:
        outcome = runner.run()
    except HivedlabError as exc:
        outcome = RunOutcome(Ends.FAILED, str(exc))
    except BaseException as exc:
        if not caused_by_interrupt(exc):
            raise
        interrupted = RunOutcome(Ends.INTERRUPTED, "interrupted by the user (Ctrl-C)", "被用户中断（Ctrl-C）")
        ended = runner.end(runner.stopped_by_user() or interrupted)
        raise RunInterrupted(_result(runner, ended)) from None
    return _result(runner, runner.end(runner.stopped_by_user() or outcome))


def _result(runner: _PlanRun, outcome: RunOutcome) -> ExperimentRun:
    turn, writer = runner.turn, runner.writer
    return ExperimentRun(turn.plan.id, writer.path, outcome, turn.run_id, turn.plan.contrast, tuple(runner.submitted),
                         hardware=runner.hardware, layout_notes=runner.layout_notes, member=turn.member)


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


def group_seed(seed: int, group: str) -> int:
    """The simulator's seed for a group's run: the given seed (default or not) with the inventory's group name, so
    that two groups never make simulated runs that only names tell apart; identical simulated evidence then means a
    copy (docs/checker.md, "Copies")."""
    return int(hashlib.sha256(f"{group}\n{seed}".encode()).hexdigest()[:12], 16)

