"""`hivedlab run`: help, bad arguments, a run on the simulated cluster, determinism, the real backend's absence."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import CliResult
from tests.support.sim_lab import SEED, SimLab


def test_help_has_examples(cli: Callable[..., CliResult]) -> None:
    result = cli("run", "--help")
    assert result.code == 0
    assert "examples:" in result.out and "hivedlab run all" in result.out and "--cluster" in result.out


def test_unknown_experiment_is_one_line(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = cli("run", "gnag", "--out", str(tmp_path))
    assert result.code == 2
    assert result.err.strip().count("\n") == 0 and "did you mean 'gang'" in result.err
    assert "Traceback" not in result.err


def test_bad_option_values(cli: Callable[..., CliResult]) -> None:
    assert cli("run", "all", "--cluster", "k8s").code == 2
    assert cli("run", "all", "--seed", "many").code == 2


def test_missing_inventory_is_one_line(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = cli("run", "gang", "--out", str(tmp_path), "--inventory", str(tmp_path / "nope.yaml"))
    assert result.code == 2 and "no group inventory at" in result.err and "configs/group.example.yaml" in result.err
    assert result.err.count("\n") == 1


def test_real_cluster_without_a_kubeconfig_is_one_line(
    cli: Callable[..., CliResult], tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    result = cli("run", "gang", "--cluster", "pai", "--out", str(tmp_path / "out"))
    errors = [line for line in result.err.splitlines() if line.startswith("hivedlab run: error:")]
    assert result.code == 2 and len(errors) == 1 and "no kubeconfig at" in errors[0] and "Traceback" not in result.err


def test_run_one_experiment_on_the_simulator(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = cli("run", "gang", "--out", str(tmp_path), "--seed", "3", "--no-report", "--lang", "en")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["experiment", "verdict", "answer"]
    assert lines[1].split()[0] == "gang" and lines[-2] == f"run directory: {tmp_path}"
    assert lines[-1].startswith(f"each experiment's evidence, verdicts and chart: {tmp_path / 'experiments'}")
    assert "report.md" not in result.out  # --no-report: no report to point to
    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert run["cluster"] == "sim" and run["seed"] == 3 and run["run_tag"] == "s3"
    assert (tmp_path / "experiments" / "gang" / "evidence.jsonl").is_file()
    names = sorted(p.name for p in (tmp_path / "jobs" / "gang").iterdir())
    assert names == ["job-config-5-alice-gang-s3.yaml", "job-config-6-alice-gang-s3.yaml"]


def test_summary_in_chinese_by_default(cli: Callable[..., CliResult], tmp_path: Path, quick_charts: None) -> None:
    result = cli("run", "priority", "--out", str(tmp_path))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["实验", "判定", "回答"]
    assert lines[1].split()[:2] == ["priority", "一致"]
    assert lines[-3] == f"运行目录：{tmp_path}"
    assert lines[-2] == f"实验报告：{tmp_path / 'report.md'}（浏览器打开 {tmp_path / 'report.html'}）"
    assert (tmp_path / "report.md").is_file() and (tmp_path / "report.html").is_file()


def test_same_seed_same_logs(cli: Callable[..., CliResult], sim_lab: SimLab, tmp_path: Path) -> None:
    """A second run with the session's seed writes the session run's logs byte for byte; another seed does not."""
    assert sim_lab.code == 0
    assert cli("run", "all", "--out", str(tmp_path / "a"), "--seed", str(SEED), "--no-report").code == 0
    for experiment in ("vc-safety", "priority", "opportunistic", "gang", "incremental"):
        rel = Path("experiments") / experiment / "evidence.jsonl"
        assert (tmp_path / "a" / rel).read_bytes() == (sim_lab.out / rel).read_bytes(), experiment
    assert cli("run", "priority", "--out", str(tmp_path / "c"), "--seed", "2", "--no-report").code == 0
    rel = Path("experiments") / "priority" / "evidence.jsonl"
    assert (tmp_path / "c" / rel).read_bytes() != (tmp_path / "a" / rel).read_bytes()


def test_run_all_with_report(sim_lab: SimLab) -> None:
    """The session's `hivedlab run all` (tests/support/sim_lab.py): every experiment consistent, with the report."""
    assert sim_lab.code == 0, sim_lab.stdout + sim_lab.stderr
    rows = [line.split()[:2] for line in sim_lab.stdout.splitlines()[1:6]]
    assert rows == [[e, "一致"] for e in ("vc-safety", "priority", "opportunistic", "gang", "incremental")]
    for experiment, _ in rows:
        path = sim_lab.out / "experiments" / experiment / "verdicts.json"
        verdicts = json.loads(path.read_text(encoding="utf-8"))
        assert verdicts["verdict"] == "consistent", (experiment, verdicts["answers"])
    out = sim_lab.out
    assert (out / "report.md").is_file() and (out / "report.html").is_file()
    assert (out / "claims.json").is_file() and (out / "experiments" / "gang" / "timeline.png").is_file()


def test_a_plans_sim_block_sets_the_simulators_knobs(tmp_path: Path) -> None:
    import dataclasses

    import pytest

    from hivedlab.backends.sim import SimCluster
    from hivedlab.basics.errors import HivedlabError
    from hivedlab.evidence import EvidenceWriter
    from hivedlab.lab_group.inventory import load_inventory
    from hivedlab.plans.loader import load_plan
    from hivedlab.runner.backends import Opening, backend_factory

    make = backend_factory("sim", Opening(load_inventory(), seed=1))
    plan = dataclasses.replace(load_plan("gang"), sim={"training_s": 10, "durations": {"holder": 30}})
    with EvidenceWriter(tmp_path / "e.jsonl", "sim") as writer:
        sim = make(plan, writer)
        assert isinstance(sim, SimCluster)
        assert sim.settings.training_s == 10.0 and sim.settings.durations == {"holder": 30.0}
        assert sim.other_nodes == 1 and sim.node_ips["hostname-dan"] == "192.0.2.13"
        with pytest.raises(HivedlabError, match="unknown key 'speed'"):
            make(dataclasses.replace(plan, sim={"speed": 2}), writer)


def test_a_bad_inventory_gets_the_same_sentence_from_run_and_validate(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    import yaml

    from hivedlab.basics.resources import GROUP_EXAMPLE

    data = yaml.safe_load(GROUP_EXAMPLE.read_text(encoding="utf-8"))
    data["members"][2]["roles"] = ["wroker"]
    path = tmp_path / "group.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    sentence = "unknown role 'wroker'; use dev-box, master, worker"
    ran = cli("run", "gang", "--inventory", str(path), "--out", str(tmp_path / "out"))
    checked = cli("validate", str(path))
    assert ran.code == 2 and sentence in ran.err and not (tmp_path / "out").exists()
    assert checked.code == 1 and sentence in checked.out


def test_a_group_told_to_use_the_simulated_cluster_can(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    """scheduler-config refuses a single one-GPU worker and points to the simulated cluster, which then runs."""
    import yaml

    members = [{"name": "Ana", "user": "ana", "roles": ["dev-box"], "hostname": "box", "ip": "192.0.2.1"},
               {"name": "Cy", "user": "cy", "roles": ["master"], "hostname": "master-cy", "ip": "192.0.2.3"},
               {"name": "Ben", "user": "ben", "roles": ["worker"], "hostname": "node-ben", "ip": "192.0.2.2",
                "gpus": 1}]
    inventory = tmp_path / "group.yaml"
    inventory.write_text(yaml.safe_dump({"group": "g", "members": members}), encoding="utf-8")
    refused = cli("scheduler-config", "one-vc", "--inventory", str(inventory), "--lang", "en")
    assert refused.code == 2 and "--cluster sim" in refused.err
    result = cli("run", "gang", "--inventory", str(inventory), "--out", str(tmp_path / "out"), "--no-report")
    assert result.code == 0, result.err
    run = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert run["outcomes"]["gang"]["status"] == "finished"
    assert run["hardware"]["gang"]["on"] == "manual" and "'one-vc'" in run["hardware"]["gang"]["why"]["en"]


def test_ctrl_c_during_the_report_says_what_is_complete_and_how_to_finish(cli, tmp_path, monkeypatch):
    """The simulation takes a moment, so a Ctrl-C nearly always lands in the report: say the experiments are done."""
    import hivedlab.runner

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    out = tmp_path / "out"
    with monkeypatch.context() as patch:
        patch.setattr(hivedlab.runner, "run_pipeline", interrupted)
        result = cli("run", "gang", "--out", str(out))
    assert result.code == 130 and len(result.err_lines) == 1
    assert f"the experiments had finished and their evidence is in {out / 'experiments'}" in result.err
    assert f"finish with `hivedlab report {out}`" in result.err and "实验已经完成" in result.err
    assert (out / "experiments" / "gang" / "evidence.jsonl").is_file() and not (out / "report.md").exists()
    finished = cli("report", str(out))
    assert finished.code == 0, finished.err
    assert (out / "report.md").is_file()
