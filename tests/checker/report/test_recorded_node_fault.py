"""A NotReady fault recorded on the rehearsal cluster (issue #41, item 4): smoke, with hostname-dan NotReady for a
minute while bob's pod ran there (tests/fixtures/rehearsal-recorded/README.md). Judged and reported again with the
current code, the report names the node, the interval its Node records give and bob's pod that stayed Running on it,
in zh and en, on the chart too; the verdicts stay as recorded. The times are read from the log, not written here."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hivedlab.basics.clock import since_start, time_of_day
from hivedlab.checker.report.build import _chart_data
from hivedlab.checker.report.faults import fault_claims
from hivedlab.checker.report.inputs import load_run
from hivedlab.cli.main import main
from hivedlab.evidence import Record, read_evidence
from tests.support.paths import FIXTURES
from tests.support.quick_charts import stub_charts
from tests.support.records import object_of
from tests.support.report_checks import smoke_verdict

RECORDED = FIXTURES / "rehearsal-recorded" / "smoke-not-ready"
NODE = "hostname-dan"
BOB_POD = "bob's job-smoke-test (bob) smoke-0"  # the report's name of bob's pod: job (member) task


def _epoch(record: Record) -> float:
    return datetime.fromisoformat(record.time.replace("Z", "+00:00")).timestamp()


def _ready(record: Record) -> str:
    conditions = object_of(record)["status"]["conditions"]
    return str(next(c["status"] for c in conditions if c["type"] == "Ready"))


def _running(pod: dict[str, Any]) -> bool:
    return any("running" in s.get("state", {}) for s in pod["status"].get("containerStatuses") or [])


def _ended(pod: dict[str, Any]) -> bool:
    statuses = pod["status"].get("containerStatuses") or []
    return bool(statuses) and all("terminated" in s.get("state", {}) for s in statuses)


@dataclass(frozen=True)
class Facts:
    """What the log says: the records of the node's fault and of bob's pod's run."""

    t0: float  # the whole second of the log's first record: the report's T+0
    down: Record  # the first Node record of hostname-dan with Ready not True
    up: Record  # the next one with Ready True again
    started: Record  # bob's pod's first record running on the node
    ended: Record  # its first record with its containers ended


def _facts(log: Path) -> Facts:
    records = read_evidence(log).records
    nodes = [r for r in records if r.kind == "object" and r.resource == "nodes"
             and object_of(r)["metadata"].get("name") == NODE]
    down = next(r for r in nodes if _ready(r) != "True")
    up = next(r for r in nodes if r.seq > down.seq and _ready(r) == "True")
    bobs = [r for r in records if r.kind == "object" and r.resource == "pods"
            and object_of(r)["spec"].get("nodeName") == NODE
            and "bob~" in json.dumps(object_of(r)["spec"]["containers"])]
    started = next(r for r in bobs if _running(object_of(r)))
    ended = next(r for r in bobs if _ended(object_of(r)))
    return Facts(math.floor(_epoch(records[0])), down, up, started, ended)  # T+0: the whole second of the first


@pytest.fixture(scope="module")
def rejudged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The recorded folder copied, judged again (`hivedlab check`) and reported in zh and in en; the reports."""
    reports = {}
    for lang in ("zh", "en"):
        run = tmp_path_factory.mktemp(lang) / "run"
        shutil.copytree(RECORDED, run)
        with pytest.MonkeyPatch.context() as patch:
            stub_charts(patch)  # the text is under test; the chart's data below
            assert main(["check", str(run), "--lang", lang]) == 0
            assert main(["report", str(run), "--lang", lang]) == 0
        reports[lang] = run
    return reports


@pytest.fixture(scope="module")
def facts() -> Facts:
    return _facts(RECORDED / "experiments" / "smoke" / "evidence.jsonl")


def test_the_log_holds_the_fault_and_bobs_pod_on_the_node(facts: Facts) -> None:
    assert facts.down.seq < facts.up.seq and facts.started.seq < facts.down.seq < facts.ended.seq
    assert _epoch(facts.up) - _epoch(facts.down) > 50  # NotReady about a minute, as recorded


def test_the_report_names_the_node_its_interval_and_bobs_pod_in_both_languages(
        rejudged: dict[str, Path], facts: Facts) -> None:
    span = f"{time_of_day(_epoch(facts.down))}–{time_of_day(_epoch(facts.up))} UTC"
    t_span = f"{since_start(_epoch(facts.down) - facts.t0)}–{since_start(_epoch(facts.up) - facts.t0)}"
    ran = f"{since_start(_epoch(facts.started) - facts.t0)}–{since_start(_epoch(facts.ended) - facts.t0)}"
    seqs, pod_seqs = f"{facts.down.seq}, {facts.up.seq}", f"{facts.started.seq}, {facts.ended.seq}"
    en = (rejudged["en"] / "report.md").read_text(encoding="utf-8")
    zh = (rejudged["zh"] / "report.md").read_text(encoding="utf-8")
    assert (f"- Node fault: node {NODE} NotReady {span} ({t_span}; evidence records seq {seqs}); the pod of "
            f"{BOB_POD} stayed Running on it (it ran {ran}; seq {pod_seqs}).") in en
    assert (f"- 节点故障：节点 {NODE} {span} 未就绪（NotReady；{t_span}；证据记录 seq {seqs}）；"
            f"bob 的 job-smoke-test (bob) smoke-0 的 pod 在其上一直处于 Running（运行于 {ran}；"
            f"seq {pod_seqs}）。") in zh
    assert f"| — | — | — | {NODE} | {t_span.replace('–', ' | ')} | — | node NotReady |" in en
    assert f"| {NODE} | {t_span.replace('–', ' | ')} | — | 节点未就绪（NotReady） |" in zh
    bob_row = next(line for line in en.splitlines() if line.startswith("| job-smoke-test (bob) |"))
    assert bob_row.endswith(f"| succeeded; node {NODE} not Ready {t_span} |")


def test_the_chart_shades_the_node_for_the_interval(facts: Facts) -> None:
    smoke = load_run(RECORDED).smoke
    assert smoke is not None
    for lang in ("en", "zh"):
        data = _chart_data(smoke, lang)
        assert data is not None
        (band,) = data.not_ready
        assert band.node == NODE and not band.open_end
        assert (band.start, band.end) == pytest.approx(
            (_epoch(facts.down) - facts.t0, _epoch(facts.up) - facts.t0), abs=1.0)
        assert band.lanes and {data.lanes[i].node for i in band.lanes} == {NODE}


def test_the_claims_of_the_fault_cite_its_records(rejudged: dict[str, Path], facts: Facts) -> None:
    """claims.json leaves the smoke test out (docs/architecture.md), so its node faults are those `fault_claims`
    gives for its timeline, as claims.json gives an experiment's; claims.json itself says rehearsal."""
    claims = json.loads((rejudged["en"] / "claims.json").read_text(encoding="utf-8"))
    assert claims["rehearsal"] is True and claims["experiments"] == []
    smoke = load_run(rejudged["en"]).smoke
    assert smoke is not None
    (fault,) = fault_claims(smoke.timeline.faults)
    assert (fault["node"], fault["ready_status"], fault["evidence"]) == (NODE, "False", [facts.down.seq, facts.up.seq])
    assert [(p["user"], p["how"], p["evidence"]) for p in fault["pods"]] == \
        [("bob", "stayed", [facts.started.seq, facts.ended.seq])]


def test_the_verdicts_stay_as_recorded(rejudged: dict[str, Path]) -> None:
    recorded = smoke_verdict(RECORDED)
    assert recorded[0] == "consistent"
    assert smoke_verdict(rejudged["en"]) == recorded and smoke_verdict(rejudged["zh"]) == recorded
