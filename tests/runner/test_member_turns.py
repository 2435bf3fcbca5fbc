"""Each member takes a turn: `hivedlab run --member NAME`, `run all --each-member`, the run directory's layout for
several members (docs/evidence.md), and what `check`, `report` and the numbered scripts make of it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hivedlab.cli.main import main
from hivedlab.evidence import read_evidence
from hivedlab.lab_group.inventory import load_inventory
from hivedlab.plans.loader import load_plan, main_plans
from hivedlab.runner import Turn, is_group_plan, plan_turns
from tests.conftest import CliResult
from tests.support.paths import ROOT
from tests.support.quick_charts import stub_charts

USERS = ("alice", "bob", "carol", "dan")  # configs/group.example.yaml, the default inventory
TURNS = ("priority", "opportunistic", "gang", "incremental")  # the manual's "按顺序依次实验" experiments

EXAMPLE = "configs/group.example.yaml"  # named: a script reads the repository's group.yaml, which a developer may have


def _records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _actions(log: Path, kind: str) -> list[dict]:
    return [r["action"] for r in _records(log) if r["kind"] == "action" and r["action"]["type"] == kind]


@pytest.fixture(scope="module")
def everyone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`hivedlab run all --each-member` on the simulated cluster, with the report (English; charts stubbed)."""
    out = tmp_path_factory.mktemp("each") / "out"
    with pytest.MonkeyPatch.context() as patch:
        stub_charts(patch)
        assert main(["run", "all", "--each-member", "--out", str(out), "--lang", "en"]) == 0
    return out


def test_vc_safety_is_the_groups_and_the_others_take_turns() -> None:
    plans = {plan.id: plan for plan in main_plans()}
    assert is_group_plan(plans["vc-safety"]) and not any(is_group_plan(plans[p]) for p in TURNS)
    turns = plan_turns([plans["vc-safety"], plans["priority"]], USERS)
    assert [t.run_id for t in turns] == ["vc-safety", *(f"priority/{u}" for u in USERS)]
    assert plan_turns([plans["priority"]]) == [Turn(plans["priority"])]  # the one-member layout, as before


def test_each_member_runs_every_experiment_in_the_manuals_order(everyone: Path) -> None:
    run = json.loads((everyone / "run.json").read_text(encoding="utf-8"))
    expected = ["vc-safety", *(f"{p}/{u}" for p in TURNS for u in USERS)]
    assert list(run["outcomes"]) == expected  # experiment by experiment, each member in inventory order
    assert all(o["status"] == "finished" for o in run["outcomes"].values())
    assert run["experiments"] == ["vc-safety", *TURNS]
    assert run["members"] == {"vc-safety": list(USERS), **{f"{p}/{u}": [u] for p in TURNS for u in USERS}}
    assert (everyone / "experiments" / "vc-safety" / "evidence.jsonl").is_file()
    for experiment in TURNS:
        folder = everyone / "experiments" / experiment
        assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == sorted(USERS)
        assert not (folder / "evidence.jsonl").exists()
        for user in USERS:
            log = folder / user / "evidence.jsonl"
            assert read_evidence(log).chain_ok
            assert {s["user"] for s in _actions(log, "submit")} == {user}  # only the member whose turn it is
            assert [p.get("turn") for p in _actions(log, "plan")] == [user]
            assert json.loads((folder / user / "verdicts.json").read_text(encoding="utf-8"))["verdict"] == "consistent"
            assert all(f"-{user}-{experiment}-" in p.name for p in (everyone / "jobs" / experiment / user).iterdir())


def test_vc_safety_runs_once_with_every_member_submitting(everyone: Path) -> None:
    log = everyone / "experiments" / "vc-safety" / "evidence.jsonl"
    assert [s["user"] for s in _actions(log, "submit")] == list(USERS)
    assert len(_actions(log, "plan")) == 1 and "turn" not in _actions(log, "plan")[0]


def test_the_report_has_one_row_per_experiment_naming_whose_runs(everyone: Path) -> None:
    report = (everyone / "report.md").read_text(encoding="utf-8")
    table = report[report.index("#### 2."):report.index("## Experiment details")]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == 5
    assert "(submitted by Alice, Bob, Carol, Dan at once)" in rows[0]
    assert all("(runs of Alice, Bob, Carol, Dan, each in turn; what follows is Alice's run)" in r for r in rows[1:])
    section = report[report.index("### 2. Priority"):report.index("### 3.")]
    for user, name in zip(USERS, ("Alice", "Bob", "Carol", "Dan"), strict=True):
        assert f"  - {name}: **consistent" in section
        assert f"(experiments/priority/{user}/evidence.jsonl)" in section
        assert (everyone / "experiments" / "priority" / user / "timeline.png").is_file()
    claims = json.loads((everyone / "claims.json").read_text(encoding="utf-8"))
    priority = next(e for e in claims["experiments"] if e["id"] == "priority")
    assert priority["members"] == ["Alice", "Bob", "Carol", "Dan"]
    assert [(t["member"], t["verdict"]) for t in priority["turns"]] == [(n, "consistent") for n in
                                                                         ("Alice", "Bob", "Carol", "Dan")]


def test_one_members_inconsistent_turn_makes_the_row_inconsistent(everyone: Path, tmp_path: Path, cli,
                                                                   quick_charts) -> None:
    import shutil

    out = tmp_path / "out"
    shutil.copytree(everyone, out)
    verdicts = out / "experiments" / "gang" / "carol" / "verdicts.json"
    data = json.loads(verdicts.read_text(encoding="utf-8"))
    verdicts.write_text(json.dumps({**data, "verdict": "inconsistent"}), encoding="utf-8")
    assert cli("report", str(out), "--lang", "en").code in (0, 1)
    claims = json.loads((out / "claims.json").read_text(encoding="utf-8"))
    gang = next(e for e in claims["experiments"] if e["id"] == "gang")
    assert gang["verdict"] == "inconsistent"
    assert [t["verdict"] for t in gang["turns"]] == ["consistent", "consistent", "inconsistent", "consistent"]
    section = (out / "report.md").read_text(encoding="utf-8")
    assert "  - Carol: **inconsistent" in section


def test_check_reads_every_members_log_in_order(everyone: Path, cli) -> None:
    result = cli("check", str(everyone), "--format", "json")
    assert result.code == 0, result.err
    paths = [Path(v["log"]["path"]).relative_to("experiments").parent.as_posix()
             for v in json.loads(result.out)]
    assert paths == ["vc-safety", *(f"{p}/{u}" for p in TURNS for u in USERS)]


def test_member_names_a_member_of_the_inventory(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = cli("run", "gang", "--member", "Eve", "--out", str(tmp_path))
    assert result.code == 2 and len(result.err_lines) == 1 and "Traceback" not in result.err
    assert "no member 'Eve'" in result.err and "Alice, Bob, Carol, Dan" in result.err
    assert not (tmp_path / "experiments").exists()
    both = cli("run", "gang", "--member", "Bob", "--each-member", "--out", str(tmp_path))
    assert both.code == 2 and "not allowed with" in both.err


def test_members_take_turns_into_one_folder(cli: Callable[..., CliResult], tmp_path: Path, quick_charts) -> None:
    for name in ("Bob", "carol"):  # a name or a user name, any case
        result = cli("run", "priority", "--member", name, "--out", str(tmp_path), "--no-report")
        assert result.code == 0, result.err
        assert f"每位组员的一轮：{tmp_path / 'experiments'}/<实验>/<用户名>/" in result.out
    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert run["members"] == {"priority/bob": ["bob"], "priority/carol": ["carol"]}
    again = cli("run", "priority", "--member", "Bob", "--out", str(tmp_path), "--no-report")
    assert again.code == 2 and "priority/bob" in again.err  # a simulated run is never overwritten
    carol = (tmp_path / "experiments" / "priority" / "carol" / "evidence.jsonl").read_bytes()
    replaced = cli("run", "priority", "--member", "Bob", "--out", str(tmp_path), "--no-report", "--replace")
    assert replaced.code == 0, replaced.err
    [aside] = (tmp_path / "replaced").iterdir()
    assert (aside / "experiments" / "priority" / "bob" / "evidence.jsonl").is_file()
    assert ((aside / "jobs" / "priority" / "bob").is_dir()
            and not (aside / "experiments" / "priority" / "carol").exists())
    assert (tmp_path / "experiments" / "priority" / "carol" / "evidence.jsonl").read_bytes() == carol
    report = cli("report", str(tmp_path), "--lang", "en")
    assert report.code == 0, report.err
    assert "(runs of Bob, Carol, each in turn; what follows is Bob's run)" in (tmp_path / "report.md").read_text(
        encoding="utf-8")


def test_the_default_run_keeps_the_one_member_layout(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    assert cli("run", "gang", "--out", str(tmp_path), "--no-report").code == 0
    log = tmp_path / "experiments" / "gang" / "evidence.jsonl"
    assert {s["user"] for s in _actions(log, "submit")} == {load_inventory(None).users[0]}
    assert "turn" not in _actions(log, "plan")[0]
    assert json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["members"] == {"gang": ["alice"]}


def test_member_on_vc_safety_still_submits_for_everyone(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    assert cli("run", "vc-safety", "--member", "Dan", "--out", str(tmp_path), "--no-report").code == 0
    log = tmp_path / "experiments" / "vc-safety" / "evidence.jsonl"
    assert [s["user"] for s in _actions(log, "submit")] == list(USERS)


@pytest.mark.parametrize(("script", "experiment"), [("04_priority.py", "priority"), ("03_vc_safety.py", "vc-safety")])
def test_numbered_scripts_take_member(script: str, experiment: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "labs" / script), "--member", "Carol", "--out", str(tmp_path),
                           "--no-report", "--lang", "en"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    group = is_group_plan(load_plan(experiment))
    assert ("every member submits at once" in done.stdout) == group
    assert ("Carol's turn to submit" in done.stdout) == (not group)
    folder = tmp_path / "experiments" / experiment / ("" if group else "carol")
    users = {s["user"] for s in _actions(folder / "evidence.jsonl", "submit")}
    assert users == (set(USERS) if group else {"carol"})


def test_numbered_script_refuses_an_unknown_member_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "labs" / "06_gang.py"), "--member", "Mallory", "--out",
                           str(tmp_path), "--inventory", EXAMPLE], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "no member 'Mallory'" in done.stderr
    assert "Mallory" not in done.stdout and "轮到" not in done.stdout  # no "Mallory's turn" before the refusal


def test_numbered_script_names_the_member_as_the_inventory_does(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "labs" / "04_priority.py"), "--member", "carol", "--out",
                           str(tmp_path), "--no-report", "--lang", "en", "--inventory", EXAMPLE], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "轮到 Carol 提交 / Carol's turn to submit" in done.stdout


def test_a_contrast_run_is_the_members_but_keeps_its_one_folder(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = cli("run", "kubeflow-gang", "--scheduler", "default", "--each-member", "--out", str(tmp_path),
                 "--no-report")
    assert result.code in (0, 1), result.err
    log = tmp_path / "contrast" / "kubeflow-gang@default" / "evidence.jsonl"
    assert {s["user"] for s in _actions(log, "submit")} == {"alice"} and len(_actions(log, "plan")) == 1
    turn = cli("run", "kubeflow-gang", "--scheduler", "default", "--member", "Dan", "--out", str(tmp_path / "dan"),
               "--no-report")
    assert turn.code in (0, 1), turn.err
    log = tmp_path / "dan" / "contrast" / "kubeflow-gang@default" / "evidence.jsonl"
    assert {s["user"] for s in _actions(log, "submit")} == {"dan"}


def test_without_run_json_the_turns_logs_still_say_where_they_ran(everyone: Path, tmp_path: Path, cli,
                                                                   quick_charts) -> None:
    import shutil

    out = tmp_path / "out"
    shutil.copytree(everyone, out)
    (out / "run.json").unlink()
    (out / "experiments" / "vc-safety").rename(tmp_path / "vc-safety")  # only members' turns are left
    assert cli("report", str(out), "--lang", "en").code in (0, 1)
    assert json.loads((out / "claims.json").read_text(encoding="utf-8"))["cluster"] == "sim"


def test_a_plain_run_beside_member_turns_is_listed_as_what_it_is(cli: Callable[..., CliResult],
                                                                  tmp_path: Path) -> None:
    """A plain run (the first member's) then `--member Alice`, then `--member Bob`: the report used to say "下面是
    Alice、Bob 的运行" and list two identical "Alice：" bullets."""
    assert cli("run", "gang", "--out", str(tmp_path)).code == 0
    assert cli("run", "gang", "--member", "Alice", "--out", str(tmp_path)).code == 0
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "（Alice 的 2 次运行；下面是第一次）" in report and "依次各做一遍" not in report
    assert "  - Alice（未指定 --member 的运行）：" in report and "  - Alice：" in report
    assert cli("run", "gang", "--member", "Bob", "--out", str(tmp_path), "--lang", "en").code == 0
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "(runs of Alice, Bob, each in turn; what follows is Alice's run)" in report
    assert "  - Alice (the run without --member):" in report


def test_a_members_turn_never_reuses_the_group_runs_job_names(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """The plain run is the first member's; `--member Alice` is a second run by the same member. OpenPAI never lets a
    name be used twice, and a real run that finds its name already submitted takes it as its own (resume): so the
    turn's jobs carry `turn-` before the run tag, and the report still shows the names a student knows."""
    assert cli("run", "gang", "--out", str(tmp_path)).code == 0
    assert cli("run", "gang", "--member", "Alice", "--out", str(tmp_path)).code == 0

    def submitted(log: Path) -> set[str]:
        actions = [r.action for r in read_evidence(log).records if r.kind == "action" and r.action is not None]
        return {a["job_name"] for a in actions if a.get("type") == "submit"}

    group = submitted(tmp_path / "experiments" / "gang" / "evidence.jsonl")
    turn = submitted(tmp_path / "experiments" / "gang" / "alice" / "evidence.jsonl")
    assert group == {"job-config-5-alice-gang-s1", "job-config-6-alice-gang-s1"}
    assert turn == {"job-config-5-alice-gang-turn-s1", "job-config-6-alice-gang-turn-s1"}
    from hivedlab.checker.report.timeline import timeline_for_chart

    shown = timeline_for_chart(tmp_path / "experiments" / "gang" / "alice" / "evidence.jsonl", "s1")
    assert {attempt.job for attempt in shown.attempts} == {"job-config-5", "job-config-6"}
