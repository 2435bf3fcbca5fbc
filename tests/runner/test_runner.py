"""The experiment runner: action records, the run directory, failures recorded and the next experiment run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hivedlab.backends.protocol import RunInfo
from hivedlab.backends.sim import SimCluster
from hivedlab.basics.resources import SCHEMAS
from hivedlab.evidence import EvidenceWriter, read_evidence
from hivedlab.lab_group.inventory import load_inventory
from hivedlab.plans.loader import PlanJob, SubmitStep, WaitStep, load_plan
from hivedlab.runner import (
    PIPELINE,
    RunContext,
    experiment_seed,
    job_name_for,
    protocol_with_name,
    run_experiments,
    run_pipeline,
)

INVENTORY = load_inventory()


def sim_factory(seed: int = 1) -> Any:
    def make(plan: Any, writer: EvidenceWriter) -> SimCluster:
        return SimCluster(writer, experiment_seed(seed, plan.id))

    return make


def actions(path: Path) -> list[dict[str, Any]]:
    return [r.action for r in read_evidence(path).records if r.action is not None]


def test_job_names_are_unique_and_valid() -> None:
    assert job_name_for("job-config-0", "alice", "vc-safety", "s1") == "job-config-0-alice-vc-safety-s1"
    assert job_name_for("job config.0", "bob", "gang", "20260101t120000") == "job-config-0-bob-gang-20260101t120000"
    assert len(job_name_for("x" * 300, "bob", "gang", "s1")) == 255


def test_protocol_with_name_keeps_the_text() -> None:
    text = "# a comment\nprotocolVersion: 2\nname: job-config-0\ntype: job\ntaskRoles:\n  t:\n    name: inner\n"
    renamed = protocol_with_name(text, "new-name")
    assert renamed == text.replace("name: job-config-0", "name: new-name")
    assert protocol_with_name("type: job\n", "n") == "name: n\ntype: job\n"


def test_run_directory_and_records(tmp_path: Path) -> None:
    plans = [load_plan("priority"), load_plan("incremental")]
    ctx = RunContext(tmp_path, "sim", 1, INVENTORY, "s1")
    results = run_experiments(plans, sim_factory(), ctx)
    assert [r.outcome.status for r in results] == ["finished", "finished"]

    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert run["cluster"] == "sim" and run["seed"] == 1 and run["experiments"] == ["priority", "incremental"]
    assert run["finished"] is not None
    assert "Carol" in (tmp_path / "inventory.yaml").read_text(encoding="utf-8")
    assert (tmp_path / "hived" / "two-vc.yaml").is_file() and (tmp_path / "hived" / "one-vc.yaml").is_file()

    log = tmp_path / "experiments" / "priority" / "evidence.jsonl"
    assert read_evidence(log).chain_ok
    acts = actions(log)
    assert [a["type"] for a in acts] == [
        "plan",
        "config-switch",
        "submit",
        "step",
        "step",
        "submit",
        "step",
        "step",
        "end",
    ]
    assert acts[0] == {
        "type": "plan",
        "experiment": "priority",
        "plan": "labs/experiments/priority.yaml",
        "cluster": "sim",
        "seed": 1,
        "members": ["alice", "bob", "carol", "dan"],
        "hived_config": "two-vc",
        "scheduler": "hived",
    }
    assert acts[1]["text"] == (tmp_path / "hived" / "two-vc.yaml").read_text(encoding="utf-8")
    submit = acts[2]
    assert submit["job"] == "low" and submit["job_name"] == "job-config-1-alice-priority-s1"
    assert submit["reply"]["status"] == 202
    sent = tmp_path / "jobs" / "priority" / "job-config-1-alice-priority-s1.yaml"
    assert sent.read_text(encoding="utf-8") == submit["protocol"]
    assert acts[-1] == {"type": "end", "status": "finished"}

    schema = json.loads((SCHEMAS / "evidence-record.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    for line in log.read_text(encoding="utf-8").splitlines():
        validator.validate(json.loads(line))


def test_each_member_submits_once_per_member(tmp_path: Path) -> None:
    ctx = RunContext(tmp_path, "sim", 1, INVENTORY, "s1")
    result = run_experiments([load_plan("vc-safety")], sim_factory(), ctx)[0]
    assert [(s.user, s.job_name) for s in result.submitted] == [
        (u, f"job-config-0-{u}-vc-safety-s1") for u in ("alice", "bob", "carol", "dan")
    ]


def test_a_timed_out_wait_fails_the_experiment_and_the_next_one_runs(tmp_path: Path) -> None:
    gang = load_plan("gang")
    short = dataclasses.replace(
        gang, steps=(SubmitStep("holder"), WaitStep(("holder",), "finished", timeout=30.0, on_timeout="fail"))
    )
    ctx = RunContext(tmp_path, "sim", 1, INVENTORY, "s1")
    results = run_experiments([short, load_plan("priority")], sim_factory(), ctx)
    assert results[0].outcome.status == "failed" and results[0].outcome.reason == "holder not finished after 30 s"
    assert results[1].outcome.status == "finished"
    acts = actions(tmp_path / "experiments" / "gang" / "evidence.jsonl")
    assert acts[-2]["status"] == "timed-out" and acts[-1] == {
        "type": "end",
        "status": "failed",
        "reason": "holder not finished after 30 s",
    }
    outcomes = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["outcomes"]
    assert outcomes["gang"]["status"] == "failed"


def test_a_continue_on_timeout_goes_on(tmp_path: Path) -> None:
    gang = load_plan("gang")
    plan = dataclasses.replace(
        gang, steps=(SubmitStep("holder"), WaitStep(("holder",), "finished", timeout=5.0, on_timeout="continue"))
    )
    ctx = RunContext(tmp_path, "sim", 1, INVENTORY, "s1")
    assert run_experiments([plan], sim_factory(), ctx)[0].outcome.status == "finished"


def test_a_missing_job_file_is_a_one_line_failure(tmp_path: Path) -> None:
    gang = load_plan("gang")
    plan = dataclasses.replace(gang, jobs={**gang.jobs, "holder": PlanJob("holder", "no-such-job.yaml")})
    ctx = RunContext(tmp_path, "sim", 1, INVENTORY, "s1")
    result = run_experiments([plan], sim_factory(), ctx)[0]
    ended = result.outcome
    assert ended.status == "failed" and "job file jobs/no-such-job.yaml: cannot read (" in ended.reason
    assert "\n" not in ended.reason


def test_an_unexpected_acceptance_is_recorded(tmp_path: Path) -> None:
    gang = load_plan("gang")
    plan = dataclasses.replace(gang, steps=(SubmitStep("holder", expect="rejected"),))
    ctx = RunContext(tmp_path, "sim", 1, INVENTORY, "s1")
    run_experiments([plan], sim_factory(), ctx)
    step = [a for a in actions(tmp_path / "experiments" / "gang" / "evidence.jsonl") if a["type"] == "step"][0]
    assert step["status"] == "failed" and step["detail"] == "expected rejected, got alice: HTTP 202"


def test_an_interrupt_is_recorded_then_raised(tmp_path: Path) -> None:
    class Interrupting(SimCluster):
        def advance_until(self, predicate: Any, timeout_s: float) -> bool:
            raise KeyboardInterrupt

    ctx = RunContext(tmp_path, "sim", 1, INVENTORY, "s1")
    with pytest.raises(KeyboardInterrupt):
        run_experiments([load_plan("gang")], lambda plan, writer: Interrupting(writer), ctx)
    acts = actions(tmp_path / "experiments" / "gang" / "evidence.jsonl")
    assert acts[-1] == {"type": "end", "status": "interrupted", "reason": "interrupted by the user (Ctrl-C)",
                        "reason_zh": "被用户中断（Ctrl-C）"}
    outcome = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["outcomes"]["gang"]
    assert outcome["status"] == "interrupted" and outcome["at"].startswith("2026-01-01T")  # run.json says it too


def test_a_real_run_cut_short_in_its_first_experiment_keeps_its_run_tag(tmp_path: Path) -> None:
    """The run record is written before anything is submitted: running again resumes the run (the command reads the
    tag back, so the backend finds the jobs it submitted by name) instead of submitting them under a new tag."""
    from hivedlab.cli.commands.run import _previous_run_tag

    class Interrupting(SimCluster):
        def advance_until(self, predicate: Any, timeout_s: float) -> bool:
            raise KeyboardInterrupt

    ctx = RunContext(tmp_path, "pai", None, INVENTORY, "20260101t000000")
    with pytest.raises(KeyboardInterrupt):
        run_experiments([load_plan("gang")], lambda plan, writer: Interrupting(writer), ctx)
    assert _previous_run_tag(tmp_path) == "20260101t000000"
    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert run["finished"] is None and run["outcomes"]["gang"]["status"] == "interrupted"


def test_a_simulated_rerun_into_the_same_folder_is_refused_and_destroys_nothing(tmp_path: Path) -> None:
    from hivedlab.basics.errors import HivedlabError

    ctx = RunContext(tmp_path, "sim", 1, INVENTORY, "s1")
    run_experiments([load_plan("gang")], sim_factory(), ctx)
    log = tmp_path / "experiments" / "gang" / "evidence.jsonl"
    first = log.read_bytes()
    with pytest.raises(HivedlabError, match="already holds a simulated run of gang: .*--replace"):
        run_experiments([load_plan("priority"), load_plan("gang")], sim_factory(), ctx)
    assert log.read_bytes() == first
    assert not (tmp_path / "experiments" / "priority").exists()  # refused before anything ran


def test_replace_moves_the_earlier_simulated_run_aside(tmp_path: Path) -> None:
    run_experiments([load_plan("gang")], sim_factory(), RunContext(tmp_path, "sim", 1, INVENTORY, "s1"))
    first = (tmp_path / "experiments" / "gang" / "evidence.jsonl").read_bytes()
    other = RunContext(tmp_path, "sim", 2, INVENTORY, "s2", replace=True)
    run_experiments([load_plan("gang")], sim_factory(2), other)
    [aside] = (tmp_path / "replaced").iterdir()
    assert (aside / "experiments" / "gang" / "evidence.jsonl").read_bytes() == first
    assert sorted(p.name for p in (aside / "jobs" / "gang").iterdir())[0].endswith("-s1.yaml")
    assert sorted(p.name for p in (tmp_path / "jobs" / "gang").iterdir()) == [
        "job-config-5-alice-gang-s2.yaml",
        "job-config-6-alice-gang-s2.yaml",
    ]
    assert read_evidence(tmp_path / "experiments" / "gang" / "evidence.jsonl").records[0].seq == 0


def test_real_evidence_is_never_replaced_nor_mixed(tmp_path: Path) -> None:
    from hivedlab.basics.errors import HivedlabError

    log = tmp_path / "experiments" / "gang" / "evidence.jsonl"
    with EvidenceWriter(log, "k8s") as writer:
        writer.write_action("plan", {"experiment": "gang"})
    first = log.read_bytes()
    with pytest.raises(HivedlabError, match="from a real cluster, which hivedlab never replaces"):
        run_experiments([load_plan("gang")], sim_factory(),
                        RunContext(tmp_path, "sim", 1, INVENTORY, "s1", replace=True))
    assert log.read_bytes() == first and not (tmp_path / "replaced").exists()
    sim_dir = tmp_path / "sim"
    run_experiments([load_plan("gang")], sim_factory(), RunContext(sim_dir, "sim", 1, INVENTORY, "s1"))
    with pytest.raises(HivedlabError, match="holds a simulated run; a real run needs its own --out"):
        run_experiments([load_plan("gang")], sim_factory(), RunContext(sim_dir, "pai", None, INVENTORY, "t1"))


def test_a_resumed_real_run_appends_to_its_logs(tmp_path: Path) -> None:
    """The runner side of a resume (the backend that skips what was submitted is tested over HTTP in
    tests/backends/pai)."""
    ctx = RunContext(tmp_path, "pai", None, INVENTORY, "20260101t000000")
    make = lambda plan, writer: SimCluster(writer, 1)  # noqa: E731 - a stand-in backend writing k8s-sourced records
    run_experiments([load_plan("gang")], make, ctx)
    log = tmp_path / "experiments" / "gang" / "evidence.jsonl"
    first, count = log.read_bytes(), len(read_evidence(log).records)
    run_experiments([load_plan("gang")], make, ctx)
    again = read_evidence(log)
    assert log.read_bytes().startswith(first) and again.chain_ok and len(again.records) > count
    assert [r.seq for r in again.records] == list(range(len(again.records)))
    assert [a.get("resumed", False) for a in actions(log) if a["type"] == "plan"] == [False, True]
    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert len(run["sessions"]) == 2 and run["started"] == run["sessions"][0] and run["experiments"] == ["gang"]


def test_pipeline_is_declared_once_and_survives_a_failing_step(tmp_path: Path, monkeypatch: Any) -> None:
    assert [step.name for step in PIPELINE] == ["verdicts", "report"]
    from hivedlab.basics.errors import HivedlabError
    from hivedlab.runner import pipeline

    def broken(out: Path, runs: Any, lang: str, so_far: Any) -> str:
        raise HivedlabError("no evidence")

    monkeypatch.setattr(pipeline, "PIPELINE", (pipeline.PipelineStep("verdicts", broken), *pipeline.PIPELINE[1:]))
    result = run_pipeline(tmp_path, [], "en")
    assert result.notes["verdicts"] == "failed: no evidence" and "report" in result.notes


def test_what_a_backend_learnt_goes_into_run_json(tmp_path: Path) -> None:
    """Each backend's `run_info` after its run; what a later one did not learn keeps what an earlier one did."""

    class Informed(SimCluster):
        run_info = RunInfo(openpai_version="v1.2.0", emulated_nodes=("hostname-carol",), gpu_nodes={"g1": 1})

    def make(plan: Any, writer: EvidenceWriter) -> SimCluster:
        return Informed(writer) if plan.id == "gang" else SimCluster(writer)

    ctx = RunContext(tmp_path, "sim", 1, INVENTORY, "s1")
    run_experiments([load_plan("gang"), load_plan("priority")], make, ctx)
    record = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert record["openpai_version"] == "v1.2.0" and record["gpu_nodes"] == {"g1": 1}
    assert record["cluster_kind"] == {"kind": "rehearsal", "emulated_nodes": ["hostname-carol"]}


def test_a_backend_that_cannot_start_leaves_no_log(tmp_path: Path) -> None:
    from hivedlab.basics.errors import HivedlabError

    def refuse(plan: Any, writer: EvidenceWriter) -> SimCluster:
        raise HivedlabError("no kubeconfig")

    ctx = RunContext(tmp_path, "pai", None, INVENTORY, "20260101t000000")
    with pytest.raises(HivedlabError, match="no kubeconfig"):
        run_experiments([load_plan("gang")], refuse, ctx)
    assert not (tmp_path / "experiments" / "gang" / "evidence.jsonl").exists()
