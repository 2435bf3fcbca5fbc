"""A cluster whose nodes are labelled as emulated (the rehearsal cluster) is named so in run.json."""

from __future__ import annotations

from pathlib import Path

from hivedlab.backends.pai import EMULATED_NODE_LABEL, emulated_nodes
from hivedlab.rehearsal.kubelet import KUBELET_VERSION
from tests.support.k8s_server import KUBECONFIG, FakeApiServer


def test_only_the_emulated_kubelets_nodes_are_named(tmp_path: Path) -> None:
    """Labelled as the emulated kubelets label their Nodes, or only their kubelet version saying so."""
    with FakeApiServer() as api:
        api.add("nodes", "w2", labels={EMULATED_NODE_LABEL: "true"})
        api.add("nodes", "w1", labels={EMULATED_NODE_LABEL: "true"})
        api.add("nodes", "w3", status={"nodeInfo": {"kubeletVersion": KUBELET_VERSION}})
        api.add("nodes", "gpu-box", labels={"kubernetes.io/hostname": "gpu-box"},
                status={"nodeInfo": {"kubeletVersion": "v1.15.11"}})
        config = tmp_path / "kubeconfig"
        config.write_text(KUBECONFIG.format(url=api.url), encoding="utf-8")
        assert emulated_nodes(config, None) == ["w1", "w2", "w3"]


def test_a_cluster_that_cannot_be_asked_has_none(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(KUBECONFIG.format(url="http://127.0.0.1:9"), encoding="utf-8")
    assert emulated_nodes(config, None) == []
