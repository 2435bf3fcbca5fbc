"""The five lab experiments on the simulated cluster with the HiveD model make the decisions of
docs/lab-experiments.md, whatever the seed (the seed moves times, never decisions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivedlab.backends.sim import SimCluster, settings_from_mapping
from hivedlab.evidence import EvidenceWriter
from hivedlab.models.openpai import naming
from hivedlab.plans.loader import load_plan
from hivedlab.runner import ExperimentRun, RunContext, Turn, experiment_seed, run_plan
from tests.support.simkit import INVENTORY, IPS, Seen, binds, events, read_log, waits

SEEDS = (1, 2, 3)
VC1 = "insufficient capacity when scheduling in VC vc1"
DEFAULT = "insufficient capacity when scheduling in VC default"
PHYSICAL = "insufficient capacity when scheduling in physical cluster"


def run(tmp_path: Path, experiment: str, seed: int) -> tuple[ExperimentRun, list[Seen], dict[str, str]]:
    """Run a shipped plan; returns the run, the log's objects and plan job key -> pod name prefix (framework)."""
    plan = load_plan(experiment)
    ctx = RunContext(tmp_path, "sim", seed, INVENTORY, f"s{seed}")
    log = tmp_path / "experiments" / experiment / "evidence.jsonl"
    with EvidenceWriter(log, "sim") as writer:
        sim = SimCluster(writer, experiment_seed(seed, experiment), settings_from_mapping(plan.sim), node_ips=IPS)
        result = run_plan(Turn(plan), sim, writer, ctx)
    prefixes = {s.job_key: naming.framework_name(s.user, s.job_name) for s in result.submitted}
    assert result.outcome.status == "finished", result.outcome.reason
    return result, read_log(log), prefixes


def nodes(seen: list[Seen], prefix: str) -> list[str]:
    return [node for _, _, node in binds(seen, prefix)]


@pytest.mark.parametrize("seed", SEEDS)
def test_vc_safety(tmp_path: Path, seed: int) -> None:
    result, seen, _ = run(tmp_path, "vc-safety", seed)
    order = [naming.framework_name(s.user, s.job_name) for s in result.submitted]
    assert [s.user for s in result.submitted] == ["alice", "bob", "carol", "dan"]
    all_binds = binds(seen)
    assert [name[:32] for _, name, _ in all_binds] == order  # one after another, in submission order
    assert {node for _, _, node in all_binds} == {"hostname-dan"}  # never the idle default VC's machine
    for framework in order[1:]:
        assert waits(seen, framework) == [VC1]
    assert waits(seen, order[0]) == []


@pytest.mark.parametrize("seed", SEEDS)
def test_priority_and_preemption(tmp_path: Path, seed: int) -> None:
    _, seen, fw = run(tmp_path, "priority", seed)
    low, high = fw["low"], fw["high"]
    assert [(name[:32], node) for _, name, node in binds(seen)] == [
        (low, "hostname-dan"),
        (high, "hostname-dan"),
        (low, "hostname-dan"),
    ]
    preempted = events(seen, "Preempted", low)
    assert len(preempted) == 1 and preempted[0].obj["message"].endswith(f"{high}-train-0 on node hostname-dan")
    assert waits(seen, high) == []  # the prod job did not wait: it preempted
    assert waits(seen, low) == [VC1]  # the re-created attempt waits
    attempts = {
        s.obj["metadata"]["annotations"]["FC_FRAMEWORK_ATTEMPT_ID"]
        for s in seen
        if s.resource == "pods" and s.name.startswith(low)
    }
    assert attempts == {"0", "1"}
    high_done = next(
        s.time
        for s in seen
        if s.resource == "pods" and s.name.startswith(high) and s.obj["status"]["phase"] == "Succeeded"
    )
    assert binds(seen, low)[1][0] == high_done  # the new attempt binds as soon as the prod job is done


@pytest.mark.parametrize("seed", SEEDS)
def test_opportunistic(tmp_path: Path, seed: int) -> None:
    _, seen, fw = run(tmp_path, "opportunistic", seed)
    prod, oppo, guest = fw["prod"], fw["oppo"], fw["guest"]
    assert nodes(seen, prod) == ["hostname-dan"]
    assert nodes(seen, oppo) == ["hostname-carol", "hostname-dan"]  # at once outside vc1, later on dan
    assert nodes(seen, guest) == ["hostname-carol"]
    preempted = events(seen, "Preempted", oppo)
    assert len(preempted) == 1 and f"{guest}-train-0 on node hostname-carol" in preempted[0].obj["message"]
    assert preempted[0].obj["source"] == {"component": "hivedscheduler-ds-default"}  # the preemptor's scheduler
    assert waits(seen, oppo) == [PHYSICAL]


@pytest.mark.parametrize("seed", SEEDS)
def test_gang(tmp_path: Path, seed: int) -> None:
    _, seen, fw = run(tmp_path, "gang", seed)
    holder, gang = fw["holder"], fw["gang"]
    assert nodes(seen, holder) == ["hostname-carol"]
    assert waits(seen, f"{gang}-train-0") == [DEFAULT] and waits(seen, f"{gang}-train-1") == [DEFAULT]
    both = binds(seen, gang)
    assert len(both) == 2 and both[0][0] == both[1][0]  # the same scheduling round
    assert sorted(node for _, _, node in both) == ["hostname-carol", "hostname-dan"]
    holder_done = next(
        s.time
        for s in seen
        if s.resource == "pods" and s.name.startswith(holder) and s.obj["status"]["phase"] == "Succeeded"
    )
    assert both[0][0] == holder_done  # only once both GPUs are free
    final = [s for s in seen if s.resource == "frameworks" and s.name == gang][-1].obj["status"]
    assert final["state"] == "Completed" and final["attemptStatus"]["completionStatus"]["code"] == 0


@pytest.mark.parametrize("seed", SEEDS)
def test_incremental(tmp_path: Path, seed: int) -> None:
    result, seen, fw = run(tmp_path, "incremental", seed)
    holder, elastic = fw["holder"], fw["elastic"]
    assert nodes(seen, holder) == ["hostname-carol"]
    assert nodes(seen, f"{elastic}-train-0") == ["hostname-dan"]  # at once, while the holder runs
    assert waits(seen, f"{elastic}-train-1") == [DEFAULT]
    # task 1 either binds carol after the holder ends, or never runs because task 0 already succeeded
    assert nodes(seen, f"{elastic}-train-1") in ([], ["hostname-carol"])

    rejected = [s for s in result.submitted if s.job_key == "over-gang"]
    assert len(rejected) == 1 and not rejected[0].accepted
    assert not any(s.name.startswith(fw["over-gang"]) for s in seen)  # a rejected job leaves no pod
    over = fw["over-elastic"]
    assert len(binds(seen, over)) == 4
    running, peak = set(), 0
    for s in seen:
        if s.resource == "pods" and s.name.startswith(over):
            if s.obj["status"]["phase"] == "Running" and s.watch != "DELETED":
                running.add(s.name)
            else:
                running.discard(s.name)
            peak = max(peak, len(running))
    assert peak == 2  # two tasks at a time


def test_rejected_submission_is_recorded_with_its_reply(tmp_path: Path) -> None:
    import json

    run(tmp_path, "incremental", 1)
    log = tmp_path / "experiments" / "incremental" / "evidence.jsonl"
    actions = [
        json.loads(line)["action"] for line in log.read_text(encoding="utf-8").splitlines() if '"kind":"action"' in line
    ]
    submit = next(a for a in actions if a["type"] == "submit" and a["job"] == "over-gang")
    assert submit["reply"] == {
        "status": 400,
        "body": {
            "code": "InvalidProtocolError",
            "message": "Job requests 4 SKUs, exceeds maximum 2 SKUs in VC default.",
        },
    }
    assert submit["expect"] == "rejected"
    step = next(a for a in actions if a["type"] == "step" and a["step"].get("submit", {}).get("job") == "over-gang")
    assert step["status"] == "reached"
