"""The fixtures of the plain-Kubernetes backend tests: a fake API server with the kube-batch form's CRDs and the
operator + scheduler behind it, and a kubeconfig that points at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fakekubeflow import FakeKubeflow
from tests.support.k8s_crd_server import KUBE_BATCH_CRDS, FakeKubeApi


@pytest.fixture
def kube(request: pytest.FixtureRequest) -> Iterator[FakeKubeApi]:
    crds = getattr(request, "param", KUBE_BATCH_CRDS)
    with FakeKubeApi(crds) as api:
        yield api


@pytest.fixture
def world(kube: FakeKubeApi) -> FakeKubeflow:
    return FakeKubeflow(kube, run_ticks=10)


@pytest.fixture
def kubeconfig(kube: FakeKubeApi, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(kube.kubeconfig(), encoding="utf-8")
    return path
