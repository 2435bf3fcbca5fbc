"""`hivedlab run --cluster k8s` as a group runs it: the options, and the refusals that come as one line with exit
status 2 (no CRDs, an experiment without manifests, options for another cluster), over real HTTP to a fake API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.k8s_crd_server import FakeKubeApi


def _error_line(err: str) -> str:
    """The one error line; before it only the progress line of the run being started."""
    *before, last = err.strip().splitlines()
    assert all(line.startswith(("running ", "小组 / group: ")) for line in before), err  # and the group it used
    assert last.startswith("hivedlab run: error: ")
    return last


@pytest.fixture
def bare_kubeconfig(tmp_path: Path):
    with FakeKubeApi(frozenset()) as api:  # a plain cluster: no Kubeflow, no gang scheduler
        path = tmp_path / "kubeconfig"
        path.write_text(api.kubeconfig(), encoding="utf-8")
        yield path, api


def test_help_shows_the_k8s_options(cli):
    result = cli("run", "--help")
    assert result.code == 0
    for option in ("--cluster {sim,pai,k8s}", "--manifests", "--kubeconfig", "--context", "--cluster k8s"):
        assert option in result.out


def test_a_cluster_without_the_crds_is_refused_in_one_line(cli, bare_kubeconfig, tmp_path):
    kubeconfig, api = bare_kubeconfig
    out = tmp_path / "out"
    result = cli("run", "kubeflow-gang", "--cluster", "k8s", "--kubeconfig", str(kubeconfig), "--out", str(out))
    assert result.code == 2
    line = _error_line(result.err)
    assert "serves no TFJob (kubeflow.org/v1beta1)" in line and "install tf-operator v0.5" in line
    assert not list(out.rglob("evidence.jsonl")) and not api.objects["namespaces"]


def test_the_volcano_form_names_the_training_operator_and_volcano(cli, bare_kubeconfig, tmp_path):
    kubeconfig, _ = bare_kubeconfig
    result = cli("run", "kubeflow-gang", "--cluster", "k8s", "--kubeconfig", str(kubeconfig), "--scheduler", "volcano",
                 "--out", str(tmp_path / "out"))
    assert result.code == 2
    assert "kubeflow.org/v1)" in result.err and "Volcano" in result.err


@pytest.mark.parametrize(("args", "said"), [
    (("gang", "--cluster", "k8s"), "has no Kubernetes manifests"),
    (("kubeflow-gang", "--cluster", "k8s", "--scheduler", "kube-batch", "--manifests", "volcano"),
     "does not read the volcano manifests"),
    (("kubeflow-gang", "--cluster", "k8s", "--scheduler", "hived"), "runs no HiveD"),
    (("kubeflow-gang", "--scheduler", "volcano"), "--cluster k8s only"),
    (("kubeflow-gang", "--kubeconfig", "kc"), "are for --cluster k8s"),
    (("kubeflow-gang", "--cluster", "k8s", "--kubeconfig", "no-such-file"), "no kubeconfig at no-such-file"),
], ids=["no-manifests", "form-and-scheduler", "hived", "volcano-on-sim", "kubeconfig-on-sim", "no-kubeconfig"])
def test_a_wrong_combination_is_one_line(cli, tmp_path, args, said):
    result = cli("run", *args, "--out", str(tmp_path / "out"))
    assert result.code == 2
    assert said in _error_line(result.err)


@pytest.mark.parametrize("rehearsal", [False, True], ids=["real", "rehearsal"])
def test_the_gang_run_goes_through_the_cli(cli, tmp_path, monkeypatch, rehearsal):
    """The happy path on wall time: the fake cluster ticks in the background, the backend looks every 50 ms. On the
    rehearsal cluster (`rehearsal up --kubeflow`: its emulated kubelets' Nodes and container ids) run.json,
    claims.json and the report say so; a real cluster's evidence is a real plain Kubernetes cluster's."""
    from tests.support.fakekubeflow import FakeKubeflow
    from tests.support.k8s_crd_server import KUBE_BATCH_CRDS

    monkeypatch.setenv("HIVEDLAB_K8S_POLL_S", "0.05")
    out = tmp_path / "out"
    with FakeKubeApi(KUBE_BATCH_CRDS) as api:
        # the first job runs 1 s (50 ticks): long enough for the second job's pods to wait beside it, the premise of
        # the gang rules' question (a job over before the next one's pods appear leaves them inconclusive)
        world = FakeKubeflow(api, run_ticks=50, emulated=rehearsal)
        world.run_in_background(0.02)
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(api.kubeconfig(), encoding="utf-8")
        try:
            result = cli("run", "kubeflow-gang", "--cluster", "k8s", "--scheduler", "kube-batch", "--kubeconfig",
                         str(kubeconfig), "--out", str(out), "--lang", "en")
        finally:
            world.stop()
        assert result.code == 0, result.err
        assert not api.objects["namespaces"] and not api.objects["tfjobs"]
    assert "kubeflow-gang@kube-batch  consistent" in result.out
    verdicts = json.loads((out / "contrast" / "kubeflow-gang@kube-batch" / "verdicts.json").read_text())
    assert {a["rule"]: a["verdict"] for a in verdicts["answers"]} == {
        "all-or-nothing": "consistent", "no-deadlock": "consistent"}
    record = json.loads((out / "run.json").read_text())
    assert record["cluster"] == "k8s"
    nodes = ["k8s-g1", "k8s-g2", "k8s-g3", "k8s-g4"]
    assert record.get("cluster_kind") == ({"kind": "rehearsal", "emulated_nodes": nodes} if rehearsal else None)
    assert_named(out, rehearsal, "k8s-g1, k8s-g2, k8s-g3, k8s-g4")
    if rehearsal:  # run.json silent (an older hivedlab's, or edited): the log's emulated containers still say so
        del record["cluster_kind"]
        (out / "run.json").write_text(json.dumps(record))
        assert cli("report", str(out), "--lang", "en").code == 0
        assert_named(out, True, "k8s-g1, k8s-g2, k8s-g3")  # the nodes its pods ran on
        assert cli("report", str(out)).code == 0
        report = (out / "report.md").read_text(encoding="utf-8")
        assert "证据来自演练集群（`hivedlab rehearsal up --kubeflow`），不是真实的普通 Kubernetes 集群" in report
        assert "证据来源：带 Kubeflow 的演练集群" in report and "真实的普通 Kubernetes 集群（没有" not in report


def assert_named(out: Path, rehearsal: bool, nodes: str) -> None:
    """claims.json and the English report name the rehearsal cluster (its nodes), or a real plain cluster."""
    report = (out / "report.md").read_text(encoding="utf-8")
    assert json.loads((out / "claims.json").read_text())["rehearsal"] is rehearsal
    assert ("comes from a real plain Kubernetes cluster" in report) is not rehearsal
    assert ("Evidence source: a real plain Kubernetes cluster" in report) is not rehearsal
    assert ("the evidence in this report comes from the rehearsal cluster (`hivedlab rehearsal up --kubeflow`), "
            "not from a real plain Kubernetes cluster" in report) is rehearsal
    assert (f"(nodes {nodes}; container ids begin with `emulated://`)" in report) is rehearsal
    assert ("Evidence source: the rehearsal cluster with Kubeflow" in report) is rehearsal


@pytest.mark.parametrize("cluster, scheduler, runs", [
    ("k8s", None, [("kubeflow-gang", "default"), ("kubeflow-gang", "kube-batch")]),
    ("k8s", "kube-batch", [("kubeflow-gang", "kube-batch")]),
    ("sim", None, [("kubeflow-gang", "default"), ("kubeflow-gang", "kube-batch")]),
])
def test_each_scheduler_runs_once(cluster, scheduler, runs):
    """On the rehearsal cluster each run went twice (the plan was expanded per scheduler before the k8s form was
    chosen, and again after)."""
    from hivedlab.cli.commands.run import plans_to_run

    plans, _ = plans_to_run("kubeflow-gang", cluster, scheduler, None)
    assert [(plan.id, plan.scheduler) for plan in plans] == runs
