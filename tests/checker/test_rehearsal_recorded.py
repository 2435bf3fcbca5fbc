"""Runs recorded on the rehearsal cluster (tests/fixtures/rehearsal-recorded/; its README says how, and what the code
of the time said), judged, reported and graded again by this code: issue #41's item 2 (rehearsal evidence is named
as such whatever the command), item 3 (a stop is a stop) and item 5 (events the watch replays of earlier experiments'
pods are no pods of this log's). The smoke-not-ready folder (item 4) has its own test.

Each folder is copied, its recorded verdicts, claims and report removed, then `hivedlab check` and `hivedlab report`
(zh and en) run once per module; the controls edit a copy's logs the way tests.support.forge does (re-sealed)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hivedlab.checker.grading.batch import grade_one
from hivedlab.checker.grading.labspec import shipped_lab
from hivedlab.checker.grading.outputs import feedback_md
from hivedlab.checker.grading.rubric import Rubric, load_rubric
from hivedlab.checker.judging.judge import judge_evidence
from hivedlab.checker.judging.timeline.builder import build_timeline
from hivedlab.cli.main import main
from hivedlab.evidence import EMULATED_CONTAINER_PREFIX, iter_evidence, parse_time
from hivedlab.models.kubeflow.manifests import WAIT_REASONS
from hivedlab.models.scheduler_messages import DELETING_POD, TRANSIENT
from tests.support import forge
from tests.support.paths import FIXTURES
from tests.support.quick_charts import stub_charts

RECORDED = FIXTURES / "rehearsal-recorded"
LANGS = ("zh", "en")
# the timeline's note on events of pods the log does not hold (judging/timeline/builder.py), in each language
NEVER_APPEARED = {"zh": "有事件，却从未出现在日志中", "en": "had events but never appeared in the log"}
# what the report says of a real plain Kubernetes cluster's evidence, and of the Kubeflow rehearsal's
# (report_templates/report.<lang>.md.j2: the note under the title, and the source line)
REAL_K8S = {"zh": ("本报告的证据来自真实的普通 Kubernetes 集群", "证据来源：真实的普通 Kubernetes 集群"),
            "en": ("The evidence in this report comes from a real plain Kubernetes cluster",
                   "Evidence source: a real plain Kubernetes cluster")}
REHEARSAL_K8S = {"zh": ("本报告的证据来自演练集群（`hivedlab rehearsal up --kubeflow`）",
                        "证据来源：带 Kubeflow 的演练集群"),
                 "en": ("the evidence in this report comes from the rehearsal cluster "
                        "(`hivedlab rehearsal up --kubeflow`)",
                        "Evidence source: the rehearsal cluster with Kubeflow")}
Rec = dict[str, Any]


@dataclass(frozen=True)
class Judged:
    root: Path
    code: int  # `hivedlab check RUN_DIR`'s exit status
    reports: dict[str, str]  # language -> report.md
    claims: dict[str, Any]  # language -> claims.json


def _copy(name: str, into: Path) -> Path:
    root = into / name
    shutil.copytree(RECORDED / name, root)
    for stale in (*root.rglob("verdicts.json"), root / "claims.json", root / "report.md"):
        stale.unlink(missing_ok=True)  # nothing the recording's code wrote is read back
    return root


def _judge(root: Path) -> Judged:
    """`hivedlab check ROOT`, then `hivedlab report ROOT` in each language (into folders of its own)."""
    with pytest.MonkeyPatch.context() as patch:
        stub_charts(patch)  # these tests read the text
        code = main(["check", str(root)])
        reports, claims = {}, {}
        for lang in LANGS:
            out = root.parent / f"{root.name}-{lang}"
            assert main(["report", str(root), "--lang", lang, "--out", str(out)]) == 0
            reports[lang] = (out / "report.md").read_text(encoding="utf-8")
            claims[lang] = json.loads((out / "claims.json").read_text(encoding="utf-8"))
    return Judged(root, code, reports, claims)


def _logs(root: Path) -> list[Path]:
    return sorted(root.rglob("evidence.jsonl"))


def _records(log: Path) -> list[Rec]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def _rewrite(root: Path, change: Callable[[Rec], Rec]) -> None:
    """Every log under `root` with each record changed, the hash chain sealed again."""
    for log in _logs(root):
        forge.write(log, [change(record) for record in _records(log)])


def _verdicts(root: Path, experiment: str) -> Rec:
    return dict(json.loads((root / "experiments" / experiment / "verdicts.json").read_text(encoding="utf-8")))


# ---------------------------------------------------------------- item 2: kubeflow-gang --cluster k8s on the rehearsal


def _real_looking(record: Rec) -> Rec:
    """The record with every `emulated://` container and image id a container runtime's own."""

    def walk(node: Any, key: str = "") -> Any:
        if isinstance(node, dict):
            return {k: walk(v, k) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, key) for v in node]
        if isinstance(node, str) and node.startswith(EMULATED_CONTAINER_PREFIX):
            digest = hashlib.sha256(node.encode()).hexdigest()
            image = node.removeprefix(EMULATED_CONTAINER_PREFIX)
            return f"docker-pullable://{image}@sha256:{digest}" if key == "imageID" else f"docker://{digest}"
        return node

    return dict(walk(record))


@pytest.fixture(scope="module")
def kubeflow(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    root = _copy("kubeflow-gang-k8s", tmp_path_factory.mktemp("recorded"))
    assert "cluster_kind" not in json.loads((root / "run.json").read_text(encoding="utf-8"))  # run.json is silent
    return _judge(root)


@pytest.fixture(scope="module")
def kubeflow_real_ids(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    """The control: the same run, its pods' container ids rewritten to a real runtime's."""
    root = _copy("kubeflow-gang-k8s", tmp_path_factory.mktemp("recorded"))
    _rewrite(root, _real_looking)
    assert all("emulated" not in log.read_text(encoding="utf-8") for log in _logs(root))
    return _judge(root)


def test_the_kubeflow_runs_are_still_consistent(kubeflow: Judged) -> None:
    assert kubeflow.code == 0
    for run in ("kubeflow-gang@default", "kubeflow-gang@kube-batch"):
        verdicts = json.loads((kubeflow.root / "contrast" / run / "verdicts.json").read_text(encoding="utf-8"))
        assert verdicts["verdict"] == "consistent", run


@pytest.mark.parametrize("lang", LANGS)
def test_the_kubeflow_report_says_rehearsal_cluster_from_the_logs(kubeflow: Judged, lang: str) -> None:
    """run.json has no cluster_kind: the 64 `emulated://` container ids in each log say it."""
    report = kubeflow.reports[lang]
    assert all(words in report for words in REHEARSAL_K8S[lang]), lang
    assert not any(words in report for words in REAL_K8S[lang]), lang
    assert kubeflow.claims[lang]["rehearsal"] is True


@pytest.mark.parametrize("lang", LANGS)
def test_the_same_runs_with_a_runtimes_container_ids_are_a_real_clusters(kubeflow_real_ids: Judged,
                                                                         lang: str) -> None:
    report = kubeflow_real_ids.reports[lang]
    assert all(words in report for words in REAL_K8S[lang]), lang
    assert not any(words in report for words in REHEARSAL_K8S[lang]), lang
    assert kubeflow_real_ids.claims[lang]["rehearsal"] is False


# ---------------------------------------------------------------- item 2: the grader's line (recorded pai runs)
# Contrast runs are never graded (docs/other-schedulers.md): the grader's rehearsal line is drawn by graded
# experiments, so it is tested on the recorded vc-safety run, with run.json silent as in the Kubeflow run.


def _rehearsal_line(root: Path, rubric: Rubric) -> tuple[float, str]:
    grade = grade_one(root.name, root, rubric, shipped_lab(), judge_evidence)
    penalty = next(p for p in grade.penalties if p.penalty.check == "rehearsal-evidence")
    return penalty.points, feedback_md(grade, rubric)


def _silent_run_json(root: Path) -> Path:
    run = json.loads((root / "run.json").read_text(encoding="utf-8"))
    assert run.pop("cluster_kind")["kind"] == "rehearsal"
    (root / "run.json").write_text(json.dumps(run, indent=2), encoding="utf-8")
    return root


def test_the_grader_names_rehearsal_evidence_from_the_logs_when_run_json_is_silent(tmp_path: Path) -> None:
    rubric = load_rubric()
    assert rubric.require_real_cluster
    points, feedback = _rehearsal_line(_silent_run_json(_copy("vc-safety-after-smoke", tmp_path)), rubric)
    assert points > 0
    assert "ran on the rehearsal cluster (OpenPAI's real control plane, emulated kubelets and GPUs): vc-safety" \
        in feedback
    assert "在演练集群上运行（OpenPAI 的真实控制面，kubelet 与 GPU 为模拟）：vc-safety" in feedback


def test_the_grader_draws_no_rehearsal_line_for_a_runtimes_ids_or_a_rubric_without_a_real_cluster(
        tmp_path: Path) -> None:
    rubric = load_rubric()
    real_ids = _silent_run_json(_copy("vc-safety-after-smoke", tmp_path / "real"))
    _rewrite(real_ids, _real_looking)
    assert _rehearsal_line(real_ids, rubric)[0] == 0
    recorded = _copy("vc-safety-after-smoke", tmp_path / "recorded")
    assert _rehearsal_line(recorded, rubric)[0] > 0  # run.json says rehearsal
    assert _rehearsal_line(recorded, replace(rubric, require_real_cluster=False))[0] == 0


# ---------------------------------------------------------------- item 3: gang stopped by `hivedlab stop`


@pytest.fixture(scope="module")
def gang_stopped(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    return _judge(_copy("gang-stopped", tmp_path_factory.mktemp("recorded")))


def _stop_time(root: Path) -> str:
    """HH:MM:SS UTC of the stop, as the end record and pai/user-stops.jsonl give it (they agree)."""
    end = next(r["action"] for r in _records(root / "experiments" / "gang" / "evidence.jsonl")
               if (r.get("action") or {}).get("type") == "end")
    stops = [json.loads(line) for line in (root / "pai" / "user-stops.jsonl").read_text(encoding="utf-8").splitlines()]
    assert end["status"] == "stopped" and end["at"] == min(stop["at"] for stop in stops)
    at = parse_time(end["at"])
    assert isinstance(at, datetime)
    return at.strftime("%H:%M:%S")


def test_a_stopped_run_is_inconclusive_stopped_by_the_user(gang_stopped: Judged) -> None:
    at = _stop_time(gang_stopped.root)
    verdicts = _verdicts(gang_stopped.root, "gang")
    assert gang_stopped.code == 3  # inconclusive, none inconsistent
    assert verdicts["verdict"] == "inconclusive"
    assert verdicts["answers"] and all(a["verdict"] == "inconclusive" for a in verdicts["answers"])
    for answer in verdicts["answers"]:  # the stop is the answer, not a note after "the log ended before …"
        assert answer["answer"]["en"].startswith(f"stopped by the user at {at} UTC (hivedlab stop: ")
        assert answer["answer"]["zh"].startswith(f"用户于 UTC {at} 停止了任务（hivedlab stop：")


def _timeline_rows(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.startswith("| job-config-")]


@pytest.mark.parametrize(("lang", "stopped", "completed"), [("zh", "被用户停止", "任务已完成"),
                                                            ("en", "stopped by the user", "the job had completed")])
def test_the_timeline_says_stopped_by_the_user(gang_stopped: Judged, lang: str, stopped: str, completed: str) -> None:
    rows = _timeline_rows(gang_stopped.reports[lang])
    assert len(rows) == 3  # job-config-5's task, job-config-6's two
    assert all(row.rstrip(" |").endswith(stopped) for row in rows), rows
    assert completed not in gang_stopped.reports[lang]


def test_skip_schedule_deleting_pod_is_transient_never_a_wait_reason(gang_stopped: Judged) -> None:
    log = gang_stopped.root / "experiments" / "gang" / "evidence.jsonl"
    said = sum(DELETING_POD in json.dumps(r) for r in _records(log))
    attempts = [a for job in build_timeline(iter_evidence(log)).jobs for a in job.attempts]
    transient = [w for a in attempts for w in a.transient if DELETING_POD in w.message]
    assert said == 2 and len(transient) == said and all(w.kind == TRANSIENT for w in transient)
    assert not any(DELETING_POD in w.message or DELETING_POD in w.reason for a in attempts for w in a.waits)
    answers = json.dumps(_verdicts(gang_stopped.root, "gang"), ensure_ascii=False)
    assert DELETING_POD not in answers
    assert all(DELETING_POD not in report for report in gang_stopped.reports.values())


# ---------------------------------------------------------------- item 5: vc-safety after smoke on the same cluster


def _foreign_events(log: Path) -> tuple[set[str], list[Rec]]:
    """The pods that have events in the log but no pod record, and those events."""
    records = _records(log)
    pods = {forge.pod_of(r)["metadata"].get("uid") for r in records if forge.pod(r)}
    events = [r for r in records if (r.get("watch") or {}).get("resource") == "events"
              and (r["watch"]["object"].get("involvedObject") or {}).get("uid") not in pods]
    return {r["watch"]["object"]["involvedObject"]["uid"] for r in events}, events


def _event_time(event: Rec) -> datetime:
    stamp = parse_time((event.get("series") or {}).get("lastObservedTime") or event.get("lastTimestamp")
                       or event.get("eventTime"))
    assert isinstance(stamp, datetime)
    return stamp


@pytest.fixture(scope="module")
def vc_safety(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    return _judge(_copy("vc-safety-after-smoke", tmp_path_factory.mktemp("recorded")))


def test_the_log_holds_events_of_pods_from_before_the_run(vc_safety: Judged) -> None:
    log = vc_safety.root / "experiments" / "vc-safety" / "evidence.jsonl"
    pods, events = _foreign_events(log)
    first = parse_time(_records(log)[0]["time"])
    assert first is not None and pods and len(events) > len(pods)
    assert all(_event_time(r["watch"]["object"]) < first for r in events)


def test_replayed_events_are_not_pods_that_never_appeared(vc_safety: Judged) -> None:
    assert vc_safety.code == 0
    assert _verdicts(vc_safety.root, "vc-safety")["verdict"] == "consistent"
    assert all(NEVER_APPEARED[lang] not in report for lang, report in vc_safety.reports.items())


def test_the_same_events_during_the_run_are_noted(tmp_path: Path) -> None:
    """The control: the replayed events stamped as if they happened in the run make the note, one pod for each of
    those that waited (the timeline keeps the scheduler's wait and preemption events, not `Scheduled`)."""
    root = _copy("vc-safety-after-smoke", tmp_path)
    pods, events = _foreign_events(root / "experiments" / "vc-safety" / "evidence.jsonl")
    waited = {r["watch"]["object"]["involvedObject"]["uid"] for r in events
              if r["watch"]["object"]["reason"] in (*WAIT_REASONS, "Preempted")}
    assert 0 < len(waited) < len(pods)

    def now(record: Rec) -> Rec:
        watch = record.get("watch") or {}
        if watch.get("resource") != "events" or watch["object"]["involvedObject"].get("uid") not in pods:
            return record
        event = {k: v for k, v in watch["object"].items() if k != "series"}
        return {**record, "watch": {**watch, "object": {**event, "eventTime": record["time"]}}}

    _rewrite(root, now)
    judged = _judge(root)
    notes = {"zh": f"注意：vc-safety/evidence.jsonl：{len(waited)} 个 Pod {NEVER_APPEARED['zh']}",
             "en": f"Note: vc-safety/evidence.jsonl: {len(waited)} pod(s) {NEVER_APPEARED['en']}"}
    assert {lang: notes[lang] in report for lang, report in judged.reports.items()} == {"zh": True, "en": True}


STOP_NOTES = {"zh": "gang 的运行没有完成：被用户停止（用户于 UTC {at} 停止了任务（hivedlab stop：",
              "en": "the run of gang did not finish: stopped (stopped by the user at {at} UTC"}


@pytest.mark.parametrize(("lang", "said"), sorted(STOP_NOTES.items()))
def test_the_reports_note_of_the_stop_is_in_the_reports_language(gang_stopped: Judged, lang: str, said: str) -> None:
    assert said.format(at=_stop_time(gang_stopped.root)) in gang_stopped.reports[lang]
