"""A stop is a stop (issue 41): once the user stopped the run's jobs (`hivedlab stop` from another terminal records
it in `pai/user-stops.jsonl`), the run submits nothing more and ends `stopped`; the later job's evidence never decides
a rule after the stop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hivedlab.checker.judging.judge import judge_file
from hivedlab.evidence import EvidenceWriter, read_evidence
from hivedlab.plans.loader import load_plan
from hivedlab.rundir import RunDir, UserStop
from hivedlab.runner import RunContext, Turn, run_plan
from hivedlab.runner.backends import Opening, backend_factory
from tests.support.simkit import INVENTORY


def _run_gang(folder: Path, stop_after_first_submit: bool) -> tuple[Any, Path]:
    plan = load_plan("gang")
    log = folder / "experiments" / "gang" / "evidence.jsonl"
    with EvidenceWriter(log, "sim") as writer:
        backend = backend_factory("sim", Opening(INVENTORY, 1))(plan, writer)
        if stop_after_first_submit:
            submit = backend.submit

            def submit_then_stop(user: str, job_key: str, protocol: str) -> Any:
                result = submit(user, job_key, protocol)
                RunDir(folder).record_user_stop(UserStop("hivedlab stop", (f"{user}~{result.job_name}",),
                                                         backend.now()))
                return result

            backend.submit = submit_then_stop  # type: ignore[method-assign]
        result = run_plan(Turn(plan), backend, writer, RunContext(folder, "sim", 1, INVENTORY, "s1"))
    return result, log


def _submitted_jobs(log: Path) -> list[str]:
    return [str(r.action["job"]) for r in read_evidence(log).records if r.action and r.action["type"] == "submit"]


def test_after_the_users_stop_the_run_submits_nothing_more_and_ends_stopped(tmp_path: Path) -> None:
    whole, _ = _run_gang(tmp_path / "whole", stop_after_first_submit=False)
    assert whole.outcome.status == "finished" and _submitted_jobs(tmp_path / "whole" / "experiments" / "gang" /
                                                                  "evidence.jsonl") == ["holder", "gang"]
    stopped, log = _run_gang(tmp_path / "stopped", stop_after_first_submit=True)
    assert stopped.outcome.status == "stopped" and stopped.outcome.by == "hivedlab stop"
    assert _submitted_jobs(log) == ["holder"]  # the gang job was never submitted after the stop
    verdict = judge_file(log)
    assert verdict.verdict == "inconclusive"
    assert all(a.answer.en.startswith("stopped by the user at ") for a in verdict.answers if a.verdict != "consistent")
