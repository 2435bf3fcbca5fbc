"""Which inventory a command uses (--inventory, else ./group.yaml, else the example: said in one line), and a run
folder holding one group's runs."""

from __future__ import annotations

import json
from pathlib import Path

from hivedlab.lab_scripts import run_experiment_step, with_group
from tests.support.paths import ROOT

EXAMPLE = (ROOT / "configs" / "group.example.yaml").read_text(encoding="utf-8")
SEVEN = (EXAMPLE.replace("group: example-group", "group: group-seven")
         .replace("Alice", "Zhang").replace("alice", "zhang").replace("Carol", "Li").replace("carol", "li"))


def _group_of(out) -> str:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))["group"]


def test_the_current_folders_group_yaml_is_used_and_said(cli, tmp_path, monkeypatch, quick_charts):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "group.yaml").write_text(SEVEN, encoding="utf-8")
    result = cli("run", "gang", "--no-report", "--out", "o")
    assert result.code == 0, result.err
    assert _group_of(tmp_path / "o") == "group-seven"
    assert "小组 / group: group-seven (./group.yaml)\n" in result.err
    assert "name: Zhang" in (tmp_path / "o" / "inventory.yaml").read_text(encoding="utf-8")


def test_without_one_the_example_is_used_and_said(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("scheduler-config", "two-vc")
    assert result.code == 0
    (said,) = result.err.splitlines()
    assert said.startswith("小组 / group: example-group (configs/group.example.yaml) — the example: copy it to "
                           "./group.yaml")


def test_an_inventory_named_on_the_command_line_wins_and_needs_no_line(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "group.yaml").write_text("not: an inventory\n", encoding="utf-8")
    result = cli("scheduler-config", "two-vc", "--inventory", str(ROOT / "configs" / "group.example.yaml"))
    assert result.code == 0 and result.err == ""


def test_a_numbered_script_uses_the_repositorys_group_yaml(tmp_path, capsys, quick_charts):
    repository = tmp_path / "repo"
    repository.mkdir()
    (repository / "group.yaml").write_text(SEVEN, encoding="utf-8")
    out = tmp_path / "o"
    assert run_experiment_step("gang", ["--out", str(out), "--no-report"], root=repository) == 0
    assert _group_of(out) == "group-seven"
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("小组 / group: ")]
    assert said == [f"小组 / group: group-seven ({repository / 'group.yaml'})"]  # once, by the script
    assert with_group(["--inventory", "mine.yaml"], repository) == ["--inventory", "mine.yaml"]
    assert with_group([], tmp_path) == []  # no group.yaml there: the command finds its own


def test_a_folder_of_another_groups_runs_is_refused_then_replaced(cli, tmp_path, monkeypatch, quick_charts):
    out = tmp_path / "out"
    assert cli("run", "priority", "--out", str(out)).code == 0
    seven = tmp_path / "g7.yaml"
    seven.write_text(SEVEN, encoding="utf-8")
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    refused = cli("run", "priority", "--member", "Zhang", "--inventory", str(seven), "--out", str(out))
    assert refused.code == 2 and len(refused.err_lines) == 1
    (line,) = refused.err_lines
    assert "example-group (alice, bob, carol, dan)" in line and "group-seven (zhang, bob, li, dan)" in line
    assert "choose another --out, or pass --replace" in line
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before  # nothing written, nothing moved
    replaced = cli("run", "priority", "--member", "Zhang", "--inventory", str(seven), "--out", str(out), "--replace")
    assert replaced.code == 0, replaced.err
    (aside,) = (out / "replaced").iterdir()
    assert json.loads((aside / "run.json").read_text(encoding="utf-8"))["group"] == "example-group"
    assert (aside / "experiments" / "priority" / "evidence.jsonl").is_file()
    assert _group_of(out) == "group-seven"
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "alice" not in report.lower() and "Zhang" in report


def test_a_folder_holding_real_evidence_is_never_moved(cli, tmp_path, monkeypatch):
    out = tmp_path / "out"
    (out / "experiments" / "gang").mkdir(parents=True)
    (out / "experiments" / "gang" / "evidence.jsonl").write_text('{"source": "k8s"}\n', encoding="utf-8")
    (out / "inventory.yaml").write_text(SEVEN, encoding="utf-8")
    result = cli("run", "gang", "--out", str(out), "--replace")
    assert result.code == 2 and "choose another --out" in result.err and "--replace" not in result.err_lines[0]
    assert not (out / "replaced").exists()


def test_the_report_names_no_user_outside_the_inventory_it_shows(cli, tmp_path, quick_charts):
    """A folder mixed by hand (the run command refuses to): the report names only the inventory's members."""
    out = tmp_path / "out"
    assert cli("run", "priority", "--out", str(out)).code == 0  # alice's run, without --member
    assert cli("run", "priority", "--member", "Bob", "--out", str(out)).code == 0
    assert "（Alice、Bob 依次各做一遍" in (out / "report.md").read_text(encoding="utf-8")
    (out / "inventory.yaml").write_text(SEVEN, encoding="utf-8")  # Alice is not in group-seven
    assert cli("report", str(out)).code == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "（Bob 依次各做一遍；下面是未指定 --member 的运行）" in report
    assert all(who not in report.lower() for who in ("alice、", "、alice", "alice（", "alice,"))  # whose runs


def test_the_suite_runs_where_there_is_no_group_yaml():
    """A developer's own ./group.yaml (git-ignored) must not change what the tests' commands read."""
    assert not Path("group.yaml").exists() and Path("configs/group.example.yaml").is_file()
    assert Path.cwd().resolve() != ROOT.resolve()
