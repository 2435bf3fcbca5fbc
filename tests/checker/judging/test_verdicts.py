"""Verdicts over the hand-made logs: each scenario gets the verdicts a TA would give it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from hivedlab.basics.resources import SCHEMAS
from tests.support.paths import FIXTURES
from tests.support.scenario import Scenario

LOGS = FIXTURES / "logs"
C, X, Q = "consistent", "inconsistent", "inconclusive"

CASES = [
    ("vc-safety-consistent.jsonl", C, [C, C, C]),
    ("vc-safety-borrowed-default-node.jsonl", X, [X, X, C]),
    ("priority-consistent.jsonl", C, [C, C, C]),
    ("priority-high-waited.jsonl", X, [X, Q, C]),
    ("priority-interrupted.jsonl", Q, [Q, Q, C]),
    ("opportunistic-consistent.jsonl", C, [C, C, C]),
    ("gang-consistent.jsonl", C, [C, C]),
    ("gang-one-after-another.jsonl", X, [X, X]),
    ("gang-cut-mid-line.jsonl", C, [C, C]),
    ("gang-missing-gang-job.jsonl", Q, [Q, Q]),
    ("sim-gang-consistent.jsonl", C, [C, C]),
    ("sim-gang-starts-5s-apart.jsonl", X, [C, X]),
    ("incremental-consistent.jsonl", C, [C, C, C, C]),
    ("incremental-second-task-later.jsonl", C, [C, C, C, C]),
    ("incremental-started-together.jsonl", X, [X, X, C, C]),
    ("chain-broken-at-record-7.jsonl", Q, [Q, Q]),
    ("mixed-nodes-of-another-cluster.jsonl", Q, [Q, Q]),
    ("mixed-two-experiments.jsonl", Q, [Q, Q]),
    # logs written by the simulated cluster (src/hivedlab/backends/sim) through EvidenceWriter, copied as they were
    ("from-simulator-vc-safety.jsonl", C, [C, C, C]),
    ("from-simulator-priority.jsonl", C, [C, C, C]),
    ("from-simulator-opportunistic.jsonl", C, [C, C, C]),
    ("from-simulator-gang.jsonl", C, [C, C]),
    ("from-simulator-incremental.jsonl", C, [C, C, C, C]),
]


def _json(cli, *args: str):
    result = cli("check", *args, "--format", "json")
    return result, (json.loads(result.out) if result.out else None)


@pytest.mark.parametrize(("log", "overall", "answers"), CASES, ids=[c[0].removesuffix(".jsonl") for c in CASES])
def test_fixture_verdicts(cli, log: str, overall: str, answers: list[str]) -> None:
    result, data = _json(cli, str(LOGS / log))
    assert data["verdict"] == overall
    assert [a["verdict"] for a in data["answers"]] == answers
    assert result.code == {C: 0, X: 1, Q: 3}[overall]  # the exit table: the lab ran, and how it is judged
    schema = json.loads((SCHEMAS / "verdict.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, schema)
    for answer in data["answers"]:
        assert answer["answer"]["zh"] and answer["answer"]["en"]
        if answer["verdict"] == C:
            assert answer["evidence"], answer["rule"]
        if answer["verdict"] == Q:
            assert answer["missing"]


@pytest.mark.parametrize(("logs", "code"), [
    (("gang-consistent.jsonl", "chain-broken-at-record-7.jsonl"), 3),  # inconclusive, nothing inconsistent
    (("gang-one-after-another.jsonl", "chain-broken-at-record-7.jsonl"), 1),  # inconsistent wins
    (("gang-consistent.jsonl", "priority-consistent.jsonl"), 0),
])
def test_several_logs_exit_with_the_worst_verdict(cli, logs: tuple[str, ...], code: int) -> None:
    assert cli("check", *(str(LOGS / log) for log in logs)).code == code


def test_consistent_answers_cite_times_and_nodes(cli) -> None:
    _, data = _json(cli, str(LOGS / "priority-consistent.jsonl"))
    first = data["answers"][0]["answer"]
    assert "08:01:02" in first["en"] and "hostname-dan" in first["en"] and "抢占" in first["zh"]


def test_inconsistent_answer_carries_expected(cli) -> None:
    _, data = _json(cli, str(LOGS / "gang-one-after-another.jsonl"))
    assert data["answers"][1]["expected"]["en"].startswith("Both tasks bind in the same scheduling round")


def test_broken_chain_never_consistent(cli) -> None:
    _, data = _json(cli, str(LOGS / "chain-broken-at-record-7.jsonl"))
    assert data["log"]["first_broken_seq"] == 7 and not data["log"]["chain_ok"]
    assert any("record 7" in m["en"] for m in data["missing"])


def test_watch_only_log_needs_experiment(cli) -> None:
    result = cli("check", str(LOGS / "watch-only-priority.jsonl"), "--lang", "en")
    assert result.code == 2 and "pass --experiment" in result.err and "Traceback" not in result.err
    result, data = _json(cli, str(LOGS / "watch-only-priority.jsonl"), "--experiment", "priority",
                         "--hived-config", str(LOGS / "two-vc.yaml"))
    assert [a["verdict"] for a in data["answers"]] == [C, C, C]


def test_experiment_mismatch_is_an_error(cli) -> None:
    result = cli("check", str(LOGS / "gang-consistent.jsonl"), "--experiment", "priority", "--lang", "en")
    assert result.code == 2 and "is a run of experiment 'gang'" in result.err


@pytest.mark.parametrize("log", ["not-json-lines.jsonl", "does-not-exist.jsonl"])
def test_unreadable_log_exit_2(cli, log: str) -> None:
    result = cli("check", str(LOGS / log))
    assert result.code == 2 and result.err.count("\n") == 1 and "Traceback" not in result.err


def test_text_output_bilingual(cli) -> None:
    zh = cli("check", str(LOGS / "gang-consistent.jsonl"))
    en = cli("check", str(LOGS / "gang-consistent.jsonl"), "--lang", "en")
    assert "群调度: 一致" in zh.out and "子任务同时运行" in zh.out
    assert "Gang scheduling: consistent" in en.out and "the tasks ran together" in en.out


def test_run_directory_and_out_file(cli, tmp_path: Path) -> None:
    for name in ("gang", "priority"):
        folder = tmp_path / "run" / "experiments" / name
        folder.mkdir(parents=True)
        (folder / "evidence.jsonl").write_bytes((LOGS / f"{name}-consistent.jsonl").read_bytes())
    out = tmp_path / "verdicts.json"
    result = cli("check", str(tmp_path / "run"), "--format", "json", "--out", str(out))
    assert result.code == 0 and result.out == ""
    assert [d["experiment"] for d in json.loads(out.read_text(encoding="utf-8"))] == ["priority", "gang"]  # plan order


def test_help_has_examples(cli) -> None:
    result = cli("check", "--help")
    assert result.code == 0 and "examples:" in result.out and "--experiment" in result.out


def test_bad_argument(cli) -> None:
    result = cli("check", str(LOGS / "gang-consistent.jsonl"), "--format", "xml")
    assert result.code == 2


def test_unknown_experiment_hint(cli) -> None:
    result = cli("check", str(LOGS / "watch-only-priority.jsonl"), "--experiment", "priorty", "--lang", "en")
    assert result.code == 2 and "did you mean 'priority'" in result.err


def _later_runs_first(path: Path, source: str) -> None:
    sc = Scenario(path, source=source, seed="order")
    sc.at(0).plan("vc-safety", cluster="sim" if source == "sim" else "pai")
    sc.config("two-vc")
    alice = sc.at(1).submit("alice", "prod", "job-config-0", "vc1", "prod")
    bob = sc.at(5).submit("bob", "prod", "job-config-0", "vc1", "prod")
    sc.at(6).pod_add(alice, 0)
    sc.pod_add(bob, 0)
    sc.at(7).pod_bind(bob, 0, "hostname-dan")
    sc.pod_wait(alice, 0, "insufficient capacity when scheduling in VC vc1")
    sc.at(10).pod_run(bob, 0)
    sc.at(70).pod_exit(bob, 0)
    sc.at(71).framework(bob, "Completed", 0)
    sc.at(72).pod_bind(alice, 0, "hostname-dan")
    sc.at(75).pod_run(alice, 0)
    sc.at(135).pod_exit(alice, 0)
    sc.at(136).framework(alice, "Completed", 0)
    sc.end()
    sc.close()


def test_queue_order_judged_on_the_simulator_only(cli, tmp_path: Path) -> None:
    for source, verdict in (("k8s", C), ("sim", X)):
        path = tmp_path / f"{source}.jsonl"
        _later_runs_first(path, source)
        _, data = _json(cli, str(path))
        order = data["answers"][2]
        assert order["verdict"] == verdict, source
        assert "submitted later but ran first" in order["answer"]["en"]


def test_mixed_sources_are_never_evidence(cli, tmp_path: Path) -> None:
    import hashlib

    from hivedlab.evidence import canonical_json

    lines = (LOGS / "gang-consistent.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    prev = "0" * 64
    for record in records:  # re-chain after relabelling half the log, as a forger would
        if record["seq"] > 15:
            record["source"] = "sim"
        record["prev"] = prev
        record["hash"] = prev = hashlib.sha256(canonical_json(record).encode()).hexdigest()
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    _, data = _json(cli, str(path))
    assert data["log"]["chain_ok"] and data["verdict"] == Q
    assert any("different sources" in m["en"] for m in data["missing"])


def _gang_binds_in_the_release_gap(path: Path) -> None:
    """The holder's pod ends at 400 s (HiveD frees its cell then); FrameworkController completes it at 401 s; the gang
    binds at 400.5 s, in between — what a real cluster can do."""
    sc = Scenario(path, seed="gap")
    sc.at(0).plan("gang", members=("alice",))
    sc.config("one-vc")
    holder = sc.at(1).submit("alice", "holder", "job-config-5", "default", "prod")
    sc.framework(holder, "AttemptCreationPending", watch_type="ADDED")
    sc.at(2).pod_add(holder, 0)
    sc.at(3).pod_bind(holder, 0, "hostname-carol")
    sc.at(10).pod_run(holder, 0)
    sc.framework(holder, "AttemptRunning")
    job = sc.at(30).submit("alice", "gang", "job-config-6", "default", "prod", tasks=2)
    sc.framework(job, "AttemptCreationPending", watch_type="ADDED")
    sc.at(31).pod_add(job, 0)
    sc.pod_add(job, 1)
    sc.at(32).pod_wait(job, 0, "insufficient capacity when scheduling in VC default")
    sc.pod_wait(job, 1, "insufficient capacity when scheduling in VC default")
    sc.at(400).pod_exit(holder, 0)
    sc.at(400.5).pod_bind(job, 0, "hostname-carol")
    sc.pod_bind(job, 1, "hostname-dan")
    sc.at(401).framework(holder, "Completed", 0)
    sc.pod_delete(holder, 0)
    sc.at(410).pod_run(job, 0)
    sc.at(411).pod_run(job, 1)
    sc.framework(job, "AttemptRunning")
    sc.at(470).pod_exit(job, 0)
    sc.at(471).framework(job, "Completed", 0)
    sc.pod_delete(job, 0)
    sc.pod_delete(job, 1, code=-220)
    sc.at(472).end()
    sc.close()


def test_gang_bound_after_the_holders_pod_ended_but_before_its_framework_completed(cli, tmp_path: Path) -> None:
    path = tmp_path / "gap.jsonl"
    _gang_binds_in_the_release_gap(path)
    _, data = _json(cli, str(path))
    assert data["verdict"] == C, [a["answer"]["en"] for a in data["answers"] if a["verdict"] != C]


def test_check_names_whose_behaviour_an_expected_answer_describes() -> None:
    """A contrast run's rule expects its own scheduler's behaviour, not HiveD's (`hivedlab check`'s text)."""
    from hivedlab.checker.judging.verdicts import _expected_label

    assert _expected_label("hived", zh=False) == "HiveD would"
    assert _expected_label("default", zh=False) == "what the default scheduler would do"
    assert _expected_label("kube-batch", zh=True) == "预期（kube-batch）"
