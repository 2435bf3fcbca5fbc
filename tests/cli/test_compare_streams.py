"""`hivedlab compare-streams`: help, bad input (one-line error, exit 2), and two runs compared (exit 0 when only
documented differences, 1 otherwise), contrast runs (`contrast/<id>@<scheduler>/`) among their experiments."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.kubeflow_run import write_gang_run
from tests.support.scenario import Scenario


def _gang(path: Path, source: str, node: str = "hostname-carol", wording: str = "didn't match node selector") -> Path:
    sc = Scenario(path, source=source, seed=path.stem)
    sc.plan("gang")
    sc.config("one-vc")
    job = sc.submit("alice", "gang", "job-config-6", "default", "test")
    sc.framework(job, "AttemptCreationPending", watch_type="ADDED")
    sc.pod_add(job, 0)
    sc.event(job.pods[0], "FailedScheduling", f"0/3 nodes are available: 1 node(s) {wording}.", "Warning")
    sc.pod_bind(job, 0, node)
    sc.pod_run(job, 0)
    sc.pod_exit(job, 0)
    sc.framework(job, "Completed", code=0)
    sc.end()
    sc.close()
    return path


def test_help_has_examples(cli: Callable[..., Any]) -> None:
    result = cli("compare-streams", "--help")
    assert result.code == 0 and "examples:" in result.out and "hivedlab compare-streams out-sim/" in result.out


def test_a_missing_run_is_a_one_line_error(cli: Callable[..., Any], tmp_path: Path) -> None:
    result = cli("compare-streams", str(tmp_path / "nope"), str(tmp_path))
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1 and "no such run directory" in result.err


def test_a_directory_without_runs_says_where_it_looked(cli: Callable[..., Any], tmp_path: Path) -> None:
    (tmp_path / "contrast" / "jobs" / "kubeflow-gang@default").mkdir(parents=True)  # job files, no log
    result = cli("compare-streams", str(tmp_path), str(tmp_path))
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1
    assert "no experiments/*/evidence.jsonl or contrast/*/evidence.jsonl" in result.err


def test_a_broken_chain_is_refused(cli: Callable[..., Any], tmp_path: Path) -> None:
    log = _gang(tmp_path / "a.jsonl", "sim")
    lines = log.read_text(encoding="utf-8").splitlines()
    (tmp_path / "b.jsonl").write_text("\n".join(lines[:2] + lines[3:]) + "\n", encoding="utf-8")
    result = cli("compare-streams", str(log), str(tmp_path / "b.jsonl"))
    assert result.code == 2 and "hash chain is broken" in result.err


def test_documented_differences_only_exit_0(cli: Callable[..., Any], tmp_path: Path) -> None:
    sim = _gang(tmp_path / "sim.jsonl", "sim")
    pai = _gang(tmp_path / "pai.jsonl", "k8s", wording="didn't match Pod's node affinity")
    result = cli("compare-streams", str(sim), str(pai))
    assert result.code == 0, result.out
    assert "[documented: node-affinity-wording]" in result.out and "0 undocumented" in result.out


def test_an_undocumented_difference_exits_1_and_names_the_fact(cli: Callable[..., Any], tmp_path: Path) -> None:
    sim = _gang(tmp_path / "sim.jsonl", "sim")
    pai = _gang(tmp_path / "pai.jsonl", "k8s", node="hostname-dan")
    result = cli("compare-streams", str(sim), str(pai), "--format", "json")
    assert result.code == 1
    report = json.loads(result.out)
    paths = [d["path"] for d in report["experiments"][0]["differences"] if not d["known"]]
    assert paths == ["placements", "job[gang@alice].placements", "job[gang@alice].task[train/0].attempt[0].node"]
    assert report["undocumented"] == 3


def test_run_directories_compare_experiment_by_experiment(cli: Callable[..., Any], tmp_path: Path) -> None:
    for side, source in (("a", "sim"), ("b", "k8s")):
        folder = tmp_path / side / "experiments" / "gang"
        folder.mkdir(parents=True)
        _gang(folder / "evidence.jsonl", source)
    (tmp_path / "a" / "experiments" / "smoke").mkdir()
    _gang(tmp_path / "a" / "experiments" / "smoke" / "evidence.jsonl", "sim")
    result = cli("compare-streams", str(tmp_path / "a"), str(tmp_path / "b"))
    assert result.code == 1 and "== smoke: only in A" in result.out
    assert cli("compare-streams", str(tmp_path / "a"), str(tmp_path / "b"), "--experiment", "gang").code == 0
    bad = cli("compare-streams", str(tmp_path / "a"), str(tmp_path / "b"), "--experiment", "gnag")
    assert bad.code == 2 and "in neither run" in bad.err


def test_contrast_runs_are_compared_as_experiments(cli: Callable[..., Any], tmp_path: Path) -> None:
    for side, source in (("a", "sim"), ("b", "k8s")):
        for scheduler in ("default", "kube-batch"):
            folder = tmp_path / side / "contrast" / f"kubeflow-gang@{scheduler}"
            folder.mkdir(parents=True)
            write_gang_run(folder / "evidence.jsonl", source, scheduler)
        (tmp_path / side / "experiments" / "gang").mkdir(parents=True)
        _gang(tmp_path / side / "experiments" / "gang" / "evidence.jsonl", source)
    result = cli("compare-streams", str(tmp_path / "a"), str(tmp_path / "b"))
    assert result.code == 0, result.out
    assert [line for line in result.out.splitlines() if line.startswith("==")] == [
        "== gang (A: sim, B: rehearsal)", "== kubeflow-gang@default (A: sim, B: rehearsal)",
        "== kubeflow-gang@kube-batch (A: sim, B: rehearsal)"]
    one = cli("compare-streams", str(tmp_path / "a"), str(tmp_path / "b"), "--experiment", "kubeflow-gang@kube-batch",
              "--format", "json")
    assert one.code == 0 and [e["experiment"] for e in json.loads(one.out)["experiments"]] == [
        "kubeflow-gang@kube-batch"]
    logs = [str(tmp_path / side / "contrast" / "kubeflow-gang@default" / "evidence.jsonl") for side in "ab"]
    assert "== kubeflow-gang@default (A: sim, B: rehearsal)" in cli("compare-streams", *logs).out
    bad = cli("compare-streams", str(tmp_path / "a"), str(tmp_path / "b"), "--experiment", "kubeflow-gang")
    assert bad.code == 2 and "kubeflow-gang@default, kubeflow-gang@kube-batch" in bad.err
