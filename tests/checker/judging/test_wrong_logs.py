"""Every rule of every plan held to a log that shows its opposite (the table in
tests/checker/judging/wrong_logs.py, docs/checker.md "Every rule held to its opposite"): the rule must call it
inconsistent and say what went wrong, while the honest run of the same plan and scheduler is consistent (when it
ran to its end; else not inconsistent); and no rule a plan declares, under any scheduler it judges, is left without
such a log."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hivedlab.basics.resources import EXPERIMENTS, SMOKE_PLANS
from hivedlab.checker.judging.judge import judge_file
from hivedlab.checker.judging.verdicts import Answer
from hivedlab.plans.loader import load_plans
from tests.checker.judging.wrong_logs import TABLE, Base, Key, Records, WrongLog, as_is, make_run, relabel
from tests.support import forge

# The contrast runs of the lab's experiments held to wrong logs beside each plan's own schedulers
# (docs/other-schedulers.md): gang scheduling and incremental starts are what the other schedulers do differently.
CONTRAST = {"gang": ("default", "kube-batch"), "incremental": ("default", "kube-batch")}
Runs = Callable[[Base], Records]


def declared() -> set[Key]:
    """(plan, rule, scheduler) for every rule the plans declare and every scheduler it judges: the schedulers the
    rule names, else those its plan runs under (its own, and the contrast runs above)."""
    keys: set[Key] = set()
    for plan in [*load_plans(EXPERIMENTS, contrast=True), *load_plans(SMOKE_PLANS)]:
        runs = (*plan.schedulers, *CONTRAST.get(plan.id, ()))
        for rule in plan.rules:
            keys |= {(plan.id, rule.id, scheduler) for scheduler in rule.scheduler or runs}
    return keys


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Each run a wrong log starts from, made once for the module, when first asked for."""
    folder, made = tmp_path_factory.mktemp("wrong-logs"), {}

    def run(base: Base) -> Records:
        if base not in made:
            made[base] = make_run(folder, *base)
        return made[base]

    return run


def honest(runs: Runs, plan: str, scheduler: str) -> Records:
    """The honest run of `plan` under `scheduler`; Volcano runs on a real cluster only: a kube-batch run stands in."""
    if scheduler == "volcano":
        return relabel("volcano")(runs((plan, "kube-batch")))
    return runs((plan, scheduler))


def judged(path: Path, records: Records, rule: str) -> tuple[Answer, str | None]:
    """The answer of `rule` on these records, and how the run ended (its end record's status)."""
    forge.write(path, records)
    verdict = judge_file(path)
    assert verdict.log.chain_ok, verdict.log.warnings  # re-sealed: judged on its behaviour, not its seal
    found = [a for a in verdict.answers if a.rule == rule]
    assert len(found) == 1, [a.rule for a in verdict.answers]
    return found[0], verdict.log.end_status


def answer_of(path: Path, records: Records, rule: str) -> Answer:
    return judged(path, records, rule)[0]


def test_every_rule_of_every_plan_has_a_wrong_log() -> None:
    keys = declared()
    assert not keys - set(TABLE), f"rules without a wrong log: {sorted(keys - set(TABLE))}"
    assert not set(TABLE) - keys, f"wrong logs for rules no plan declares: {sorted(set(TABLE) - keys)}"


def test_the_kube_batch_no_deadlock_rule_is_held_to_a_relabelled_default_run() -> None:
    """The case of issue #39: a default-scheduler run, relabelled as kube-batch, where the second job started
    partially and completed, was judged "no deadlock"."""
    wrong = TABLE[("kubeflow-gang", "no-deadlock", "kube-batch")]
    assert wrong.base == ("kubeflow-gang", "default") and wrong.says == "started partially instead of waiting whole"


@pytest.mark.parametrize("key", sorted(TABLE), ids="/".join)
def test_a_wrong_log_is_inconsistent_and_says_why(runs: Runs, tmp_path: Path, key: Key) -> None:
    plan, rule, scheduler = key
    wrong: WrongLog = TABLE[key]
    records = wrong.edit(runs(wrong.base))
    plan_record = next(r["action"] for r in records if (r.get("action") or {}).get("type") == "plan")
    assert (plan_record["experiment"], plan_record["scheduler"]) == (plan, scheduler)
    answer = answer_of(tmp_path / "wrong.jsonl", records, rule)
    assert answer.verdict == "inconsistent", answer.answer.en
    assert wrong.says in answer.answer.en, answer.answer.en
    assert answer.evidence, "the answer names the records it rests on"
    if wrong.edit is as_is and wrong.base == (plan, scheduler):
        return  # the scheduler's own run is the opposite (the contrast the run is made for)
    control, ended = judged(tmp_path / "honest.jsonl", honest(runs, plan, scheduler), rule)
    if ended == "finished":
        assert control.verdict == "consistent", f"the honest run is not consistent: {control.answer.en}"
    else:  # a job that can never run under this scheduler ends the run failed (docs/other-schedulers.md): the
        # rules whose evidence came before are judged as usual, the others cannot tell
        assert control.verdict != "inconsistent", f"the unfinished honest run ({ended}): {control.answer.en}"
