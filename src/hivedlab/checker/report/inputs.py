"""Read a run directory into plain data for the report: run.json, inventory, environment records, experiments.

Reading never fails on a missing or broken part: each problem becomes a line in `problems` and the report says
what is missing. Only an unusable RUN_DIR itself raises `HivedlabError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import read_json
from hivedlab.basics.resources import EXPERIMENTS, SMOKE_PLANS
from hivedlab.basics.text import Text
from hivedlab.checker.judging.judge import judge_file, to_json
from hivedlab.checker.judging.pod_facts import vc_nodes_from_config
from hivedlab.checker.report.timeline import ExperimentTimeline, timeline_for_chart
from hivedlab.env_record import EnvRecord, env_record_from_json
from hivedlab.evidence import RehearsalSigns, iter_evidence
from hivedlab.lab_group.inventory import inventory_from_mapping, read_inventory
from hivedlab.plans.loader import Plan, load_plan
from hivedlab.rundir import (
    ENV,
    EVIDENCE,
    RUN_RECORD,
    VERDICTS,
    Ends,
    RunDir,
    RunOutcome,
    RunRecord,
    evidence_path,
    holds_run,
    verdicts_path,
)

UNKNOWN = "unknown"



# A problem reading the run directory: in both languages where hivedlab words it, else the English it was given
# (an exception's text, a JSON file's reading error). The report says it in its language (`context.problem_line`).
Said = str | Text

@dataclass(frozen=True)
class MemberInfo:
    name: str
    hostname: str = ""
    ip: str = ""
    roles: tuple[str, ...] = ()
    user: str = ""  # the OpenPAI user (a member's turn's folder: experiments/<id>/<user>/)


@dataclass(frozen=True)
class PrintedEnv:
    """An environment record as the report prints it (`hivedlab.env_record.EnvRecord`, each field as text)."""

    member: str
    source: str  # file name under env/
    hostname: str = ""
    ip: str = ""
    os: str = ""
    vcpus: str = ""
    gpu_model: str = ""
    gpu_count: str = ""
    driver_version: str = ""
    cuda_version: str = ""
    docker_version: str = ""
    docker_default_runtime: str = ""
    openpai_version: str = ""


@dataclass(frozen=True)
class PlanInfo:
    """What the report reads of an experiment's plan (labs/experiments/<id>.yaml), derived from the one loaded `Plan`
    (none when the plan is missing or broken: then a bare row named by the id)."""

    id: str
    source: Plan | None = None

    @property
    def order(self) -> int:
        return self.source.order if self.source else 99

    @property
    def title_zh(self) -> str:
        return self.source.title["zh"] if self.source else ""

    @property
    def title_en(self) -> str:
        return self.source.title["en"] if self.source else ""

    @property
    def hived_config(self) -> str:
        return self.source.hived_config if self.source else ""

    @property
    def questions_zh(self) -> tuple[str, ...]:
        return self.source.questions["zh"] if self.source else ()

    @property
    def questions_en(self) -> tuple[str, ...]:
        return self.source.questions["en"] if self.source else ()

    @property
    def optional(self) -> bool:
        """An optional plan: its own report section, not a row of the manual's table."""
        return self.source.optional if self.source else False

    @property
    def row_name(self) -> Text | None:
        """The manual's row name and question (the plan's `report_row`)."""
        return self.source.row_name if self.source else None

    @property
    def row_question(self) -> Text | None:
        return self.source.row_question if self.source else None


@dataclass(frozen=True)
class ExperimentInputs:
    id: str
    plan: PlanInfo
    verdict: dict[str, Any] | None  # verdict result (verdict.schema.json), None when missing or unreadable
    job_files: tuple[str, ...]  # run-dir-relative paths of the job protocols as submitted
    evidence: str | None  # run-dir-relative path of evidence.jsonl when it exists
    timeline: ExperimentTimeline
    nodes: tuple[str, ...] = ()
    vc_nodes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    problems: tuple[Said, ...] = ()
    folder: str = ""  # run-dir-relative folder of this run: experiments/<id>, or experiments/<id>/<user> for a turn
    member: str = ""  # the user whose turn this run is ("" for the group's run in experiments/<id>/)
    submitters: tuple[str, ...] = ()  # the users whose jobs the run submitted (run.json `members`), when recorded
    # every run of the experiment in the folder when members took turns (the group's run first, then each member's
    # turn in inventory order); this object's own fields are then those of the first of them
    turns: tuple[ExperimentInputs, ...] = ()


@dataclass(frozen=True)
class RunInputs:
    run_dir: Path
    cluster: str  # sim | pai | unknown
    record: RunRecord | None  # None when run.json is missing or unreadable
    members: tuple[MemberInfo, ...]
    env: dict[str, PrintedEnv]
    openpai_version: str
    experiments: tuple[ExperimentInputs, ...]
    problems: tuple[Said, ...] = ()
    smoke: ExperimentInputs | None = None  # the smoke test (manual 3.2): a short section, not an experiment row
    rehearsal: bool = False  # the evidence is the rehearsal cluster's (`rehearsal_evidence`)
    emulated_nodes: tuple[str, ...] = ()


def _read_json(path: Path) -> tuple[Any, str | None]:
    try:
        return read_json(path, path.name), None
    except HivedlabError as exc:
        return None, str(exc)


def _text(value: Any) -> str:
    if value is None or isinstance(value, (dict, list)):
        return ""
    return str(value).strip()


def load_members(run_dir: Path) -> tuple[tuple[MemberInfo, ...], list[str]]:
    path = RunDir(run_dir).inventory_path
    if not path.is_file():
        return (), [f"{path.name} is missing: member names come from the environment records"]
    try:
        inventory = inventory_from_mapping(*read_inventory(path), strict=False)
    except HivedlabError as exc:
        return (), [str(exc).replace(str(run_dir) + "/", "")]
    members = tuple(MemberInfo(m.name, m.hostname, m.ip, m.roles, m.user) for m in inventory.members)
    return members, []


def printed_env(record: EnvRecord, source: str) -> PrintedEnv:
    """A record's fields as the report prints them (a missing one empty), the member named by the file if not by it."""
    return PrintedEnv(
        member=_text(record.member) or Path(source).stem,
        source=source,
        hostname=_text(record.hostname),
        ip=_text(record.ip),
        os=_text(record.os),
        vcpus=_text(record.vcpus),
        gpu_model=_text(record.gpu_model),
        gpu_count=_text(record.gpu_count),
        driver_version=_text(record.driver_version),
        cuda_version=_text(record.cuda_version),
        docker_version=_text(record.docker_version),
        docker_default_runtime=_text(record.docker_default_runtime),
        openpai_version=_text(record.openpai_version),
    )


def load_env(run_dir: Path) -> tuple[dict[str, PrintedEnv], list[str]]:
    folder = RunDir(run_dir).env_dir
    records: dict[str, PrintedEnv] = {}
    problems: list[str] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        data, problem = _read_json(path)
        typed = None if problem else env_record_from_json(data)
        record = None if typed is None else printed_env(typed, path.name)
        if record is None:
            problems.append(problem or f"{ENV}/{path.name}: not an environment record")
            continue
        records[record.member] = record
    return records, problems


def plan_info(experiment: str) -> PlanInfo:
    """The shipped plan's view; a bare PlanInfo when there is none (or it is broken)."""
    try:
        return PlanInfo(experiment, load_plan(experiment))
    except HivedlabError:
        return PlanInfo(experiment)


def _vc_nodes(
    run_dir: Path, plan: PlanInfo, timeline: ExperimentTimeline
) -> tuple[dict[str, tuple[str, ...]], Text | None]:
    """Each VC's nodes under the config the experiment ran with: the log's config-switch, else hived/<name>.yaml."""
    if timeline.vc_nodes:
        return dict(timeline.vc_nodes), None
    name = timeline.config_name or plan.hived_config
    path = RunDir(run_dir).hived_config(name)
    if name and path.is_file():
        try:
            found = vc_nodes_from_config(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            found = {}
        if found:
            return found, None
    return {}, Text("不知道实验用的是哪份 HiveD 配置：图中不画 VC 的边界",
                    "the HiveD config used is unknown: the chart shows no VC boundaries")


def load_experiment(
    run_dir: Path, experiment: str, run_tag: str = "", outcome: RunOutcome | None = None, member: str = ""
) -> ExperimentInputs:
    """One run's inputs: the experiment's (`experiments/<id>/`), or a member's turn (`experiments/<id>/<member>/`);
    `outcome` is the run record's outcome of this run when recorded."""
    run_id = f"{experiment}/{member}" if member else experiment
    where = RunDir(run_dir)
    folder = where.run_folder(run_id)
    rel = folder.relative_to(run_dir).as_posix()
    plan = plan_info(experiment)
    problems: list[Said] = []
    if outcome is not None and outcome.status not in ("", "finished"):
        why = f" ({outcome.reason})" if outcome.reason else ""
        why_zh = f"（{outcome.reason_zh or outcome.reason}）" if outcome.reason_zh or outcome.reason else ""
        problems.append(Text(f"{run_id} 的运行没有完成：{Ends.ZH.get(outcome.status, outcome.status)}{why_zh}",
                             f"the run of {run_id} did not finish: {outcome.status}{why}"))
    verdict: dict[str, Any] | None = None
    log = evidence_path(folder)
    if verdicts_path(folder).is_file():
        data, problem = _read_json(verdicts_path(folder))
        if problem or not isinstance(data, dict):
            problems.append(f"{rel}/{problem or f'{VERDICTS}: not a verdict result'}")
        else:
            verdict = data
    elif log.is_file():
        try:
            verdict = to_json(judge_file(log, experiment))
        except HivedlabError as exc:
            problems.append(Text(f"缺少 {rel}/{VERDICTS}，证据日志也无法判定：{exc}",
                                 f"{rel}/{VERDICTS} is missing and the log cannot be judged: {exc}"))
        else:
            problems.append(Text(f"缺少 {rel}/{VERDICTS}：已根据证据日志重新判定",
                                 f"{rel}/{VERDICTS} is missing: judged now from the evidence log"))
    else:
        problems.append(Text(f"缺少 {rel}/{VERDICTS}", f"{rel}/{VERDICTS} is missing"))
    evidence = f"{rel}/{EVIDENCE}" if log.is_file() else None
    if evidence is None:
        problems.append(Text(f"缺少 {rel}/{EVIDENCE}", f"{rel}/{EVIDENCE} is missing"))
    timeline = timeline_for_chart(log, run_tag) if evidence else ExperimentTimeline()
    problems.extend(timeline.problems)
    vc_nodes, unknown_config = _vc_nodes(run_dir, plan, timeline)
    if unknown_config and evidence:
        problems.append(unknown_config)
    nodes = tuple(dict.fromkeys([*(n for members in vc_nodes.values() for n in members), *timeline.nodes]))
    jobs_folder = where.jobs_folder(run_id)
    listed = sorted(jobs_folder.iterdir()) if jobs_folder.is_dir() else []
    job_files = tuple(p.relative_to(run_dir).as_posix() for p in listed if p.is_file() and not p.name.startswith("."))
    return ExperimentInputs(experiment, plan, verdict, job_files, evidence, timeline, nodes, vc_nodes,
                            tuple(problems), rel, member)


def turn_members(folder: Path, users: tuple[str, ...] = ()) -> list[str]:
    """The members' turns in an experiment's folder (sub-folders holding a run), inventory order first."""
    found = sorted(p.name for p in folder.iterdir() if p.is_dir() and holds_run(p)) if folder.is_dir() else []
    return [u for u in users if u in found] + [u for u in found if u not in users]


def load_experiment_runs(run_dir: Path, experiment: str, record: RunRecord | None,
                         users: tuple[str, ...] = ()) -> ExperimentInputs:
    """An experiment with every run of it in the folder: the group's run (`experiments/<id>/`) and each member's turn
    (`experiments/<id>/<user>/`, docs/evidence.md); the first is the experiment's own fields, all are its `turns`."""
    record = record or RunRecord()
    folder = RunDir(run_dir).run_folder(experiment)
    members = turn_members(folder, users)
    loaded = []
    for member in ([""] if holds_run(folder) or not members else []) + members:
        run_id = f"{experiment}/{member}" if member else experiment
        who = record.members.get(run_id)
        submitters = who if who is not None else (member,) if member else ()
        loaded.append(replace(load_experiment(run_dir, experiment, record.run_tag, record.outcomes.get(run_id),
                                              member), submitters=submitters))
    return replace(loaded[0], turns=tuple(loaded)) if members else loaded[0]


def load_run(run_dir: Path) -> RunInputs:
    """Everything the report prints, read from a run directory (see docs/architecture.md, "Run directory")."""
    if not run_dir.is_dir():
        raise HivedlabError(f"{run_dir}: not a run directory (no such folder)")
    problems: list[Said] = []
    where = RunDir(run_dir)
    record: RunRecord | None = None
    if where.record_path.is_file():
        data, problem = _read_json(where.record_path)
        if problem or not isinstance(data, dict):
            problems.append(problem or f"{RUN_RECORD}: not a JSON object")
        else:
            record = RunRecord.from_json(data)
    else:
        problems.append(Text(f"缺少 {RUN_RECORD}：不知道实验运行在哪种集群上",
                             f"{RUN_RECORD} is missing: the cluster the experiments ran on is unknown"))
    ids = where.experiment_ids()
    if not ids and record is None:
        raise HivedlabError(f"{run_dir}: not a run directory (no {RUN_RECORD} and no {where.experiments_dir.name}/)")
    cluster = record.cluster if record and record.cluster else UNKNOWN
    if cluster not in ("sim", "pai", "k8s"):
        folders = [where.run_folder(e) for e in ids]
        folders += [p for f in folders for p in f.iterdir() if p.is_dir()]  # members' turns
        sources = {s for f in folders for s in (timeline_source(f),) if s}
        cluster = "sim" if sources == {"sim"} else "pai" if sources == {"k8s"} else UNKNOWN
    members, member_problems = load_members(run_dir)
    env, env_problems = load_env(run_dir)
    users = tuple(m.user for m in members)
    loaded = [load_experiment_runs(run_dir, e, record, users) for e in ids]
    experiments = tuple(sorted((x for x in loaded if not is_smoke(x.id)), key=lambda x: (x.plan.order, x.id)))
    rehearsal, emulated = rehearsal_evidence(run_dir, record, loaded)
    return RunInputs(
        run_dir=run_dir,
        cluster=cluster,
        record=record,
        members=members,
        env=env,
        openpai_version=record.openpai_version if record else "",
        experiments=experiments,
        problems=(*problems, *member_problems, *env_problems),
        smoke=next((x for x in loaded if is_smoke(x.id)), None),
        rehearsal=rehearsal,
        emulated_nodes=emulated,
    )


def rehearsal_evidence(run_dir: Path, record: RunRecord | None,
                       runs: list[ExperimentInputs]) -> tuple[bool, tuple[str, ...]]:
    """Whether the evidence is the rehearsal cluster's, and its emulated nodes: run.json's `cluster_kind` says so,
    or else the logs do (the experiments', then the contrast runs'): pods that ran in emulated containers are never
    presented as a real cluster's, whatever run.json holds."""
    if record is not None and record.rehearsal:
        nodes = record.cluster_kind.get("emulated_nodes")
        return True, tuple(str(n) for n in nodes) if isinstance(nodes, list) else ()
    shown = [t.timeline for run in runs for t in run.turns or (run,) if t.timeline.emulated]
    if shown:
        return True, tuple(dict.fromkeys(n for t in shown for n in t.emulated_nodes))
    signs = RehearsalSigns()
    for log in sorted(RunDir(run_dir).home(contrast=True).glob(f"*@*/{EVIDENCE}")):
        signs.add(RehearsalSigns.of(iter_evidence(log)))
    return signs.found, tuple(signs.nodes)


def is_smoke(experiment: str) -> bool:
    """A smoke-test plan (labs/smoke/), reported in a section of its own rather than as an experiment row."""
    return (SMOKE_PLANS / f"{experiment}.yaml").is_file() and not (EXPERIMENTS / f"{experiment}.yaml").is_file()


def timeline_source(folder: Path) -> str:
    """The `source` of an experiment's evidence log's first record ("" when unknown)."""
    path = evidence_path(folder)
    try:
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
        data = json.loads(first)
    except (OSError, ValueError, UnicodeDecodeError):
        return ""
    return _text(data.get("source")) if isinstance(data, dict) else ""

