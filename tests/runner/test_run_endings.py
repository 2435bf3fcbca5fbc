"""How a run ends (`hivedlab.rundir.RunOutcome`): a refusal said where it happens, the exit table, and the advice
after a Ctrl-C that leads to a run directory graded as if it had never been interrupted."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import hivedlab.plans.loader
from hivedlab.basics.resources import JOBS
from hivedlab.runner.refusals import server_message

SENTENCE = ("which the plan expected it to accept, so this cannot be judged; "
            "run `hivedlab validate jobs/job-config-1.yaml`.")


@pytest.fixture
def misspelt_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The plans' jobs/ folder, with `instances:` misspelt `instance:` in job-config-1 (the priority plan's low job)."""
    jobs = tmp_path / "jobs"
    shutil.copytree(JOBS, jobs)
    job = jobs / "job-config-1.yaml"
    job.write_text(job.read_text(encoding="utf-8").replace("instances:", "instance:"), encoding="utf-8")
    monkeypatch.setattr(hivedlab.plans.loader, "JOBS", jobs)
    return jobs


def test_a_refused_submission_is_said_at_once_and_is_why_the_verdict_is_inconclusive(
        cli, tmp_path: Path, misspelt_jobs: Path, quick_charts: None) -> None:
    out = tmp_path / "out"
    result = cli("run", "priority", "--out", str(out), "--lang", "en")
    assert result.code == 3  # inconclusive, nothing inconsistent: the lab ran, and is not right yet
    notice = [line for line in result.err.splitlines() if "refused" in line]
    assert notice and "job-config-1-alice-priority-s1" in notice[0] and "HTTP 400" in notice[0]
    assert "InvalidProtocolError" in notice[0] and ".taskRoles.train.instance: unknown key 'instance'" in notice[0]
    assert notice[0].endswith(SENTENCE)
    assert "priority    inconclusive  refused: the rest-server refused alice's" in result.out

    record = json.loads((out / "run.json").read_text(encoding="utf-8"))["outcomes"]["priority"]
    assert record["status"] == "refused" and record["reason"].endswith(SENTENCE) and record["at"]
    verdict = json.loads((out / "experiments" / "priority" / "verdicts.json").read_text(encoding="utf-8"))
    assert verdict["verdict"] == "inconclusive" and verdict["log"]["end"] == "refused"
    unsure = [a for a in verdict["answers"] if a["verdict"] != "consistent"]
    assert unsure and all(a["answer"]["en"] == record["reason"] and a["missing"] == [a["answer"]] for a in unsure)
    assert all(a["answer"]["zh"] == record["reason_zh"] for a in unsure)
    cell = next(line for line in (out / "report.md").read_text(encoding="utf-8").splitlines()
                if line.startswith("| Priority"))
    assert cell.count("so this cannot be judged") == 1 and "Inconclusive. Inconclusive." not in cell


def test_the_chinese_results_cell_says_the_refusal_once(cli, tmp_path: Path, misspelt_jobs: Path,
                                                         quick_charts: None) -> None:
    out = tmp_path / "out"
    assert cli("run", "priority", "--out", str(out)).code == 3
    cell = next(line for line in (out / "report.md").read_text(encoding="utf-8").splitlines()
                if line.startswith("| 优先级"))
    assert cell.count("而计划预期它被接受，因此无法判断") == 1 and "无法判断。无法判断。" not in cell


def test_an_acceptance_the_plan_expected_refused_is_said_too(tmp_path: Path) -> None:
    from hivedlab.backends.sim import SimCluster
    from hivedlab.lab_group.inventory import load_inventory
    from hivedlab.plans.loader import SubmitStep, load_plan
    from hivedlab.runner import RunContext, run_experiments

    plan = dataclasses.replace(load_plan("gang"), steps=(SubmitStep("holder", expect="rejected"),))
    told: list[str] = []
    runs = run_experiments([plan], lambda _plan, writer: SimCluster(writer, seed=1),
                           RunContext(tmp_path, "sim", 1, load_inventory(), "s1"), notice=told.append)
    assert runs[0].outcome.status == "refused" and "which the plan expected it to refuse" in runs[0].outcome.reason
    assert len(told) == 1 and "accepted alice's" in told[0] and "(HTTP 202)" in told[0]


def test_server_messages_read_in_one_line() -> None:
    ajv = json.dumps([{"keyword": "required", "dataPath": ".taskRoles.a", "message": "needs  instances"},
                      {"dataPath": "", "message": "should be object"}])
    assert server_message(ajv) == ".taskRoles.a: needs instances; should be object"
    assert server_message("User bob is not allowed\n to do operation in vc1") == \
        "User bob is not allowed to do operation in vc1"
    assert server_message(None) == ""
    unknown = json.dumps([{"dataPath": ".taskRoles['train']", "message": "should NOT have additional properties",
                           "params": {"additionalProperty": "instance"}}])
    assert server_message(unknown) == ".taskRoles['train']: should NOT have additional properties ('instance')"


def test_report_and_check_rewrite_the_verdicts_so_the_grade_is_that_of_an_uninterrupted_run(
        cli, tmp_path: Path, quick_charts: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The advice after a Ctrl-C in the judging (`hivedlab report OUT`) ends in a folder graded as if the run had
    never been interrupted; `hivedlab check OUT` does the same."""
    import hivedlab.runner

    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert cli("run", "gang", "--out", str(whole)).code == 0
    expected = cli("grade", "--self", str(whole), "--format", "json").out

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(hivedlab.runner, "run_pipeline", interrupted)
        result = cli("run", "gang", "--out", str(cut))
    assert result.code == 130 and f"`hivedlab report {cut}`" in result.err
    assert not (cut / "experiments" / "gang" / "verdicts.json").exists()
    assert cli("report", str(cut)).code == 0
    graded = cli("grade", "--self", str(cut), "--format", "json").out
    assert graded.replace(str(cut), "X") == expected.replace(str(whole), "X")

    (cut / "experiments" / "gang" / "verdicts.json").unlink()
    (cut / "claims.json").write_text("{}", encoding="utf-8")
    assert cli("check", str(cut)).code == 0
    assert json.loads((cut / "claims.json").read_text(encoding="utf-8"))["lang"] == "zh"
    assert cli("grade", "--self", str(cut), "--format", "json").out.replace(str(cut), "X") == \
        expected.replace(str(whole), "X")


def test_a_ctrl_c_in_the_run_gives_the_command_that_runs_it_again(cli, tmp_path: Path, quick_charts: None,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """On the simulator the next command moves the interrupted run to replaced/ and runs again, with no option
    the message does not give; the interrupted run says so in run.json."""
    from hivedlab.backends.sim import SimCluster

    out = tmp_path / "out"
    with monkeypatch.context() as patch:
        patch.setattr(SimCluster, "advance_until", lambda *_args: (_ for _ in ()).throw(KeyboardInterrupt()))
        result = cli("run", "gang", "--out", str(out), "--seed", "3")
    said = [line for line in result.err.splitlines() if not line.startswith("小组 / group:")]  # the group it found
    assert result.code == 130 and len(said) == 1 and "Traceback" not in result.err
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["outcomes"]["gang"]["status"] == "interrupted"
    command = result.err.split("`")[1]
    assert command == f"hivedlab run gang --out {out} --seed 3 --replace"
    again = cli(*command.split()[1:])
    assert again.code == 0 and "replaced" in again.err
    assert list((out / "replaced").glob("*/experiments/gang/evidence.jsonl"))  # moved, never deleted


def test_a_ctrl_c_in_a_numbered_script_gives_the_script_back(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             quick_charts: None) -> None:
    """A student who started `python3 labs/06_gang.py` is told to run that again (it simulates again, moving the
    interrupted run aside), not a `hivedlab` command that is not on their PATH."""
    import sys

    import hivedlab.lab_scripts as lab_scripts
    from hivedlab.backends.sim import SimCluster

    seen: list[list[str]] = []

    def main(argv: list[str]) -> int:
        seen.append(list(argv))
        return 0

    monkeypatch.setattr(lab_scripts, "main", main)
    monkeypatch.setattr(sys, "argv", ["labs/06_gang.py"])
    out = tmp_path / "out"
    assert lab_scripts.run_experiment_step("gang", ["--out", str(out)], root=tmp_path) == 0
    (argv,) = seen
    again = argv[argv.index("--again-as") + 1]
    assert again == f"python3 labs/06_gang.py --out {out}"
    with monkeypatch.context() as patch:
        patch.setattr(SimCluster, "advance_until", lambda *_args: (_ for _ in ()).throw(KeyboardInterrupt()))
        result = cli(*argv)
    assert result.code == 130 and f"`{again}`" in result.err and "`hivedlab run" not in result.err
