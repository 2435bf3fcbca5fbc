"""The plain-Kubernetes backend: Kubeflow's TFJob under a gang scheduler (kube-batch or Volcano) or Kubernetes'
default scheduler, no OpenPAI and no HiveD (docs/kubeflow-on-kubernetes.md). `open_backend` builds it for one
experiment run.

The cluster is reached as kubectl reaches it: `--kubeconfig` (else `KUBECONFIG`, else `~/.kube/config`, else the
in-cluster service account) and `--context` (else the kubeconfig's current context). `HIVEDLAB_K8S_POLL_S`: seconds
between looks at the jobs' states while waiting (default 5).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hivedlab.backends.k8s.backend import MANAGED_BY, K8sBackend, api_error_text
from hivedlab.backends.k8s.observed import Observed, TapWriter
from hivedlab.backends.protocol import RunInfo
from hivedlab.backends.watcher import LISTED_WITHIN_S, Watcher, close_api_client, make_api_client
from hivedlab.basics.errors import HivedlabError
from hivedlab.evidence import EvidenceWriter, emulated_node
from hivedlab.models.kubeflow.manifests import Form

__all__ = ["Clocks", "K8sBackend", "open_backend", "check_crds", "ensure_namespace", "RESOURCES"]

RESOURCES = ("pods", "events", "tfjobs", "podgroups")


def _warn(text: str) -> None:
    print(f"hivedlab: warning: {text}", file=sys.stderr)


def _served(api_client: Any, group: str, version: str) -> set[str]:
    """The resources the API server serves under group/version (API discovery); empty when it serves none."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        response = client.CustomObjectsApi(api_client).get_api_resources(group, version, _preload_content=False)
    except ApiException as exc:
        if exc.status == 404:
            return set()
        raise HivedlabError(f"cannot ask the API server for {group}/{version}: {api_error_text(exc)}") from None
    except Exception as exc:  # a connection refused, a TLS failure: one line, not a traceback
        raise HivedlabError(f"cannot reach the Kubernetes API server: {type(exc).__name__}: "
                            f"{str(exc).splitlines()[0][:200]}") from None
    try:
        body = json.loads(response.data)
    finally:
        response.release_conn()
    return {str(r.get("name")) for r in body.get("resources") or [] if isinstance(r, dict)}


def check_crds(api_client: Any, form: Form, gang: bool) -> None:
    """Refuse, naming what to install, a cluster that serves no TFJob (or, for a gang run, no PodGroup) of `form`."""
    wanted = [("tfjobs", "TFJob", form.tfjob_api)] + ([("podgroups", "PodGroup", form.podgroup_api)] if gang else [])
    missing = [f"{kind} ({api})" for plural, kind, api in wanted if plural not in _served(api_client, *api.split("/"))]
    if missing:
        raise HivedlabError(
            f"the cluster serves no {' and no '.join(missing)}: install {form.install} first "
            f"(docs/kubeflow-on-kubernetes.md) / 集群中没有 {'、'.join(missing)} 的 CRD：请先安装 {form.install}")


EXPECTED_GPUS = (1, 1, 1, 1)  # the experiment's cluster: four single-GPU nodes (docs/kubeflow-on-kubernetes.md)


def list_nodes(api_client: Any) -> list[dict[str, Any]]:
    """The cluster's Node objects as the API serves them."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        response = client.CoreV1Api(api_client).list_node(_preload_content=False)
    except ApiException as exc:
        raise HivedlabError(f"cannot list the cluster's nodes: {api_error_text(exc)}") from None
    try:
        body = json.loads(response.data)
    finally:
        response.release_conn()
    return [node for node in body.get("items") or [] if isinstance(node, dict)]


def gpu_nodes(nodes: list[dict[str, Any]]) -> dict[str, int]:
    """Each node's allocatable `nvidia.com/gpu` (nodes without GPUs left out)."""
    found = {}
    for node in nodes:
        raw = ((node.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu")
        if raw is not None and str(raw).isdigit() and int(raw) > 0:
            found[str((node.get("metadata") or {}).get("name"))] = int(raw)
    return found


def run_info(nodes: list[dict[str, Any]]) -> RunInfo:
    """What run.json keeps of the cluster: its GPU nodes, and the nodes the rehearsal cluster's emulated kubelets
    registered (`cluster_kind: {kind: rehearsal, ...}`, docs/rehearsal.md), as the OpenPAI backend finds them."""
    emulated = sorted(str((n.get("metadata") or {}).get("name")) for n in nodes if emulated_node(n))
    return RunInfo(emulated_nodes=tuple(emulated), gpu_nodes=gpu_nodes(nodes))


def layout_note(gpus: dict[str, int]) -> str:
    """"" for the experiment's four single-GPU nodes, else what differs (the outcomes then may too)."""
    if tuple(sorted(gpus.values())) == EXPECTED_GPUS:
        return ""
    shown = ", ".join(f"{name}: {count}" for name, count in sorted(gpus.items())) or "none"
    return (f"the experiment expects four nodes of one GPU each; this cluster has {sum(gpus.values())} GPU(s) "
            f"({shown}), so the jobs may not wait or deadlock as the rules expect / 实验需要四台单 GPU 节点，"
            f"该集群的 GPU 为 {shown}，结果可能与规则的预期不同")


def ensure_namespace(api_client: Any, namespace: str) -> None:
    """Make the run's own namespace; one hivedlab made earlier (a resumed run) is used again, anyone else's refused."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(api_client)
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": MANAGED_BY}}
    try:
        core.create_namespace(body)
        return
    except ApiException as exc:
        if exc.status != 409:
            raise HivedlabError(f"cannot create namespace {namespace}: {api_error_text(exc)}") from None
    labels = core.read_namespace(namespace).metadata.labels or {}
    if any(labels.get(key) != value for key, value in MANAGED_BY.items()):
        raise HivedlabError(f"namespace {namespace} exists and was not made by hivedlab: the run needs a namespace of "
                            f"its own (use another --out, or remove it) / 命名空间 {namespace} "
                            "已存在且不是 hivedlab 创建的")


@dataclass(frozen=True)
class Clocks:
    """How the backend waits and tells time: wall time, unless a test drives a fake cluster step by step."""

    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    now: Callable[[], str] | None = None  # the records' time; None: when they are written


def open_backend(
    writer: EvidenceWriter,
    form: Form,
    namespace: str,
    *,
    gang: bool = True,
    kubeconfig: str | None = None,
    context: str | None = None,
    api_client: Any = None,
    interactive: bool | None = None,
    poll_s: float | None = None,
    watcher_options: dict[str, Any] | None = None,
    clocks: Clocks | None = None,
    ask: Callable[[str], str] = input,
    warn: Callable[[str], None] = _warn,
) -> K8sBackend:
    """The backend for one experiment run whose evidence `writer` writes: checks the CRDs and the nodes' GPUs (a
    warning unless they are four single-GPU nodes; run.json keeps them as `gpu_nodes`, and the rehearsal cluster's
    emulated ones as its `cluster_kind`), makes the namespace and
    starts the watcher (pods, events, TFJobs and PodGroups of that namespace) before anything is created."""
    if poll_s is None:
        try:
            poll_s = float(os.environ.get("HIVEDLAB_K8S_POLL_S") or 5.0)
        except ValueError:
            raise HivedlabError("HIVEDLAB_K8S_POLL_S must be a number of seconds") from None
    api = api_client if api_client is not None else make_api_client(kubeconfig, context)
    try:
        check_crds(api, form, gang)
        learnt = run_info(list_nodes(api))
        ensure_namespace(api, namespace)
    except BaseException:
        close_api_client(api)
        raise
    note = layout_note(dict(learnt.gpu_nodes))
    if note:
        warn(note)
    observed = Observed()
    observed.replay(writer.path)
    tfjob_group, tfjob_version = form.tfjob_group_version
    group_group, group_version = form.podgroup_group_version
    clocks = clocks or Clocks()
    watcher = Watcher(api, namespace, TapWriter(writer, observed, clocks.now), resources=RESOURCES, pod_selector="",
                      custom={"tfjobs": (tfjob_group, tfjob_version, "tfjobs"),
                              "podgroups": (group_group, group_version, "podgroups")},
                      **(watcher_options or {}))
    backend = K8sBackend(api, namespace, observed=observed, watcher=watcher, run_info=learnt,
                         interactive=sys.stdin.isatty() if interactive is None else interactive, poll_s=poll_s,
                         sleep=clocks.sleep, clock=clocks.clock, now=clocks.now, ask=ask)
    late = watcher.start_listed(LISTED_WITHIN_S)
    if late:
        warn(late)
    return backend
