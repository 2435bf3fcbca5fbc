"""Run plans one after another into a run directory: prepare the folder (nothing recorded is ever lost), run each
turn on a fresh backend, and keep the run record (`hivedlab.rundir.RunRecord`) current after each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from hivedlab import __version__
from hivedlab.backends.protocol import RunInfo
from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import write_atomic
from hivedlab.evidence import EvidenceWriter, format_time, log_source
from hivedlab.lab_group.inventory import Inventory, group_change, recorded_inventory
from hivedlab.plans.loader import Plan
from hivedlab.rundir import EVIDENCE, RunRecord, evidence_path, verdicts_path
from hivedlab.runner.run_types import BackendFactory, ExperimentRun, RunContext, RunInterrupted, Turn
from hivedlab.runner.steps import run_plan
from hivedlab.runner.turns import plan_turns


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
    was moved, and at once of a submission the rest-server answered against the plan (`hivedlab.runner.refusals`).

    Nothing a run recorded is deleted: a real run resumed in the same folder appends to each experiment's log (the
    chain goes on from its last whole record); a simulated run refuses a folder that already holds the experiment,
    unless `ctx.replace` moves the earlier one to `replaced/<UTC time>/` first (`prepare_folder`)."""
    started = format_time(datetime.now(timezone.utc))
    turns = plan_turns(plans, members or (ctx.member,))
    aside = prepare_folder(ctx, turns)
    if aside is not None and notice:
        notice(f"之前的模拟结果已移到 {aside}/ / the earlier simulated run was moved to {aside}/")
    ctx.out.mkdir(parents=True, exist_ok=True)
    write_atomic(ctx.run_dir.inventory_path, _inventory_text(ctx.inventory))
    results: list[ExperimentRun] = []
    learnt = RunInfo()
    # the record first, before anything is submitted: a real run cut short in its first experiment keeps its run
    # tag, so running it again resumes it (finds its jobs by name) instead of submitting them under a new tag
    _write_record(ctx, started, results, learnt, finished=False)
    for turn in turns:
        plan = turn.plan
        folder = _run_folder(ctx, turn)
        evidence = evidence_path(folder)
        verdicts_path(folder).unlink(missing_ok=True)  # derived from the log; judged again after the run
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
                results.append(run_plan(turn, backend, writer, ctx, notice))
            except RunInterrupted as stop:  # run.json says so too, before the interrupt goes on up
                results.append(stop.run)
                _write_record(ctx, started, results, learnt.then(backend.run_info), finished=False)
                raise
            finally:
                backend.close()
                learnt = learnt.then(backend.run_info)
        _write_record(ctx, started, results, learnt, finished=False)
    _write_record(ctx, started, results, learnt, finished=True)
    return results


def _run_folder(ctx: RunContext, turn: Turn) -> Path:
    return ctx.run_dir.run_folder(turn.run_id, turn.plan.contrast)


def prepare_folder(ctx: RunContext, turns: Sequence[Turn]) -> Path | None:
    """Check, before anything runs, that no recorded evidence would be lost; with `ctx.replace`, move earlier
    simulated runs of these experiments (log, verdicts, charts, job files) to `<out>/replaced/<UTC time>/`, which it
    returns (None when nothing was moved)."""
    if _other_group(ctx):
        return _move_all_aside(ctx)
    kept = [turn for turn in turns if log_source(evidence_path(_run_folder(ctx, turn)))]
    for turn in kept:
        evidence = evidence_path(_run_folder(ctx, turn))
        source = log_source(evidence)
        if ctx.cluster != "sim" and source != "k8s":
            raise HivedlabError(f"{evidence} holds a simulated run; a real run needs its own --out folder")
        if ctx.cluster == "sim" and source != "sim":
            raise HivedlabError(f"{evidence} holds evidence from a real cluster, which hivedlab never replaces: "
                                "choose another --out folder for the simulated run")
        if ctx.cluster == "sim" and not ctx.replace:
            aside = ctx.run_dir.replaced_folder()
            raise HivedlabError(f"{ctx.out} already holds a simulated run of {turn.run_id}: choose a new --out folder, "
                                f"or pass --replace to move the earlier run to {aside}/<time>/ / "
                                f"{ctx.out} 中已有 {turn.run_id} 的模拟结果："
                                f"请换一个 --out 目录，或加 --replace 把旧结果移到 {aside}/<时间>/")
    if ctx.cluster != "sim" or not kept:
        return None
    aside = ctx.run_dir.replaced_folder(datetime.now(timezone.utc).strftime("%Y%m%dt%H%M%S%f"))
    for turn in kept:
        for source_dir in (_run_folder(ctx, turn), ctx.run_dir.jobs_folder(turn.run_id, turn.plan.contrast)):
            for path in _run_files(source_dir):
                target = aside / path.relative_to(ctx.out)
                target.parent.mkdir(parents=True, exist_ok=True)
                path.rename(target)
    return aside


def _other_group(ctx: RunContext) -> bool:
    """Whether the folder's earlier runs are another group's: refused, unless a simulated run's --replace moves them
    all aside (a folder holding real evidence is never moved)."""
    earlier = recorded_inventory(ctx.run_dir.inventory_path)
    if earlier is None:
        return False
    logs = [log for log in ctx.out.rglob(EVIDENCE) if ctx.run_dir.replaced_folder() not in log.parents]
    movable = ctx.cluster == "sim" and all(log_source(log) in (None, "sim") for log in logs)
    why = group_change(earlier, ctx.inventory, str(ctx.out), simulated=movable)
    if why and not (movable and ctx.replace):
        raise HivedlabError(why)
    return why is not None


def _move_all_aside(ctx: RunContext) -> Path:
    """Move everything in the folder but `replaced/` to `replaced/<UTC time>/`, which it returns."""
    aside = ctx.run_dir.replaced_folder(datetime.now(timezone.utc).strftime("%Y%m%dt%H%M%S%f"))
    aside.mkdir(parents=True)
    for path in sorted(ctx.out.iterdir()):
        if path != ctx.run_dir.replaced_folder():
            path.rename(aside / path.name)
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


def submitters(run: ExperimentRun) -> list[str]:
    """The users whose jobs a run submitted, in the order they first submitted."""
    return list(dict.fromkeys(s.user for s in run.submitted))


def _write_record(
    ctx: RunContext, started: str, results: list[ExperimentRun], learnt: RunInfo, finished: bool
) -> None:
    """run.json after each run: this session's record, extending the folder's when it is the same run (same
    cluster and run tag: a resumed real run)."""
    record = RunRecord(
        cluster=ctx.cluster,
        hivedlab_version=__version__,
        seed=ctx.seed,
        group=ctx.inventory.group,
        run_tag=ctx.run_tag,
        started=started,
        sessions=(started,),
        finished=format_time(datetime.now(timezone.utc)) if finished else None,
        experiments=tuple(dict.fromkeys(r.experiment for r in results if not r.contrast)),
        contrast=tuple(dict.fromkeys(r.run_id for r in results if r.contrast)),
        outcomes={r.run_id: r.outcome for r in results},
        members={r.run_id: tuple(submitters(r)) for r in results if not r.contrast},
        hardware={r.run_id: _hardware_entry(r) for r in results},
        openpai_version=learnt.openpai_version,
        gpu_nodes=dict(learnt.gpu_nodes),
        cluster_kind=learnt.cluster_kind,
    )
    previous = ctx.run_dir.read_record()
    if previous is not None and previous.continues(ctx.cluster, ctx.run_tag):
        record = previous.merged(record)
    ctx.run_dir.write_record(record)
