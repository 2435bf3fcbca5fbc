"""The run directory: the one owner of its layout and of its record, `run.json`.

Its layout is `LAYOUT` below, written out once: the "Run directory" section of docs/architecture.md is generated from
it (`layout_block`). No other module spells these names: the runner, the CLI, the report, grading and the backends ask
this one. Reading the record is tolerant (a grader reads forged files): a field of the wrong type is dropped, never
trusted. How a run ends (`RunOutcome`, `UserStop`) is here too: run.json and the user's stops record it.

Size: over 400 lines because the run directory's names, its layout, its record and how a run ends are one contract,
read together by the runner, the checker, the report and the grader.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hivedlab.basics.files import write_atomic

RUN_RECORD = "run.json"
INVENTORY = "inventory.yaml"
EVIDENCE = "evidence.jsonl"
VERDICTS = "verdicts.json"
CLAIMS = "claims.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
CHART_PNG = "timeline.png"  # a run's chart, in its folder
CHART_SVG = "timeline.svg"
EXPERIMENTS = "experiments"
CONTRAST = "contrast"
JOBS = "jobs"
HIVED_CONFIGS = "hived"
ENV = "env"
REPLACED = "replaced"
PAI_STATE = "pai"
PAI_SUBMITTED = "submitted.json"  # in pai/: the jobs a real run submitted
PAI_CALLS = "rest-calls.jsonl"  # in pai/: its REST call log
PAI_STOPS = "user-stops.jsonl"  # in pai/: the user's stops of the run's jobs (`UserStop`)
FONTS = "fonts"  # the CJK font report.html declares
RUN_HOMES = (EXPERIMENTS, CONTRAST)  # the folders a run's own folder sits in


def run_folder_name(run_id: str, contrast: bool = False) -> str:
    """A run's own folder relative to the run directory: `experiments/<id>`, `experiments/<id>/<user>` or
    `contrast/<id>@<scheduler>`."""
    return f"{CONTRAST if contrast else EXPERIMENTS}/{run_id}"


def hived_config_name(name: str) -> str:
    """A HiveD config's file relative to its home (the run directory, or `contrast/`)."""
    return f"{HIVED_CONFIGS}/{name}.yaml"


def env_record_name(member: str) -> str:
    """A member's environment record relative to the run directory."""
    return f"{ENV}/{member}.json"


# The layout, a row per path: (path, what it holds); docs/architecture.md's "Run directory" block is `layout_block()`.
LAYOUT: tuple[tuple[str, str], ...] = (
    (RUN_RECORD, "the run record (RunRecord): hivedlab version, cluster (sim|pai|k8s), seed, run tag, sessions (one "
                 "per resumed real session), finished, experiments and contrast runs, each run's outcome and whose "
                 "jobs it submitted (`outcomes`, `members`: by run, `<id>` or `<id>/<user>`), and `hardware`: by run "
                 "{on: group} or {on: manual, why: {zh, en}} (below); real runs: `openpai_version`; `cluster_kind` "
                 "{kind: rehearsal, emulated_nodes} on the rehearsal cluster; plain Kubernetes: `gpu_nodes`"),
    (INVENTORY, "the group inventory used"),
    (env_record_name("<member>"), "environment records (hivedlab env); none on the simulator"),
    (hived_config_name("<two-vc|one-vc>"), "HiveD configs as used"),
    (f"{JOBS}/<experiment>/<job>.yaml", "job protocols exactly as submitted"),
    (f"{run_folder_name('<id>')}/{EVIDENCE}", "the evidence log (docs/evidence.md)"),
    (f"{run_folder_name('<id>')}/{VERDICTS}", "the verdicts (verdict result schema)"),
    (f"{run_folder_name('<id>')}/{CHART_PNG}, {CHART_SVG}", "the run's timeline chart"),
    (f"{run_folder_name('<id>/<user>')}/", f"a member's turn (--member, --each-member): its evidence, verdicts, "
                                            f"chart; jobs under {JOBS}/<id>/<user>/ (docs/evidence.md, \"several "
                                            f"members\")"),
    (f"{run_folder_name('<id>@<scheduler>', contrast=True)}/", "runs without HiveD (evidence, verdicts, chart): "
                                                               "ungraded, docs/other-schedulers.md"),
    (f"{CONTRAST}/{HIVED_CONFIGS}/", "the contrast runs' HiveD configs as used"),
    (f"{CONTRAST}/{JOBS}/<id>@<scheduler>/", "the contrast runs' job files as submitted"),
    (f"{REPORT_MD}, {REPORT_HTML}, {CLAIMS}", "the report and its machine-readable claims (`hivedlab report`)"),
    (f"{FONTS}/", "the CJK font report.html declares (@font-face), copied from its package"),
    (f"{PAI_STATE}/{PAI_SUBMITTED}", "a real OpenPAI run's submitted jobs (what `hivedlab stop` stops)"),
    (f"{PAI_STATE}/{PAI_CALLS}", "a real OpenPAI run's REST call log"),
    (f"{PAI_STATE}/{PAI_STOPS}", "the user's stops of the run's jobs (`hivedlab stop`, the Ctrl-C question): "
                                 "who, what, when; the run then ends `stopped`"),
    (f"{REPLACED}/<UTC time>/", "earlier simulated runs moved aside by `run --replace` (never deleted)"),
)


def layout_block(width: int = 118) -> str:
    """`LAYOUT` as the fenced block of docs/architecture.md's "Run directory": a path, then what it holds, wrapped."""
    column = max(len(path) for path, _ in LAYOUT) + 3
    lines = ["```", "out/"]
    for path, what in LAYOUT:
        words, line = what.split(), f"  {path}".ljust(column) + "#"
        for word in words:
            if len(line) + 1 + len(word) > width and not line.endswith("#"):
                lines.append(line)
                line = " " * column + "#"
            line += " " + word
        lines.append(line)
    return "\n".join([*lines, "```"])


class Ends:
    """The ways a run ends: `RunOutcome.status`, the `end` record's `status`."""

    FINISHED, INTERRUPTED, STOPPED, REFUSED, FAILED = "finished", "interrupted", "stopped", "refused", "failed"
    ZH = {FINISHED: "已完成", INTERRUPTED: "被中断", STOPPED: "被用户停止", REFUSED: "提交被拒绝", FAILED: "失败"}


@dataclass(frozen=True)
class RunOutcome:
    """How one run ended: the one contract its `end` record and `run.json` both state, and the only thing the
    checker, the report and the grader read about it (docs/architecture.md, "How a run ends").

    `finished`: every step ran; `interrupted`: Ctrl-C; `stopped`: the user stopped its jobs (`hivedlab stop`, or yes
    to the run's Ctrl-C question), `by` whom; `refused`: the rest-server refused a submission the plan expected it
    to accept, or accepted one it expected refused; `failed`: the cluster could not do what a step needed (a wait
    timed out, the cluster stopped answering). `reason` (en) and `reason_zh` say why in one sentence, `at` when
    (UTC, the evidence's time format); both are empty for a finished run."""

    status: str
    reason: str = ""
    reason_zh: str = ""
    at: str = ""
    by: str = ""
    jobs: tuple[str, ...] = ()  # `stopped`: the jobs the user stopped, `user~job_name`

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"status": self.status, "reason": self.reason}
        found.update({key: value for key, value in
                      (("reason_zh", self.reason_zh), ("at", self.at), ("by", self.by)) if value})
        if self.jobs:
            found["jobs"] = list(self.jobs)
        return found

    def end_payload(self) -> dict[str, Any]:
        """The evidence log's `end` record's fields (the `type` aside): only those that are set."""
        return {key: value for key, value in self.as_dict().items() if value}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RunOutcome:
        return cls(_text(data.get("status")), _text(data.get("reason")), _text(data.get("reason_zh")),
                   _text(data.get("at")), _text(data.get("by")), _texts(data.get("jobs")))


@dataclass(frozen=True)
class UserStop:
    """The user stopped some of a run's jobs: `by` (`hivedlab stop`, or the run's Ctrl-C question), `jobs`
    (`user~job_name`), `at` (UTC, the evidence's time format). Kept in `pai/user-stops.jsonl`, one per line."""

    by: str
    jobs: tuple[str, ...]
    at: str



def stopped_outcome(stops: Sequence[UserStop], jobs: Sequence[str]) -> RunOutcome | None:
    """How a run that submitted `jobs` ends when the user stopped some of them: `stopped`, by whom, which of its
    jobs and from when (the first stop); None when no stop touched them."""
    mine = [stop for stop in stops if set(stop.jobs) & set(jobs)]
    if not mine:
        return None
    first = min(mine, key=lambda stop: stop.at)
    stopped = tuple(dict.fromkeys(job for stop in mine for job in stop.jobs if job in jobs))
    when, names = first.at[11:19] or first.at, ", ".join(stopped)
    return RunOutcome(Ends.STOPPED, f"stopped by the user at {when} UTC ({first.by}: {names})",
                      f"用户于 UTC {when} 停止了任务（{first.by}：{names}）", first.at, first.by, stopped)


@dataclass(frozen=True)
class RunRecord:
    """What `run.json` records of a run. Maps are keyed by run: the experiment id, `<id>/<user>` for a member's
    turn, `<id>@<scheduler>` for a contrast run."""

    cluster: str = ""  # sim | pai | k8s
    hivedlab_version: str = ""
    seed: int | None = None
    group: str = ""
    run_tag: str = ""
    started: str = ""
    sessions: tuple[str, ...] = ()  # when each (resumed) session began
    finished: str | None = None
    experiments: tuple[str, ...] = ()
    contrast: tuple[str, ...] = ()
    outcomes: Mapping[str, RunOutcome] = field(default_factory=dict)
    members: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # whose jobs it submitted
    hardware: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # {on: group|manual, why?, notes?}
    openpai_version: str = ""  # GET /api/v2/info of the real cluster
    gpu_nodes: Mapping[str, Any] = field(default_factory=dict)  # plain Kubernetes: the GPU nodes it found
    # what kind of cluster the real backend found: {kind: rehearsal, emulated_nodes: [...]} on the rehearsal cluster
    # (real control plane, emulated kubelets and GPUs, docs/checker.md#rehearsal-cluster-evidence-grading); empty on
    # a cluster of real machines
    cluster_kind: Mapping[str, Any] = field(default_factory=dict)

    @property
    def rehearsal(self) -> bool:
        return self.cluster_kind.get("kind") == "rehearsal"

    @classmethod
    def from_json(cls, data: object) -> RunRecord:
        if not isinstance(data, Mapping):
            return cls()
        seed = data.get("seed")
        outcomes = {run: RunOutcome.from_mapping(o)
                    for run, o in _mapping(data.get("outcomes")).items() if isinstance(o, Mapping)}
        members = {run: tuple(str(u) for u in users)
                   for run, users in _mapping(data.get("members")).items() if isinstance(users, list)}
        hardware = {run: entry for run, entry in _mapping(data.get("hardware")).items() if isinstance(entry, Mapping)}
        finished = data.get("finished")
        return cls(
            cluster=_text(data.get("cluster")),
            hivedlab_version=_text(data.get("hivedlab_version")),
            seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            group=_text(data.get("group")),
            run_tag=_text(data.get("run_tag")),
            started=_text(data.get("started")),
            sessions=_texts(data.get("sessions")),
            finished=finished if isinstance(finished, str) else None,
            experiments=_texts(data.get("experiments")),
            contrast=_texts(data.get("contrast")),
            outcomes=outcomes,
            members=members,
            hardware=hardware,
            openpai_version=_text(data.get("openpai_version")),
            gpu_nodes=_mapping(data.get("gpu_nodes")),
            cluster_kind=_mapping(data.get("cluster_kind")),
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.openpai_version:
            data["openpai_version"] = self.openpai_version
        if self.gpu_nodes:
            data["gpu_nodes"] = dict(self.gpu_nodes)
        if self.cluster_kind:
            data["cluster_kind"] = dict(self.cluster_kind)
        data.update({
            "hivedlab_version": self.hivedlab_version,
            "cluster": self.cluster,
            "seed": self.seed,
            "group": self.group,
            "run_tag": self.run_tag,
            "started": self.started,
            "sessions": list(self.sessions),
            "finished": self.finished,
            "experiments": list(self.experiments),
            "contrast": list(self.contrast),
            "outcomes": {run: o.as_dict() for run, o in self.outcomes.items()},
            "members": {run: list(users) for run, users in self.members.items()},
            "hardware": {run: dict(entry) for run, entry in self.hardware.items()},
        })
        return data

    def continues(self, cluster: str, run_tag: str) -> bool:
        """Whether a run on `cluster` with `run_tag` resumes this one (and so extends its record)."""
        return (self.cluster, self.run_tag) == (cluster, run_tag)

    def merged(self, later: RunRecord) -> RunRecord:
        """This record extended by a later session of the same run: lists and maps grow, the rest is the later one's."""
        started = self.started or later.started
        sessions = self.sessions or ((self.started,) if self.started else ())
        return replace(
            later,
            started=started,
            sessions=tuple(dict.fromkeys([*sessions, *later.sessions])),
            experiments=tuple(dict.fromkeys([*self.experiments, *later.experiments])),
            contrast=tuple(dict.fromkeys([*self.contrast, *later.contrast])),
            outcomes={**self.outcomes, **later.outcomes},
            members={**self.members, **later.members},
            hardware={**self.hardware, **later.hardware},
            openpai_version=later.openpai_version or self.openpai_version,
            gpu_nodes={**self.gpu_nodes, **later.gpu_nodes},
            cluster_kind=later.cluster_kind or self.cluster_kind,
        )


@dataclass(frozen=True)
class RunDir:
    """The paths of one run directory."""

    root: Path

    @property
    def record_path(self) -> Path:
        return self.root / RUN_RECORD

    @property
    def inventory_path(self) -> Path:
        return self.root / INVENTORY

    @property
    def experiments_dir(self) -> Path:
        return self.root / EXPERIMENTS

    @property
    def env_dir(self) -> Path:
        return self.root / ENV

    @property
    def pai_state(self) -> Path:
        """A real OpenPAI run's own state: the jobs it submitted (what `hivedlab stop` stops), its REST call log."""
        return self.root / PAI_STATE

    @property
    def pai_submitted(self) -> Path:
        return self.pai_state / PAI_SUBMITTED

    @property
    def report_md(self) -> Path:
        return self.root / REPORT_MD

    @property
    def report_html(self) -> Path:
        return self.root / REPORT_HTML

    @property
    def claims(self) -> Path:
        return self.root / CLAIMS

    def home(self, contrast: bool = False) -> Path:
        """Where a run's job files and HiveD configs go: the run directory, or `contrast/` for a contrast run."""
        return self.root / CONTRAST if contrast else self.root

    def run_folder(self, run_id: str, contrast: bool = False) -> Path:
        """A run's own folder: `experiments/<id>/`, `experiments/<id>/<user>/` or `contrast/<id>@<scheduler>/`."""
        return self.root / run_folder_name(run_id, contrast)

    def jobs_folder(self, run_id: str, contrast: bool = False) -> Path:
        return self.home(contrast) / JOBS / run_id

    def hived_config(self, name: str, contrast: bool = False) -> Path:
        return self.home(contrast) / hived_config_name(name)

    def replaced_folder(self, stamp: str = "") -> Path:
        return self.root / REPLACED / stamp if stamp else self.root / REPLACED

    def experiment_ids(self) -> list[str]:
        folder = self.experiments_dir
        return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []

    def read_record(self) -> RunRecord | None:
        """The record, or None when there is none or it is not a JSON object."""
        try:
            data = json.loads(self.record_path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        return RunRecord.from_json(data) if isinstance(data, dict) else None

    @property
    def user_stops_path(self) -> Path:
        return self.pai_state / PAI_STOPS

    def record_user_stop(self, stop: UserStop) -> None:
        """Append a stop of the run's jobs by the user (the run reads it when its experiment ends)."""
        self.pai_state.mkdir(parents=True, exist_ok=True)
        with self.user_stops_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"by": stop.by, "jobs": list(stop.jobs), "at": stop.at}) + "\n")

    def user_stops(self) -> list[UserStop]:
        """The user's stops recorded in this run directory, in order (unreadable lines left out)."""
        try:
            lines = self.user_stops_path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        found = []
        for line in lines:
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                found.append(UserStop(_text(data.get("by")), _texts(data.get("jobs")), _text(data.get("at"))))
        return found

    def write_record(self, record: RunRecord) -> None:
        write_atomic(self.record_path, json.dumps(record.to_json(), ensure_ascii=False, indent=2) + "\n")


def evidence_path(folder: Path) -> Path:
    """A run folder's evidence log."""
    return folder / EVIDENCE


def verdicts_path(folder: Path) -> Path:
    """A run folder's verdicts, derived from its log."""
    return folder / VERDICTS


def holds_run(folder: Path) -> bool:
    """Whether a folder holds a run (its log or its verdicts)."""
    return evidence_path(folder).is_file() or verdicts_path(folder).is_file()


def run_location(log: Path) -> tuple[Path, str]:
    """The run directory and the run's id of a log at `<run>/experiments/<id>/evidence.jsonl` (or `contrast/`), or of
    a member's turn at `<run>/experiments/<id>/<user>/evidence.jsonl` (id `<id>/<user>`); for a log outside a run
    directory, its folder's grandparent and its folder's name."""
    folder = log.resolve().parent
    parts = [folder.name]
    while folder.parent.name not in RUN_HOMES and len(parts) < 2 and folder.parent != folder:
        folder = folder.parent
        parts.insert(0, folder.name)
    if folder.parent.name not in RUN_HOMES:
        return log.resolve().parent.parent.parent, log.resolve().parent.name
    return folder.parent.parent, "/".join(parts)


def _mapping(value: object) -> dict[str, Any]:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _texts(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, Sequence) and not isinstance(
        value, str) else ()
