"""Runs without HiveD (docs/other-schedulers.md): `hivedlab run kubeflow-gang` under Kubernetes' default scheduler
and kube-batch, judged by the gang and deadlock rules; `--scheduler` on the simulated cluster only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hivedlab.evidence import read_evidence
from tests.support.quick_charts import stub_charts


def _records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _events(log: Path, reason: str) -> list[dict]:
    return [r["watch"]["object"] for r in _records(log) if r["kind"] == "object"
            and r["watch"]["resource"] == "events" and r["watch"]["object"]["reason"] == reason]


@pytest.fixture(scope="module")
def kubeflow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hivedlab.cli.main import main

    out = tmp_path_factory.mktemp("kubeflow")
    with pytest.MonkeyPatch.context() as patch:
        stub_charts(patch)
        assert main(["run", "kubeflow-gang", "--out", str(out), "--lang", "en"]) == 0
    return out


@pytest.mark.parametrize("scheduler, rules", [("default", {"partial-start", "deadlock"}),
                                              ("kube-batch", {"all-or-nothing", "no-deadlock"})])
def test_both_schedulers_are_judged_consistent(kubeflow_run: Path, scheduler: str, rules: set[str]) -> None:
    folder = kubeflow_run / "contrast" / f"kubeflow-gang@{scheduler}"
    verdict = json.loads((folder / "verdicts.json").read_text(encoding="utf-8"))
    assert verdict["verdict"] == "consistent"
    assert {a["rule"] for a in verdict["answers"]} == rules
    log = folder / "evidence.jsonl"
    assert read_evidence(log).chain_ok
    plan = _records(log)[0]["action"]
    assert plan["type"] == "plan" and plan["scheduler"] == scheduler


def test_the_default_scheduler_words_its_events(kubeflow_run: Path) -> None:
    log = kubeflow_run / "contrast" / "kubeflow-gang@default" / "evidence.jsonl"
    failed = _events(log, "FailedScheduling")
    assert {e["source"]["component"] for e in failed} == {"default-scheduler"}
    assert any("Insufficient nvidia.com/gpu" in e["message"] for e in failed)
    scheduled = _events(log, "Scheduled")
    assert all(e["message"].startswith("Successfully assigned default/") for e in scheduled)


def test_kube_batch_words_its_events_and_marks_the_pod_group(kubeflow_run: Path) -> None:
    log = kubeflow_run / "contrast" / "kubeflow-gang@kube-batch" / "evidence.jsonl"
    assert _events(log, "FailedScheduling") == []  # the default scheduler's word, not kube-batch's
    failed = _events(log, "Unschedulable")
    assert {e["source"]["component"] for e in failed} == {"kube-batch"}
    assert any(e["message"] == "0/4 nodes are available, 4 insufficient GPU." for e in failed)
    pods = [r["watch"]["object"] for r in _records(log) if r["kind"] == "object" and r["watch"]["resource"] == "pods"]
    assert {p["spec"]["schedulerName"] for p in pods} == {"kube-batch"}
    assert all("scheduling.k8s.io/group-name" in p["metadata"]["annotations"] for p in pods)


def test_contrast_runs_stay_out_of_the_graded_experiments(kubeflow_run: Path) -> None:
    run = json.loads((kubeflow_run / "run.json").read_text(encoding="utf-8"))
    assert run["experiments"] == []
    assert run["contrast"] == ["kubeflow-gang@default", "kubeflow-gang@kube-batch"]
    assert not (kubeflow_run / "experiments").exists()


def test_scheduler_is_a_usage_error_on_a_real_cluster(cli, tmp_path: Path) -> None:
    result = cli("run", "gang", "--cluster", "pai", "--scheduler", "default", "--out", str(tmp_path))
    assert result.code == 2
    assert "--scheduler applies to the simulated cluster and --cluster k8s" in result.err


def test_one_scheduler_can_be_picked(cli, tmp_path: Path) -> None:
    result = cli("run", "kubeflow-gang", "--scheduler", "kube-batch", "--out", str(tmp_path), "--no-report")
    assert result.code == 0
    assert sorted(p.name for p in (tmp_path / "contrast").iterdir()) == ["hived", "jobs", "kubeflow-gang@kube-batch"]
    assert (tmp_path / "contrast" / "hived" / "four-gpu-nodes.yaml").is_file()
    assert not (tmp_path / "hived").exists()  # nothing the grader would take for the group's own config


def test_the_report_gives_contrast_runs_their_own_section(kubeflow_run: Path) -> None:
    report = (kubeflow_run / "report.md").read_text(encoding="utf-8")
    section = report[report.index("## Contrast: runs without HiveD (ungraded)"):]
    assert "#### kubeflow-gang@default" in section and "#### kubeflow-gang@kube-batch" in section
    assert "| default | kube-batch |" in section  # the two charts side by side
    assert "Scheduler: Kubernetes' default scheduler (1.14/1.15)" in section
    assert "Scheduler: kube-batch (v0.4)" in section
    default, kube_batch = section.split("#### kubeflow-gang@kube-batch")
    partial = [line for line in default.splitlines() if line.startswith("tfjob-gang-2")]
    assert [line.split()[2] for line in partial] == ["Running", "Running", "Pending"]  # ps-0, worker-0, worker-1
    whole = [line for line in kube_batch.splitlines() if line.startswith("tfjob-gang-2")]
    assert [line.split()[2] for line in whole] == ["Pending", "Pending", "Pending"]
    assert re.search(r"`kubectl get pod` \(at T\+\d:\d\d:\d\d\):", section)  # the report's one clock
    assert (kubeflow_run / "contrast" / "kubeflow-gang@default" / "timeline.png").is_file()
    assert "contrast" not in json.loads((kubeflow_run / "claims.json").read_text(encoding="utf-8"))


def test_the_five_experiments_run_under_another_scheduler(cli, tmp_path: Path, quick_charts: None) -> None:
    """Contrast runs of the lab's experiments: judged by HiveD's rules, which need not hold; the exit stays 0."""
    result = cli("run", "all", "--scheduler", "kube-batch", "--out", str(tmp_path), "--lang", "en")
    assert result.code == 0
    runs = sorted(p.name for p in (tmp_path / "contrast").iterdir() if "@" in p.name)
    assert runs == sorted(f"{e}@kube-batch" for e in ("vc-safety", "priority", "opportunistic", "gang", "incremental"))
    gang = json.loads((tmp_path / "contrast" / "gang@kube-batch" / "verdicts.json").read_text(encoding="utf-8"))
    assert {a["rule"]: a["verdict"] for a in gang["answers"]} == {"gang-waits": "consistent",
                                                                  "gang-together": "consistent"}
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    section = report[report.index("#### gang@kube-batch"):]
    assert "HiveD's guarantees that held here: 2/2" in section
    vc_safety = report[report.index("#### vc-safety@kube-batch"):]
    assert "| no |" in vc_safety.split("####")[1]  # no VCs without HiveD: jobs land outside vc1


def test_a_contrast_only_plan_cannot_run_under_hived(cli, tmp_path: Path) -> None:
    result = cli("run", "kubeflow-gang", "--scheduler", "hived", "--out", str(tmp_path))
    assert result.code == 2 and "runs only without HiveD" in result.err


def test_a_contrast_chart_has_node_lanes_and_no_vc_bands(kubeflow_run: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from hivedlab.checker.report import contrast
    from hivedlab.checker.report.charts import ChartData

    drawn: list[ChartData] = []

    def capture(data: ChartData, lang: str = "en", salt: str = "") -> tuple[bytes, str]:
        drawn.append(data)
        return b"\x89PNG\r\n\x1a\n", "<svg/>"

    monkeypatch.setattr("hivedlab.checker.report.charts.draw", capture)
    contrast._chart(kubeflow_run / "contrast" / "kubeflow-gang@default", tmp_path, "en")
    (data,) = drawn
    assert data.vc_bands == ()
    assert {lane.kind for lane in data.lanes} <= {"node", "gpu", "wait", "rejected"}
    nodes = [lane.label for lane in data.lanes if lane.kind == "node"]
    assert nodes == sorted(nodes) and nodes


def test_a_scheduler_without_vcs_is_never_said_to_leave_a_vcs_gpus_idle(cli, tmp_path: Path) -> None:
    """gang under kube-batch: the idle GPU is named as a GPU (kube-batch knows nodes, not HiveD's VCs); under HiveD
    the same sentence names the VC whose GPU it is."""
    assert cli("run", "gang", "--scheduler", "kube-batch", "--out", str(tmp_path / "kb"), "--no-report").code == 0
    assert cli("run", "gang", "--out", str(tmp_path / "hived"), "--no-report", "--seed", "1").code == 0
    from hivedlab.checker.judging.judge import judge_file

    contrast = judge_file(tmp_path / "kb" / "contrast" / "gang@kube-batch" / "evidence.jsonl", "gang")
    hived = judge_file(tmp_path / "hived" / "experiments" / "gang" / "evidence.jsonl", "gang")
    said = " ".join(a.answer.en + " " + (a.summary.en if a.summary else "") for a in contrast.answers)
    assert "although hostname-dan GPU 0 was free" in said and "VC default" not in said
    assert "although VC default's hostname-dan GPU 0 was free" in hived.answers[0].answer.en
