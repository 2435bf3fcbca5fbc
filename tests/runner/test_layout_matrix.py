"""Every layout `plan_layout` renders, on the simulated cluster: the five experiments give consistent verdicts, a pod
placed in another VC's cells is judged inconsistent, and a group that cannot hold a config runs on the manual's
hardware (docs/checker.md#cells-not-machines). One run per layout, shared by the tests that read it."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hivedlab.backends.sim import SimCluster
from hivedlab.basics.resources import SCHEMAS
from hivedlab.checker.judging.judge import judge_file
from hivedlab.checker.judging.pod_facts import vc_cells_from_config
from hivedlab.checker.judging.verdicts import to_json
from hivedlab.evidence import EvidenceWriter, read_evidence
from hivedlab.lab_group.inventory import Inventory, Member
from hivedlab.lab_group.layouts import SIM_WORKER
from hivedlab.models.hived.annotations import LEAF_CELL_ISOLATION
from hivedlab.plans.loader import main_plans
from hivedlab.runner import RunContext, experiment_seed, run_experiments
from tests.support import forge

# the group's workers' GPUs: the manual's 2×1, then the layouts the README promises an equivalent config for
LAYOUTS = {"2x1": (1, 1), "1x2": (2,), "1x8": (8,), "2x2": (2, 2), "2x4": (4, 4), "3x1": (1, 1, 1), "1+2": (1, 2),
           "1x1": (1,)}
WORKERS = ("Wen", "Xia", "Yun")
EXPERIMENTS = ("vc-safety", "priority", "opportunistic", "gang", "incremental")


def group(gpus: tuple[int, ...]) -> Inventory:
    """A group with its own names: a dev-box, a master, and one worker per entry of `gpus`."""
    members = [Member("Alice", "alice", ("dev-box",), "box-alice", "192.0.2.10"),
               Member("Bob", "bob", ("master",), "master-bob", "192.0.2.11")]
    members += [Member(name, name.lower(), ("worker",), f"node-{name.lower()}", f"192.0.2.{20 + i}", count)
                for i, (name, count) in enumerate(zip(WORKERS, gpus, strict=False))]
    return Inventory("matrix", tuple(members))


@dataclass(frozen=True)
class LayoutRun:
    name: str
    inventory: Inventory
    out: Path
    verdicts: dict[str, Any]
    seconds: float


def _sim(plan: Any, writer: EvidenceWriter) -> SimCluster:
    return SimCluster(writer, experiment_seed(1, plan.id))


@pytest.fixture(scope="module", params=list(LAYOUTS))
def layout_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> LayoutRun:
    name = request.param
    inventory = group(LAYOUTS[name])
    out = tmp_path_factory.mktemp(f"layout-{name.replace('+', 'p')}")
    began = time.perf_counter()
    runs = run_experiments(main_plans(), _sim, RunContext(out, "sim", 1, inventory, "s1"))
    verdicts = {run.experiment: judge_file(run.evidence) for run in runs}
    return LayoutRun(name, inventory, out, verdicts, time.perf_counter() - began)


def test_every_layout_gives_five_consistent_verdicts(layout_run: LayoutRun) -> None:
    found = {experiment: result.verdict for experiment, result in layout_run.verdicts.items()}
    assert found == dict.fromkeys(EXPERIMENTS, "consistent"), (layout_run.name, {
        e: [(a.rule, a.answer.en) for a in r.answers if a.verdict != "consistent"]
        for e, r in layout_run.verdicts.items()})
    assert layout_run.seconds < 30, f"{layout_run.name}: one run of the five took {layout_run.seconds:.1f} s"


def test_answers_name_only_the_groups_own_machines(layout_run: LayoutRun) -> None:
    nodes = {cell.node for result in layout_run.verdicts.values()
             for shares in result.timeline.vc_cells.values() for share in shares for cell in share.cells}
    own = {m.hostname for m in layout_run.inventory.workers} | {SIM_WORKER}
    assert nodes <= own
    text = json.dumps([[a.answer.as_dict(), a.expected.as_dict() if a.expected else {}]
                       for result in layout_run.verdicts.values() for a in result.answers], ensure_ascii=False)
    for stranger in ("Carol", "Dan", "hostname-carol", "hostname-dan"):
        assert stranger not in text


def _config_text(log: Path) -> str:
    return next(str(r.action["text"]) for r in read_evidence(log).records
                if r.action is not None and r.action.get("type") == "config-switch")


def _bound(records: list[forge.Rec], user: str) -> list[forge.Rec]:
    """The pod records of `user`'s job that show it bound to a node."""
    return [r for r in records if (obj := forge.pod(r)) is not None and obj["spec"].get("nodeName")
            and obj["metadata"]["labels"].get("userName") == user]


def test_a_pod_in_another_vcs_cells_is_inconsistent(layout_run: LayoutRun, tmp_path: Path) -> None:
    """bob's vc1 job is bound, while it waited for alice's, to a free GPU that is not vc1's: on a chain of its own
    the default VC's, on a shared chain one more than vc1's count."""
    log = layout_run.out / "experiments" / "vc-safety" / "evidence.jsonl"
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    alice = {(r["watch"]["object"]["spec"]["nodeName"],
              r["watch"]["object"]["metadata"]["annotations"][LEAF_CELL_ISOLATION])
             for r in _bound(records, "alice")}
    target = next(cell for share in vc_cells_from_config(_config_text(log))["default"] for cell in share.cells
                  if (cell.node, str(cell.index)) not in alice)
    bob = str(forge.uid_of(_bound(records, "bob")[0]))
    forged = forge.bind_while_waiting(forge.rebind(records, bob, target.node, str(target.index)), bob)
    result = judge_file(forge.write(tmp_path / "evidence.jsonl", forged))
    placement = next(a for a in result.answers if a.rule == "on-vc-node")
    assert result.verdict == placement.verdict == "inconsistent", placement.answer.en
    assert "bob's job-config-0-bob-vc-safety-s1 was bound at" in placement.answer.en
    assert placement.facts["outside"] == [{"job": "bob's job-config-0-bob-vc-safety-s1",
                                           "cells": [f"{target.node}/{target.index}"]}]


def test_the_answers_carry_the_cells_as_facts(layout_run: LayoutRun) -> None:
    schema = json.loads((SCHEMAS / "verdict.schema.json").read_text(encoding="utf-8"))
    for result in layout_run.verdicts.values():
        jsonschema.validate(to_json(result), schema)
    placement = next(a for a in layout_run.verdicts["vc-safety"].answers if a.rule == "on-vc-node")
    (share,) = layout_run.verdicts["vc-safety"].timeline.vc_cells["vc1"]
    assert placement.facts == {"vc": "vc1", "outside": [], "vc_cells": [
        {"chain": share.chain, "count": 1, "cells": [f"{c.node}/{c.index}" for c in share.cells]}]}


def test_a_single_one_gpu_group_runs_on_the_manuals_hardware(layout_run: LayoutRun) -> None:
    run = json.loads((layout_run.out / "run.json").read_text(encoding="utf-8"))
    if layout_run.name != "1x1":
        assert {run_id: entry["on"] for run_id, entry in run["hardware"].items()} == dict.fromkeys(EXPERIMENTS, "group")
        notes = [note for entry in run["hardware"].values() for note in entry.get("notes", [])]
        assert all(set(note) == {"zh", "en"} and note["en"] for note in notes)  # how the config differs, if it does
        assert bool(notes) == (layout_run.name not in ("2x1",)), layout_run.name
        return
    assert set(run["hardware"]) == set(EXPERIMENTS)
    assert all(v["on"] == "manual" and "1 GPU" in v["why"]["en"] for v in run["hardware"].values())
    users = {r.action["user"] for result in layout_run.verdicts.values()
             for r in read_evidence(result.log.path).records
             if r.action is not None and r.action.get("type") == "submit"}
    assert users <= set(layout_run.inventory.users)
    text = _config_text(layout_run.out / "experiments" / "vc-safety" / "evidence.jsonl")
    assert "node-wen" in text and SIM_WORKER in text


def test_the_retry_summary_states_the_branch_it_took(layout_run: LayoutRun) -> None:
    """The results table's short answer of `retried-after`: on free cells while the preemptor still ran, or only after
    it ended; "waited" only where the new pod waited (the answer in full says which)."""
    for result in layout_run.verdicts.values():
        for answer in result.answers:
            if answer.summary is None or answer.rule not in ("low-retried-after-high", "oppo-waits-for-any-gpu"):
                continue
            zh, en = answer.summary.zh, answer.summary.en
            if "never preempted" in en:  # the preemptor found free cells: nothing was preempted, nothing re-created
                assert "没有被抢占" in zh and "re-created" not in en, (layout_run.name, en)
                continue
            free = "free_cells" in answer.facts
            assert ("still ran" in en and "仍在运行时" in zh) == free, (layout_run.name, en)
            assert ("only after" in en and "结束后才" in zh) != free, (layout_run.name, en)
            waited = "waited" in answer.answer.en
            assert ("waited" in en and "等待" in zh) == waited, (layout_run.name, en, answer.answer.en)


def test_the_preemptors_wait_names_its_job_not_a_pronoun(layout_run: LayoutRun) -> None:
    """"它的 Pod" after "HiveD 抢占了 <victim>" read as the victim's pod: the sentence names the preemptor instead."""
    for result in layout_run.verdicts.values():
        for answer in result.answers:
            assert "它的 Pod" not in answer.answer.zh and "its pod waited" not in answer.answer.en, answer.answer.en
            if "的 Pod 只等待调度到" in answer.answer.zh:
                preemptor = answer.answer.zh.split("的 Pod 只等待调度到")[0].rsplit("，", 1)[-1].strip()
                assert preemptor and preemptor in answer.answer.zh.split("没有等")[0], answer.answer.zh


def test_every_answer_of_the_preemption_rows_has_a_short_summary(layout_run: LayoutRun) -> None:
    """On every layout, the priority and opportunistic rows' results cells are short sentences of their own: on two
    4-GPU workers one cell used to be a 251-character sentence with full job names (a path without a summary)."""
    for experiment in ("priority", "opportunistic"):
        for answer in layout_run.verdicts[experiment].answers:
            if answer.kind not in ("preempts", "retried-after"):
                continue
            assert answer.summary is not None, (layout_run.name, experiment, answer.rule)
            assert len(answer.summary.zh) <= 120 and "-alice-" not in answer.summary.en, (
                layout_run.name, answer.rule, answer.summary.zh)
