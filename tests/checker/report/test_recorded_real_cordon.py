"""A cordon recorded on the rehearsal cluster: smoke, with `kubectl cordon hostname-carol` run as soon as the first
pod was Running and `kubectl uncordon` 21 s later, while alice's pod ran there
(tests/fixtures/rehearsal-recorded/README.md, `smoke-cordon/`). Judged and reported again with the current code, the
report names the node, the interval its Node records' `spec.unschedulable` give and alice's pod that stayed Running on
it, in zh and en: the sentence, the timeline table's node row, the pod's note and the chart's band; smoke stays
consistent. The times and seqs are read from the log, not written here."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from hivedlab.basics.clock import since_start, time_of_day
from hivedlab.checker.report.build import _chart_data
from hivedlab.checker.report.charts import draw
from hivedlab.checker.report.charts_layout import legend_entries
from hivedlab.checker.report.faults import cordon_claims, fault_claims
from hivedlab.checker.report.inputs import load_run
from hivedlab.cli.main import main
from hivedlab.evidence import Record, read_evidence
from tests.checker.report.test_recorded_node_fault import _ended, _epoch, _ready, _running
from tests.support.paths import FIXTURES
from tests.support.quick_charts import stub_charts
from tests.support.records import object_of
from tests.support.report_checks import CordonSeen, check_cordon_named, smoke_verdict

RECORDED = FIXTURES / "rehearsal-recorded" / "smoke-cordon"
LOG = RECORDED / "experiments" / "smoke" / "evidence.jsonl"
NODE = "hostname-carol"  # the node `kubectl cordon` was given
POD = {"en": "alice's job-smoke-test (alice) smoke-0", "zh": "alice 的 job-smoke-test (alice) smoke-0"}
LANGS = ("zh", "en")


def _cordoned(record: Record) -> bool:
    return bool(object_of(record).get("spec", {}).get("unschedulable"))


@dataclass(frozen=True)
class Facts:
    """What the log says: the node's records, its cordon and uncordon, and the run of alice's pod on it."""

    t0: float  # the whole second of the log's first record: the report's T+0
    node: tuple[Record, ...]  # every record of the node but bookmarks
    cordon: Record  # the first record with spec.unschedulable, after the node's listing
    uncordon: Record  # the next one without it
    started: Record  # alice's pod's first record running on the node
    ended: Record  # its first record with its containers ended

    def t(self, record: Record) -> str:
        return since_start(_epoch(record) - self.t0)

    def since(self, record: Record) -> float:
        return _epoch(record) - self.t0


@pytest.fixture(scope="module")
def facts() -> Facts:
    records = read_evidence(LOG).records
    node = tuple(r for r in records if r.kind == "object" and r.resource == "nodes"
                 and object_of(r)["metadata"].get("name") == NODE)
    cordon = next(r for r in node[1:] if _cordoned(r))
    uncordon = next(r for r in node if r.seq > cordon.seq and not _cordoned(r))
    alices = [r for r in records if r.kind == "object" and r.resource == "pods"
              and object_of(r)["spec"].get("nodeName") == NODE
              and "alice~" in json.dumps(object_of(r)["spec"]["containers"])]
    started = next(r for r in alices if _running(object_of(r)))
    ended = next(r for r in alices if _ended(object_of(r)))
    return Facts(math.floor(_epoch(records[0])), node, cordon, uncordon, started, ended)


@pytest.fixture(scope="module")
def rejudged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The recorded folder copied without its recorded verdicts, claims and report, judged again (`hivedlab check`)
    and reported in zh and in en."""
    runs = {}
    for lang in LANGS:
        run = tmp_path_factory.mktemp(lang) / "run"
        shutil.copytree(RECORDED, run)
        for stale in (*run.rglob("verdicts.json"), run / "claims.json", run / "report.md"):
            stale.unlink()
        with pytest.MonkeyPatch.context() as patch:
            stub_charts(patch)  # the text is under test here; the chart's data and painting below
            assert main(["check", str(run), "--lang", lang]) == 0
            assert main(["report", str(run), "--lang", lang]) == 0
        runs[lang] = run
    return runs


def _smoke(report: str) -> str:
    """The smoke test's part of a report: from its heading to the next one."""
    return report.split("3.2", 1)[1].split("####", 1)[0]


def test_the_log_holds_a_real_cordon_of_a_ready_node_while_alices_pod_ran_there(facts: Facts) -> None:
    assert read_evidence(LOG).chain_ok
    assert facts.node[0].watch_type == "LISTED" and not _cordoned(facts.node[0])
    assert [r.seq for r in facts.node if _cordoned(r)] == [facts.cordon.seq]  # one record cordoned: the change
    assert all(_ready(r) == "True" for r in facts.node)  # cordoned, never NotReady
    assert facts.started.seq < facts.cordon.seq < facts.uncordon.seq < facts.ended.seq
    assert 15 < _epoch(facts.uncordon) - _epoch(facts.cordon) < 30  # about the 20 s between the two commands


def test_the_report_names_the_cordon_its_interval_and_alices_pod_in_both_languages(
        rejudged: dict[str, Path], facts: Facts) -> None:
    report = {lang: (rejudged[lang] / "report.md").read_text(encoding="utf-8") for lang in LANGS}
    smoke = {lang: _smoke(text) for lang, text in report.items()}
    check_cordon_named(smoke, CordonSeen(
        NODE, f"{time_of_day(_epoch(facts.cordon))}–{time_of_day(_epoch(facts.uncordon))} UTC",
        f"{facts.t(facts.cordon)}–{facts.t(facts.uncordon)}", f"{facts.cordon.seq}, {facts.uncordon.seq}", POD,
        "job-smoke-test (alice)", f"{facts.t(facts.started)}–{facts.t(facts.ended)}",
        f"{facts.started.seq}, {facts.ended.seq}"))
    assert smoke["en"].count("- Node cordoned:") == 1 and smoke["zh"].count("- 节点封锁：") == 1


def test_the_chart_shades_the_cordon_with_its_own_legend_entry(facts: Facts) -> None:
    smoke = load_run(RECORDED).smoke
    assert smoke is not None
    for lang, words in (("en", "node cordoned"), ("zh", "节点被封锁（cordon）")):
        data = _chart_data(smoke, lang)
        assert data is not None
        (band,) = data.not_ready
        assert (band.kind, band.node, band.open_end) == ("cordoned", NODE, False)
        assert (band.start, band.end) == pytest.approx((facts.since(facts.cordon), facts.since(facts.uncordon)),
                                                       abs=1.0)
        assert band.lanes and {data.lanes[i].node for i in band.lanes} == {NODE}
        legend = [(e.key, e.label) for e in legend_entries(data, lang)]
        assert ("cordoned", words) in legend and "not_ready" not in [key for key, _ in legend]
        _, svg = draw(data, lang)  # painted: the legend names the band
        assert words in svg


def test_the_claims_of_the_cordon_cite_its_records(rejudged: dict[str, Path], facts: Facts) -> None:
    """claims.json leaves the smoke test out (docs/architecture.md), so its cordons are those `cordon_claims` gives
    for its timeline, as claims.json gives an experiment's; claims.json itself says rehearsal."""
    claims = json.loads((rejudged["en"] / "claims.json").read_text(encoding="utf-8"))
    assert claims["rehearsal"] is True and claims["experiments"] == []
    smoke = load_run(rejudged["en"]).smoke
    assert smoke is not None
    assert fault_claims(smoke.timeline.faults) == []
    (cordon,) = cordon_claims(smoke.timeline.faults)
    assert (cordon["node"], cordon["evidence"]) == (NODE, [facts.cordon.seq, facts.uncordon.seq])
    assert (cordon["start_s"], cordon["end_s"]) == pytest.approx(
        (facts.since(facts.cordon), facts.since(facts.uncordon)), abs=1.0)
    assert [(p["user"], p["how"], p["evidence"]) for p in cordon["pods"]] == \
        [("alice", "stayed", [facts.started.seq, facts.ended.seq])]


def test_smoke_stays_consistent_as_recorded(rejudged: dict[str, Path]) -> None:
    recorded = smoke_verdict(RECORDED)
    assert recorded[0] == "consistent"
    assert smoke_verdict(rejudged["en"]) == recorded and smoke_verdict(rejudged["zh"]) == recorded
