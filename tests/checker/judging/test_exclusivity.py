"""GPU exclusivity on every experiment: wrong-behaviour logs (honest simulator logs edited and re-sealed) where two
pods hold one GPU are inconsistent, naming both pods and their records; the honest logs stay consistent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import forge

C, X = "consistent", "inconsistent"


def _exclusive(data: dict) -> dict | None:
    return next((a for a in data["answers"] if a["kind"] == "gpu-exclusive"), None)


def incremental_on_holders_gpu() -> list[forge.Rec]:
    """The incremental job's first task bound onto the GPU the holder job still runs on."""
    records = forge.load("from-simulator-incremental.jsonl")
    holder = forge.uid_with(records, "-train-0", node="hostname-carol")
    first = forge.uid_with(records, "-train-0", node="hostname-dan")
    assert holder != first
    return forge.rebind(records, first, "hostname-carol", "0")


def default_vc_on_opportunistic_gpu() -> list[forge.Rec]:
    """No preemption at all: the default VC's job is bound onto the GPU the opportunistic job keeps running on."""
    records = forge.load("from-simulator-opportunistic.jsonl")
    oppo = forge.uid_with(records, "-train-0", node="hostname-carol")
    name = next(forge.pod_of(r)["metadata"]["name"] for r in records if forge.uid_of(r) == oppo)
    preempted_at = next(r["seq"] for r in records
                        if (r.get("watch") or {}).get("object", {}).get("reason") == "Preempted")
    retry = {forge.uid_of(r) for r in records if forge.pod(r) and forge.pod_of(r)["metadata"]["name"] == name} - {oppo}
    records = forge.drop(records, lambda r: forge.uid_of(r) in retry
                         or (forge.involved(r) == name and r["seq"] >= preempted_at)
                         or (forge.uid_of(r) == oppo and bool(forge.pod_of(r)["metadata"].get("deletionTimestamp"))))
    end = next(i for i, r in enumerate(records) if (r.get("action") or {}).get("type") == "end")
    return forge.finish(records, oppo, end - 1)


@pytest.mark.parametrize("name", ["from-simulator-vc-safety.jsonl", "from-simulator-priority.jsonl",
                                  "from-simulator-opportunistic.jsonl", "from-simulator-gang.jsonl",
                                  "from-simulator-incremental.jsonl", "priority-consistent.jsonl"])
def test_honest_logs_hold_each_gpu_once(cli, name: str) -> None:
    data = forge.check(cli, forge.LOGS / name)
    assert data["verdict"] == C
    assert _exclusive(data) is None


def test_resealed_honest_log_stays_consistent(cli, tmp_path: Path) -> None:
    path = forge.write(tmp_path / "log.jsonl", forge.load("from-simulator-priority.jsonl"))
    assert forge.check(cli, path)["verdict"] == C


@pytest.mark.parametrize("make", [incremental_on_holders_gpu, default_vc_on_opportunistic_gpu])
def test_two_pods_on_one_gpu_is_inconsistent(cli, tmp_path: Path, make) -> None:
    records = make()
    data = forge.check(cli, forge.write(tmp_path / "log.jsonl", records))
    assert data["verdict"] == X
    answer = _exclusive(data)
    assert answer is not None and answer["verdict"] == X
    assert "hostname-carol GPU 0" in answer["answer"]["en"] and "hostname-carol" in answer["answer"]["zh"]
    pods = {forge.pod_of(r)["metadata"]["uid"] for r in forge.reseal(records) if forge.pod(r)}
    named = [uid for uid in pods if uid in answer["answer"]["en"]]
    assert len(named) == 2, answer["answer"]["en"]
    assert len(answer["evidence"]) >= 3
    assert answer["expected"]["en"]


def test_count_check_without_bind_info(tmp_path: Path) -> None:
    """Pods of another scheduler (no bind info): more GPUs asked on a node than the config gives it."""
    from hivedlab.checker.judging.rules.exclusivity import gpu_exclusive
    from hivedlab.checker.judging.timeline import build_timeline
    from hivedlab.evidence import iter_evidence

    records = forge.load("from-simulator-incremental.jsonl")
    for record in records:
        obj = forge.pod(record)
        if obj:
            obj["metadata"]["annotations"] = {k: v for k, v in obj["metadata"]["annotations"].items()
                                              if not k.startswith("hivedscheduler.microsoft.com/pod-")}
            for container in obj["spec"]["containers"]:
                container["resources"]["limits"]["nvidia.com/gpu"] = "1"
    honest = forge.write(tmp_path / "honest.jsonl", records)
    assert gpu_exclusive(build_timeline(iter_evidence(honest))).verdict == C
    first = forge.uid_with(records, "-train-0", node="hostname-dan")
    wrong = forge.write(tmp_path / "wrong.jsonl", forge.rebind(records, first, "hostname-carol", ""))
    outcome = gpu_exclusive(build_timeline(iter_evidence(wrong)))
    assert outcome.verdict == X
    assert "hostname-carol" in outcome.answer.en and "1 in all" in outcome.answer.en


SIM_LOGS = ["from-simulator-vc-safety.jsonl", "from-simulator-priority.jsonl", "from-simulator-opportunistic.jsonl",
            "from-simulator-gang.jsonl", "from-simulator-incremental.jsonl"]


@pytest.mark.parametrize("name", SIM_LOGS)
def test_a_holder_that_never_lets_go_is_inconsistent_in_every_experiment(cli, tmp_path: Path, name: str) -> None:
    data = forge.check(cli, forge.write(tmp_path / name, forge.postpone_release(forge.load(name))))
    assert data["verdict"] == X
    answer = _exclusive(data)
    assert answer is not None and answer["verdict"] == X and "still held it" in answer["answer"]["en"]


def _gap(synthetic: bool) -> list[forge.Rec]:
    """A watch gap: the holder's end is missed; after the re-list the next pod on its GPU is LISTED, then the holder's
    DELETED record comes (the watcher writes a synthetic one for an object gone while it was away)."""
    import copy

    records = forge.load("from-simulator-incremental.jsonl")
    holder = forge.uid_with(records, "-train-0", node="hostname-carol")
    last_seen = [r for r in records
                 if forge.uid_of(r) == holder and forge.pod_of(r)["status"].get("phase") == "Running"][-1]
    records = forge.drop(records, lambda r: forge.uid_of(r) == holder and (
        r["watch"]["type"] == "DELETED" or forge.pod_of(r)["status"].get("phase") == "Succeeded"))
    later = next(i for i, r in enumerate(records) if forge.pod(r) and forge.uid_of(r) != holder
                 and forge.pod_of(r)["spec"].get("nodeName") == "hostname-carol"
                 and r["seq"] > last_seen["seq"] + 20)
    listed = copy.deepcopy(records[later])
    listed["watch"]["type"] = "LISTED"
    deleted = copy.deepcopy(last_seen)
    deleted["watch"]["type"] = "DELETED"
    deleted["time"] = listed["time"]
    if synthetic:
        deleted["watch"]["synthetic"] = True
    return [*records[:later], listed, deleted, *records[later + 1:]]


def test_a_pod_gone_in_a_watch_gap_freed_its_gpu_before_the_relist(cli, tmp_path: Path) -> None:
    honest = forge.check(cli, forge.write(tmp_path / "gap.jsonl", _gap(synthetic=True)))
    assert _exclusive(honest) is None
    forged = _exclusive(forge.check(cli, forge.write(tmp_path / "late.jsonl", _gap(synthetic=False))))
    assert forged is not None and forged["verdict"] == X
