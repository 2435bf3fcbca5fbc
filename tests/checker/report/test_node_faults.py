"""Node faults in the report: a node whose Ready condition changed during an experiment is named, with its interval
and the pods it touched, in the experiment's answer text, its timeline table, its chart and claims.json, in zh and en;
a log without such a change reports as before (a simulator's log never has one)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hivedlab.checker.report.build import _chart_data, render_markdown
from hivedlab.checker.report.charts import draw
from hivedlab.checker.report.charts_layout import legend_entries
from hivedlab.checker.report.context import build_claims
from hivedlab.checker.report.inputs import RunInputs, load_run
from hivedlab.evidence import EvidenceWriter, read_evidence
from tests.support.make_log_fixtures import node_fault
from tests.support.paths import FIXTURES
from tests.support.records import object_of

LOGS = FIXTURES / "logs"
SPAN = "08:00:10–08:01:28 UTC"
T_SPAN = "T+0:00:10–T+0:01:28"
BAD = "have to use at least one bad node hostname-dan when scheduling in VC default"


def _with_log(run_dir: Path, log: Path, experiment: str = "gang") -> Path:
    """The run directory with `log` as the experiment's evidence, recorded on a real cluster (as the rehearsal's)."""
    target = run_dir / "experiments" / experiment
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(log, target / "evidence.jsonl")
    record = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    (run_dir / "run.json").write_text(json.dumps({**record, "cluster": "pai"}), encoding="utf-8")
    return run_dir


def _report(run: Path, lang: str) -> str:
    return render_markdown(load_run(run), lang, run, {}, None)


def _section(md: str, heading: str) -> str:
    return md.split(heading, 1)[1].split("\n### ", 1)[0]


def _row(md: str, name: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(f"| {name} |"))


@pytest.fixture
def running(run_dir: Path) -> Path:
    return _with_log(run_dir, LOGS / "node-fault-pod-running.jsonl")


def test_a_pod_running_on_the_node_is_named_with_the_interval_in_both_languages(running: Path) -> None:
    en, zh = _report(running, "en"), _report(running, "zh")
    said_en = (f"node hostname-dan NotReady {SPAN} ({T_SPAN}; evidence records seq 16, 21); the pod of Bob's "
               f"job-smoke-test-bob-1 train-0 stayed Running on it (it ran T+0:00:06–T+0:01:28; seq 14, 22).")
    said_zh = (f"节点 hostname-dan {SPAN} 未就绪（NotReady；{T_SPAN}；证据记录 seq 16, 21）；Bob 的 "
               "job-smoke-test-bob-1 train-0 的 pod 在其上一直处于 Running"
               "（运行于 T+0:00:06–T+0:01:28；seq 14, 22）。")
    assert f"Node fault: {said_en}" in _row(en, "Gang Scheduling")  # the answer text of the experiment's row
    assert f"节点故障：{said_zh}" in _row(zh, "群调度 (Gang Scheduling)")
    details_en, details_zh = _section(en, ". Gang Scheduling"), _section(zh, ". 群调度")
    assert f"- {said_en}" in details_en and f"- {said_zh}" in details_zh
    # the timeline: the node's own row, and the note on the pod it touched (not on alice's, on the other node)
    assert "| — | — | — | hostname-dan | T+0:00:10 | T+0:01:28 | — | node NotReady |" in details_en
    assert "| — | — | — | hostname-dan | T+0:00:10 | T+0:01:28 | — | 节点未就绪（NotReady） |" in details_zh
    bob, alice = (_row(details_en, f"job-smoke-test-{user}-1") for user in ("bob", "alice"))
    assert bob.endswith(f"| succeeded; node hostname-dan not Ready {T_SPAN} |")
    assert "hostname-dan" not in alice and "Ready" not in alice


def test_each_seq_the_sentence_cites_is_the_record_that_shows_it(running: Path) -> None:
    records = {r.seq: r for r in read_evidence(running / "experiments" / "gang" / "evidence.jsonl").records}
    ready = {seq: object_of(records[seq])["status"]["conditions"][0]["status"] for seq in (16, 21)}
    assert ready == {16: "False", 21: "True"} and {records[s].resource for s in (16, 21)} == {"nodes"}
    started, ended = object_of(records[14]), object_of(records[22])
    assert started["spec"]["nodeName"] == "hostname-dan"
    assert "running" in started["status"]["containerStatuses"][0]["state"]
    assert "terminated" in ended["status"]["containerStatuses"][0]["state"]


def test_the_chart_shades_the_node_while_it_was_not_ready(running: Path) -> None:
    exp = next(e for e in load_run(running).experiments if e.id == "gang")
    for lang, words in (("en", "node not Ready"), ("zh", "节点未就绪（NotReady）")):
        data = _chart_data(exp, lang)
        assert data is not None
        (band,) = data.not_ready
        assert band.node == "hostname-dan" and (band.start, band.end) == (10.0, 88.0) and not band.open_end
        assert {data.lanes[i].node for i in band.lanes} == {"hostname-dan"} and band.lanes
        assert ("not_ready", words) in [(e.key, e.label) for e in legend_entries(data, lang)]
    assert data is not None
    png, svg = draw(data, "zh")  # painted: the band and its legend entry
    assert png.startswith(b"\x89PNG") and "节点未就绪" in svg


def test_claims_give_the_fault_and_its_pods_with_their_records(running: Path) -> None:
    claims = build_claims(load_run(running), "en", {})
    gang = next(e for e in claims["experiments"] if e["id"] == "gang")
    (fault,) = gang["node_faults"]
    assert {k: fault[k] for k in ("node", "ready_status", "reason", "start_s", "end_s", "evidence")} == \
        {"node": "hostname-dan", "ready_status": "False", "reason": "KubeletNotReady", "start_s": 10.0, "end_s": 88.0,
         "evidence": [16, 21]}
    assert [(p["user"], p["how"], p["evidence"]) for p in fault["pods"]] == [("bob", "stayed", [14, 22])]
    assert all("node_faults" not in e for e in claims["experiments"] if e["id"] != "gang")


def test_a_pod_bound_elsewhere_is_named_only_for_hiveds_bad_node_reason(run_dir: Path) -> None:
    run = _with_log(run_dir, LOGS / "node-fault-pod-elsewhere.jsonl")
    en, zh = _report(run, "en"), _report(run, "zh")
    assert (f"Node fault: node hostname-dan NotReady {SPAN} ({T_SPAN}; evidence records seq 10, 29); HiveD counted "
            f"it bad: the pod of Bob's job-smoke-test-bob-1 train-0 waited with \"{BAD}\" (T+0:00:13–T+0:00:20, 2 "
            "times; seq 14, 16).") in _row(en, "Gang Scheduling")
    assert (f"节点故障：节点 hostname-dan {SPAN} 未就绪（NotReady；{T_SPAN}；证据记录 seq 10, 29）；"
            f"HiveD 将它计为坏节点：Bob 的 job-smoke-test-bob-1 train-0 的 pod 等待，原因“{BAD}”"
            "（T+0:00:13–T+0:00:20，共 2 次；seq 14, 16）。") in _row(zh, "群调度 (Gang Scheduling)")
    for md in (en, zh):
        assert "stayed Running" not in md and "一直处于 Running" not in md and "bound to it" not in md
    bob = _row(_section(en, ". Gang Scheduling"), "job-smoke-test-bob-1")
    assert "hostname-carol" in bob and bob.endswith(f"| succeeded; HiveD counted node hostname-dan bad "
                                                    f"(not Ready {T_SPAN}) |")


def test_a_pod_waiting_for_a_cordoned_node_is_named_for_hiveds_bad_node_reason(run_dir: Path, tmp_path: Path) -> None:
    """The same run with hostname-dan cordoned instead of NotReady (`spec.unschedulable`; HiveD counts it bad all the
    same): a cordon, in its own words, and no node fault."""
    log = tmp_path / "node-fault-pod-elsewhere.jsonl"
    node_fault(log, "elsewhere", cordon=True)
    run = _with_log(run_dir, log)
    en, zh = _report(run, "en"), _report(run, "zh")
    said_en = (f"node hostname-dan cordoned {SPAN} (spec.unschedulable; {T_SPAN}; evidence records seq 10, 29); HiveD "
               f"counted it bad: the pod of Bob's job-smoke-test-bob-1 train-0 waited with \"{BAD}\" "
               "(T+0:00:13–T+0:00:20, 2 times; seq 14, 16).")
    said_zh = (f"节点 hostname-dan {SPAN} 被封锁（cordon，spec.unschedulable；{T_SPAN}；证据记录 seq 10, 29）；"
               f"HiveD 将它计为坏节点：Bob 的 job-smoke-test-bob-1 train-0 的 pod 等待，原因“{BAD}”"
               "（T+0:00:13–T+0:00:20，共 2 次；seq 14, 16）。")
    assert f"Node cordoned: {said_en}" in _row(en, "Gang Scheduling")
    assert f"节点封锁：{said_zh}" in _row(zh, "群调度 (Gang Scheduling)")
    details_en, details_zh = _section(en, ". Gang Scheduling"), _section(zh, ". 群调度")
    assert "Cordoned nodes (from the cluster's Node records" in details_en and f"- {said_en}" in details_en
    assert "Node faults (from" not in details_en and "节点故障（来自" not in details_zh
    assert "被封锁的节点（来自集群的 Node 记录" in details_zh and f"- {said_zh}" in details_zh
    assert _row(details_en, "job-smoke-test-bob-1").endswith(
        f"| succeeded; HiveD counted node hostname-dan bad (cordoned {T_SPAN}) |")
    assert _row(details_zh, "job-smoke-test-bob-1").endswith(
        f"| 成功；HiveD 将节点 hostname-dan 计为坏节点（{T_SPAN} 被封锁） |")
    for md in (en, zh):
        assert "Node fault" not in md and "节点故障" not in md and "NotReady" not in md
    gang = next(e for e in build_claims(load_run(run), "en", {})["experiments"] if e["id"] == "gang")
    (cordon,) = gang["node_cordons"]
    assert "node_faults" not in gang and cordon["evidence"] == [10, 29]
    assert [(p["how"], p["hived_reason"], p["count"], p["evidence"]) for p in cordon["pods"]] == \
        [("waited-bad", BAD, 2, [14, 16])]


def test_the_smoke_section_names_the_fault_too(run_dir: Path) -> None:
    run = _with_log(run_dir, LOGS / "node-fault-pod-running.jsonl", "smoke")
    for lang, lead in (("en", "- Node fault: node hostname-dan NotReady"), ("zh", "- 节点故障：节点 hostname-dan")):
        smoke = _report(run, lang).split("3.2", 1)[1].split("####", 1)[0]
        assert lead in smoke and "job-smoke-test-bob-1 train-0" in smoke


def _without_nodes(log: Path, target: Path) -> Path:
    """The same log without its Node records (as the OpenPAI backend wrote it before it recorded nodes)."""
    with EvidenceWriter(target, "k8s") as writer:
        for record in read_evidence(log).records:
            if record.kind == "action" and record.action is not None:
                writer.write_action(str(record.action_type), {k: v for k, v in record.action.items() if k != "type"},
                                    time=record.time)
            elif record.resource != "nodes" and record.object is not None:
                writer.write_object(str(record.watch_type), str(record.resource), record.object, record.time,
                                    record.synthetic)
    return target


def test_nodes_that_stay_ready_change_nothing_in_the_report(run_dir: Path, tmp_path: Path) -> None:
    plain = run_dir.parent / "plain"
    shutil.copytree(run_dir, plain)
    control = LOGS / "node-fault-none.jsonl"
    with_nodes = _with_log(run_dir, control)
    without = _with_log(plain, _without_nodes(control, tmp_path / "no-nodes.jsonl"))
    for lang in ("en", "zh"):
        report = _report(with_nodes, lang)
        assert report == _report(without, lang)
        assert "Node fault" not in report and "节点故障" not in report
    inputs: RunInputs = load_run(with_nodes)
    assert all("node_faults" not in e for e in build_claims(inputs, "en", {})["experiments"])
