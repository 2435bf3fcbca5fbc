"""The rehearsal's Kubeflow parts (hivedlab.rehearsal.kubeflow): the user's folder checked part by part, and the
programs started as their charts start them, on ports that move with the cluster's offset."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hivedlab.basics.errors import HivedlabError
from hivedlab.rehearsal.kubeflow import (
    ENV_KUBEFLOW,
    check_kubeflow,
    default_scheduler_argv,
    default_scheduler_config,
    kube_batch_argv,
    kubeflow_folder,
    require_kubeflow,
    tf_operator_argv,
)
from hivedlab.rehearsal.settings import Ports


def folder_with(tmp_path: Path, kube_batch: str = "v0.4.2", tf_operator: str = "v0.5.3") -> Path:
    for part, version in (("kube-batch", kube_batch), ("tf-operator", tf_operator)):
        (tmp_path / part).mkdir()
        (tmp_path / part / part).write_text("#!/bin/sh\n")
        (tmp_path / part / "VERSION").write_text(version + "\n")
    (tmp_path / "kube-batch" / "crds").mkdir()
    (tmp_path / "kube-batch" / "crds" / "podgroup.yaml").write_text("kind: CustomResourceDefinition\n")
    (tmp_path / "tf-operator" / "crd.yaml").write_text("kind: CustomResourceDefinition\n")
    return tmp_path


def test_a_complete_folder_is_ready(tmp_path: Path) -> None:
    programs = require_kubeflow(folder_with(tmp_path))
    assert programs.kube_batch.name == "kube-batch" and programs.tf_operator.name == "tf-operator"
    assert [p.name for p in programs.crds] == ["podgroup.yaml", "crd.yaml"]


def test_another_series_and_missing_parts_are_named_in_one_line(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, kube_batch="v0.5.0")
    (folder / "tf-operator" / "crd.yaml").unlink()
    problems = {p.name: p.problem for p in check_kubeflow(folder)}
    assert problems["kube-batch"] is not None and "want v0.4.x" in problems["kube-batch"]
    assert problems["TFJob CRD"] is not None and problems["tf-operator"] is None
    with pytest.raises(HivedlabError) as refused:
        require_kubeflow(folder)
    assert "\n" not in str(refused.value) and "kube-batch" in str(refused.value) and "TFJob CRD" in str(refused.value)


def test_the_folder_comes_from_the_option_or_the_variable(tmp_path: Path) -> None:
    assert kubeflow_folder(None, {}) is None
    assert kubeflow_folder(None, {ENV_KUBEFLOW: str(tmp_path)}) == tmp_path
    assert kubeflow_folder(str(tmp_path / "other"), {ENV_KUBEFLOW: str(tmp_path)}) == tmp_path / "other"


def test_the_programs_start_as_their_charts_start_them_on_moved_ports(tmp_path: Path) -> None:
    programs = require_kubeflow(folder_with(tmp_path))
    ports = Ports().shifted(1000)
    config = yaml.safe_load(default_scheduler_config(tmp_path / "kubeconfig", ports))
    assert config["kind"] == "KubeSchedulerConfiguration" and "profiles" not in config  # the default profile
    assert config["healthzBindAddress"] == f"127.0.0.1:{ports.default_scheduler + 50}"
    assert f"--secure-port={ports.default_scheduler}" in default_scheduler_argv(Path("ks"), tmp_path / "c", ports)
    batch = kube_batch_argv(programs, tmp_path / "kubeconfig", ports)
    assert f"--listen-address=127.0.0.1:{ports.kube_batch}" in batch and "--v=3" in batch
    assert not any(a.startswith("--scheduler-conf") for a in batch)  # the chart passes none: built-in plugins
    assert "--enable-gang-scheduling" in tf_operator_argv(programs)


def test_the_shipped_kubeflow_inventory_is_the_one_the_recordings_were_made_with() -> None:
    """docs/rehearsal.md runs the Kubeflow contrast with configs/group.kubeflow-rehearsal.yaml: the group and the
    nodes of the recorded pairs (tests/fixtures/stream-pairs/kubeflow/), so that following the doc reproduces them."""
    from hivedlab.basics.resources import CONFIGS

    shipped = yaml.safe_load((CONFIGS / "group.kubeflow-rehearsal.yaml").read_text(encoding="utf-8"))
    recorded_path = Path(__file__).resolve().parents[1] / "fixtures" / "stream-pairs" / "kubeflow" / "inventory.yaml"
    recorded = yaml.safe_load(recorded_path.read_text(encoding="utf-8"))
    assert shipped == recorded
    assert sum(1 for m in shipped["members"] if m.get("gpus") == 1 and "worker" in m["roles"]) == 4
