"""The optional `reconfig` plan on the simulated cluster: the two-VC config is switched to the one-VC config while a
vc1 job and a default job run (docs/experiment-plans.md); the runner records the switch and the checker judges it
consistent, whatever the seed. Also the `restart` step, and what the checker says when a switch did end a job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hivedlab.backends.sim import SimCluster, settings_from_mapping
from hivedlab.basics.resources import SCHEMAS
from hivedlab.checker.judging.judge import judge_file
from hivedlab.evidence import EvidenceWriter, read_evidence
from hivedlab.plans.loader import load_plan, plan_from_dict
from hivedlab.runner import RunContext, Turn, experiment_seed, run_plan
from tests.support.simkit import INVENTORY, IPS, binds, events, read_log


def run(tmp_path: Path, plan: Any, seed: int = 1) -> tuple[Path, dict[str, str]]:
    ctx = RunContext(tmp_path, "sim", seed, INVENTORY, f"s{seed}")
    log = tmp_path / "experiments" / plan.id / "evidence.jsonl"
    with EvidenceWriter(log, "sim") as writer:
        sim = SimCluster(writer, experiment_seed(seed, plan.id), settings_from_mapping(plan.sim), node_ips=IPS)
        result = run_plan(Turn(plan), sim, writer, ctx)
    assert result.outcome.status == "finished", result.outcome.reason
    from hivedlab.models.openpai.naming import framework_name

    return log, {s.job_key: framework_name(s.user, s.job_name) for s in result.submitted}


@pytest.mark.parametrize("seed", (1, 2, 3))
def test_reconfig_runs_and_is_judged_consistent(tmp_path: Path, seed: int) -> None:
    log, fw = run(tmp_path, load_plan("reconfig"), seed)
    seen = read_log(log)
    # nothing ends at the switch; the test job submitted afterwards preempts a demoted prod job, and the vc1 job,
    # preempted in turn, is never bound again; the late vc1 submission is accepted and never bound either. No
    # scheduler serves vc1 after the switch, so nothing tries those pods and no event names them.
    preempted = [e.name[:32] for e in events(seen, "Preempted")]
    assert sorted(preempted) == sorted([fw["vc1-job"], fw["default-job"]])
    assert [node for _, name, node in binds(seen) if name.startswith(fw["vc1-job"])] == ["hostname-dan"]
    assert not [name for _, name, _ in binds(seen) if name.startswith(fw["late-vc1"])]
    assert fw["late-vc1"] in {s.name[:32] for s in seen if s.resource == "pods"}
    vc1_pods = (fw["vc1-job"], fw["late-vc1"])
    assert not [e for e in events(seen, "FailedScheduling") if e.name.startswith(vc1_pods)]
    verdict = judge_file(log, "reconfig")
    assert verdict.verdict == "consistent", [(a.rule, a.answer.en) for a in verdict.answers]
    assert [a.kind for a in verdict.answers] == [
        "survives-switch", "preempts-one-of", "submission-after-switch", "stranded-after-switch"]
    assert (tmp_path / "hived" / "one-vc.yaml").is_file() and (tmp_path / "hived" / "two-vc.yaml").is_file()


def test_the_switch_is_recorded_as_the_schema_says(tmp_path: Path) -> None:
    log, _ = run(tmp_path, load_plan("reconfig"))
    records = read_evidence(log).records
    switches = [r.action for r in records if r.action is not None and r.action["type"] == "config-switch"]
    assert [(s["name"], s.get("step")) for s in switches] == [("two-vc", None), ("one-vc", 3)]
    validator = jsonschema.Draft202012Validator(
        json.loads((SCHEMAS / "evidence-record.schema.json").read_text(encoding="utf-8")))
    for line in log.read_text(encoding="utf-8").splitlines():
        assert not list(validator.iter_errors(json.loads(line))), line[:200]


def test_a_restart_step_keeps_the_running_job(tmp_path: Path) -> None:
    data = dict(load_plan("priority").raw or {})
    data["steps"] = [*data["steps"][:2], {"restart": "hived"}, *data["steps"][2:]]
    plan = plan_from_dict(data, tmp_path / "priority.yaml")
    log, _ = run(tmp_path, plan)
    acts = [r.action for r in read_evidence(log).records if r.action is not None]
    restart = next(a for a in acts if a["type"] == "restart")
    assert restart == {"type": "restart", "component": "hived", "config": "two-vc", "step": 2}
    assert judge_file(log, "priority").verdict == "consistent"  # the restart changed no decision


def test_a_switch_that_ends_a_job_is_inconsistent(tmp_path: Path) -> None:
    data = dict(load_plan("reconfig").raw or {})
    switch = data["steps"].index({"switch_config": "one-vc"})
    data["steps"] = [*data["steps"][:switch], {"stop": "default-job"}, *data["steps"][switch:]]
    log, _ = run(tmp_path, plan_from_dict(data, tmp_path / "reconfig.yaml"))
    verdict = judge_file(log, "reconfig")
    survives = next(a for a in verdict.answers if a.kind == "survives-switch")
    assert survives.verdict != "consistent"
