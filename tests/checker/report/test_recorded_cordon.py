"""Cordons in the report: the NotReady run recorded on the rehearsal cluster (tests/fixtures/rehearsal-recorded/
smoke-not-ready), its Node records of hostname-dan edited to show a cordon and re-sealed (`tests.support.cordons`),
judged and reported again. A cordon during the run is named, with its interval and bob's pod on the node, in zh and
en, in the smoke section, its timeline table and chart and (as an experiment's) claims.json's `node_cordons`; one still
open at the end says so; a node cordoned throughout is no cordon of the run's: the report is the unedited run's. The
times and seqs are read from the edited log, not written here."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hivedlab.basics.clock import since_start, time_of_day
from hivedlab.checker.judging.timeline import build_timeline
from hivedlab.checker.report.build import _chart_data
from hivedlab.checker.report.charts import draw
from hivedlab.checker.report.charts_layout import legend_entries
from hivedlab.checker.report.context import build_claims
from hivedlab.checker.report.inputs import load_run
from hivedlab.cli.main import main
from hivedlab.evidence import Record, read_evidence
from tests.checker.report.test_node_faults import _with_log
from tests.checker.report.test_recorded_node_fault import BOB_POD, _ended, _epoch, _running
from tests.support.cordons import HOW, LOG, NODE, RECORDED, cordoned_run
from tests.support.quick_charts import stub_charts
from tests.support.records import object_of
from tests.support.report_checks import CordonSeen, check_cordon_named

LANGS = ("zh", "en")
BOB_ZH = "bob 的 job-smoke-test (bob) smoke-0"  # the zh report's name of bob's pod


@dataclass(frozen=True)
class Facts:
    """What an edited log says: hostname-dan's cordon and uncordon records, and bob's pod's run on it."""

    t0: float  # the whole second of the log's first record: the report's T+0
    cordon: Record  # the first record of hostname-dan with spec.unschedulable, after its listing
    uncordon: Record | None  # the next one without it (None: never)
    started: Record  # bob's pod's first record running on the node
    ended: Record  # its first record with its containers ended

    def t(self, record: Record) -> str:
        return since_start(_epoch(record) - self.t0)


def _cordoned(record: Record) -> bool:
    return bool(object_of(record).get("spec", {}).get("unschedulable"))


def _facts(log: Path) -> Facts:
    records = read_evidence(log).records
    dan = [r for r in records if r.kind == "object" and r.resource == "nodes"
           and object_of(r)["metadata"].get("name") == NODE]
    cordon = next(r for r in dan[1:] if _cordoned(r))
    uncordon = next((r for r in dan if r.seq > cordon.seq and not _cordoned(r)), None)
    bobs = [r for r in records if r.kind == "object" and r.resource == "pods"
            and object_of(r)["spec"].get("nodeName") == NODE
            and "bob~" in json.dumps(object_of(r)["spec"]["containers"])]
    started = next(r for r in bobs if _running(object_of(r)))
    ended = next(r for r in bobs if _ended(object_of(r)))
    return Facts(math.floor(_epoch(records[0])), cordon, uncordon, started, ended)


@dataclass(frozen=True)
class Reported:
    run: Path
    reports: dict[str, str]  # language -> report.md
    verdict: str  # smoke's, as `hivedlab check` gave it


def _judged(run: Path) -> Reported:
    reports = {}
    with pytest.MonkeyPatch.context() as patch:
        stub_charts(patch)  # the text is under test here; the chart's data below
        assert main(["check", str(run)]) == 0
        for lang in LANGS:
            out = run.parent / f"{run.name}-{lang}"
            assert main(["report", str(run), "--lang", lang, "--out", str(out)]) == 0
            reports[lang] = (out / "report.md").read_text(encoding="utf-8")
    verdicts = json.loads((run / "experiments" / "smoke" / "verdicts.json").read_text(encoding="utf-8"))
    return Reported(run, reports, verdicts["verdict"])


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Reported]:
    """Each edit of `tests.support.cordons` (and "recorded", the unedited copy) judged and reported in zh and en."""
    root = tmp_path_factory.mktemp("cordons")
    recorded = root / "recorded"
    shutil.copytree(RECORDED, recorded)
    for stale in (*recorded.rglob("verdicts.json"), recorded / "claims.json", recorded / "report.md"):
        stale.unlink()
    runs = {"recorded": recorded, **{how: cordoned_run(root / how, how) for how in HOW}}
    return {how: _judged(run) for how, run in runs.items()}


def _smoke(report: str) -> str:
    """The smoke test's part of a report: from its heading to the next one."""
    return report.split("3.2", 1)[1].split("####", 1)[0]


def test_the_edited_logs_are_sealed_and_show_the_cordon_and_bobs_pod_on_the_node(tmp_path: Path) -> None:
    for how in ("mid-run", "open"):
        log = cordoned_run(tmp_path / how, how) / LOG
        assert read_evidence(log).chain_ok
        facts = _facts(log)
        assert facts.started.seq < facts.cordon.seq < facts.ended.seq
        assert (facts.uncordon is None) == (how == "open")
        assert facts.uncordon is None or facts.cordon.seq < facts.uncordon.seq < facts.ended.seq


def test_a_cordon_mid_run_is_named_with_its_interval_and_bobs_pod_in_both_languages(
        reported: dict[str, Reported]) -> None:
    run = reported["mid-run"]
    facts = _facts(run.run / LOG)
    assert facts.uncordon is not None
    check_cordon_named({lang: _smoke(run.reports[lang]) for lang in ("en", "zh")}, CordonSeen(
        NODE, f"{time_of_day(_epoch(facts.cordon))}–{time_of_day(_epoch(facts.uncordon))} UTC",
        f"{facts.t(facts.cordon)}–{facts.t(facts.uncordon)}", f"{facts.cordon.seq}, {facts.uncordon.seq}",
        {"en": BOB_POD, "zh": BOB_ZH}, "job-smoke-test (bob)", f"{facts.t(facts.started)}–{facts.t(facts.ended)}",
        f"{facts.started.seq}, {facts.ended.seq}"))
    assert run.verdict == reported["recorded"].verdict == "consistent"


def test_a_cordon_still_open_at_the_end_says_so_in_both_languages(reported: dict[str, Reported]) -> None:
    run = reported["open"]
    facts = _facts(run.run / LOG)
    at, since = time_of_day(_epoch(facts.cordon)), facts.t(facts.cordon)
    en, zh = _smoke(run.reports["en"]), _smoke(run.reports["zh"])
    assert (f"- Node cordoned: node {NODE} cordoned from {at} UTC to the end of the log (spec.unschedulable; "
            f"{since}–…; evidence records seq {facts.cordon.seq}); the pod of {BOB_POD} was on it until "
            f"{facts.t(facts.ended)} (succeeded; seq {facts.ended.seq}).") in en
    assert (f"- 节点封锁：节点 {NODE} {at} UTC 起直至日志结束 被封锁（cordon，spec.unschedulable；{since}–…；证据记录 "
            f"seq {facts.cordon.seq}）；{BOB_ZH} 的 pod 在其上运行至 {facts.t(facts.ended)}（成功；"
            f"seq {facts.ended.seq}）。") in zh
    assert f"| — | — | — | {NODE} | {since} | … | — | node cordoned |" in en
    assert f"| — | — | — | {NODE} | {since} | … | — | 节点被封锁（cordon） |" in zh


def test_a_node_cordoned_throughout_is_not_reported(reported: dict[str, Reported]) -> None:
    run = reported["throughout"]
    records = read_evidence(run.run / LOG).records
    dan = [r for r in records if r.resource == "nodes" and object_of(r)["metadata"].get("name") == NODE]
    assert dan and all(_cordoned(r) for r in dan)  # the edit: cordoned in every record, from the listing on
    assert build_timeline(records).node_cordons == ()
    for lang in LANGS:  # the recorded NotReady fault, reported as from the unedited log, byte for byte
        assert run.reports[lang] == reported["recorded"].reports[lang]
        assert "cordon" not in run.reports[lang] and "封锁" not in run.reports[lang]


def test_a_node_drained_while_not_ready_is_both_a_fault_and_a_cordon(reported: dict[str, Reported]) -> None:
    facts = _facts(reported["drained"].run / LOG)
    assert facts.uncordon is not None
    seqs = f"seq {facts.cordon.seq}, {facts.uncordon.seq}"
    t_span = f"{facts.t(facts.cordon)}–{facts.t(facts.uncordon)}"
    for lang, fault, cordon, note in (
            ("en", "- Node fault: node hostname-dan NotReady", "- Node cordoned: node hostname-dan cordoned",
             f"succeeded; node {NODE} not Ready {t_span}; node {NODE} cordoned {t_span} |"),
            ("zh", "- 节点故障：节点 hostname-dan", "- 节点封锁：节点 hostname-dan",
             f"成功；节点 {NODE} {t_span} 未就绪；节点 {NODE} {t_span} 被封锁 |")):
        smoke = _smoke(reported["drained"].reports[lang])
        lines = [line for line in smoke.splitlines() if line.startswith(("- Node", "- 节点"))]
        assert len(lines) == 2 and lines[0].startswith(fault) and lines[1].startswith(cordon)
        assert all(seqs in line for line in lines)
        bob = next(line for line in smoke.splitlines() if line.startswith("| job-smoke-test (bob) |"))
        assert bob.endswith(note)


def test_the_chart_shades_the_cordon_with_its_own_legend_entry(reported: dict[str, Reported]) -> None:
    for how, kinds in (("mid-run", ["cordoned"]), ("open", ["cordoned"]), ("drained", ["not_ready", "cordoned"])):
        facts = _facts(reported[how].run / LOG)
        smoke = load_run(reported[how].run).smoke
        assert smoke is not None
        for lang, words in (("en", "node cordoned"), ("zh", "节点被封锁（cordon）")):
            data = _chart_data(smoke, lang)
            assert data is not None
            assert [band.kind for band in data.not_ready] == kinds
            band = data.not_ready[-1]
            assert band.node == NODE and band.open_end == (facts.uncordon is None)
            assert {data.lanes[i].node for i in band.lanes} == {NODE}
            assert band.start == pytest.approx(_epoch(facts.cordon) - facts.t0, abs=1.0)
            if facts.uncordon is not None:
                assert band.end == pytest.approx(_epoch(facts.uncordon) - facts.t0, abs=1.0)
            legend = [e.key for e in legend_entries(data, lang)]
            assert [k for k in legend if k in ("not_ready", "cordoned")] == kinds
            assert ("cordoned", words) in [(e.key, e.label) for e in legend_entries(data, lang)]
    smoke = load_run(reported["mid-run"].run).smoke
    assert smoke is not None
    data = _chart_data(smoke, "zh")
    assert data is not None
    png, svg = draw(data, "zh")  # painted: the band and its legend entry
    assert png.startswith(b"\x89PNG") and "节点被封锁" in svg and "节点未就绪" not in svg


def _claims(run_dir: Path, edited: Path) -> dict[str, Any]:
    """claims.json leaves the smoke test out: the edited log as an experiment's (gang) evidence, as claims give it."""
    run = _with_log(run_dir, edited / LOG)
    return next(e for e in build_claims(load_run(run), "en", {})["experiments"] if e["id"] == "gang")


def test_claims_give_the_cordon_and_its_pods_with_their_records(run_dir: Path, tmp_path: Path) -> None:
    edited = cordoned_run(tmp_path / "mid-run", "mid-run")
    facts = _facts(edited / LOG)
    assert facts.uncordon is not None
    gang = _claims(run_dir, edited)
    assert "node_faults" not in gang
    (cordon,) = gang["node_cordons"]
    assert set(cordon) == {"node", "start_s", "end_s", "evidence", "pods"}
    assert (cordon["node"], cordon["evidence"]) == (NODE, [facts.cordon.seq, facts.uncordon.seq])
    assert [(p["user"], p["how"], p["evidence"]) for p in cordon["pods"]] == \
        [("bob", "stayed", [facts.started.seq, facts.ended.seq])]
    assert cordon["end_s"] - cordon["start_s"] == pytest.approx(_epoch(facts.uncordon) - _epoch(facts.cordon))


def test_claims_of_a_drained_node_give_the_fault_and_the_cordon_apart(run_dir: Path, tmp_path: Path) -> None:
    gang = _claims(run_dir, cordoned_run(tmp_path / "drained", "drained"))
    (fault,), (cordon,) = gang["node_faults"], gang["node_cordons"]
    assert (fault["node"], fault["ready_status"]) == (NODE, "False") and cordon["node"] == NODE
    assert fault["evidence"] == cordon["evidence"] and fault["pods"] == cordon["pods"]
