"""The Kubeflow parts of the rehearsal cluster (`up --kubeflow DIR`): Kubernetes' default scheduler, kube-batch v0.4
and tf-operator v0.5 with gang scheduling, beside OpenPAI's programs, for `hivedlab run kubeflow-gang --cluster k8s`
(docs/rehearsal.md, "Kubeflow's programs").

The user's folder, like OpenPAI's, holds the programs at the modelled versions (hivedlab never builds or vendors them):

    kube-batch/kube-batch        kube-batch v0.4.x (VERSION beside it: v0.4.2), kubernetes-sigs/kube-batch
    kube-batch/crds/*.yaml       its PodGroup and Queue CRDs (the tag's config/crds/)
    tf-operator/tf-operator      tf-operator v0.5.x's tf-operator.v1beta2 (VERSION: v0.5.3), kubeflow/tf-operator
    tf-operator/crd.yaml         the TFJob CRD serving v1beta1 and v1beta2, as Kubeflow v0.5 installs it

kube-batch runs as its Helm chart starts it (no scheduler config: its built-in actions and plugins), tf-operator with
`--enable-gang-scheduling` (it then creates a PodGroup per TFJob and names kube-batch in the pods), and the default
scheduler with the default profile (`default-scheduler`). The `default` Queue is created as the chart does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hivedlab.basics.errors import HivedlabError
from hivedlab.rehearsal.programs import Part, version_file
from hivedlab.rehearsal.settings import Ports, resolve_folder

ENV_KUBEFLOW = "HIVEDLAB_REHEARSAL_KUBEFLOW"
KUBE_BATCH_SERIES = "v0.4."
TF_OPERATOR_SERIES = "v0.5."
LOOPBACK = "127.0.0.1"
DEFAULT_QUEUE = {"apiVersion": "scheduling.incubator.k8s.io/v1alpha1", "kind": "Queue",
                 "metadata": {"name": "default"}, "spec": {"weight": 1}}
# what must be served before the operator and kube-batch start (their informers fail on a missing resource)
# kubeadm's master taint: the Kubeflow article's cluster (kubeadm) has it, so a pod that asks for no GPU (a TFJob's
# parameter server) is not placed on the master. OpenPAI's runs leave the master untainted: kube-scheduler 1.20 checks
# taints before node affinity, and would word the master's FailedScheduling reason differently from the recorded runs.
MASTER_TAINT = {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}
SERVED = ("/apis/kubeflow.org/v1beta1/tfjobs", "/apis/scheduling.incubator.k8s.io/v1alpha1/podgroups",
          "/apis/scheduling.incubator.k8s.io/v1alpha1/queues")


@dataclass(frozen=True)
class KubeflowPrograms:
    kube_batch: Path
    tf_operator: Path
    crds: tuple[Path, ...]


def kubeflow_folder(option: str | None, environ: Mapping[str, str] | None = None) -> Path | None:
    return resolve_folder(option, os.environ if environ is None else environ, ENV_KUBEFLOW)


def check_kubeflow(folder: Path) -> list[Part]:
    """Each Kubeflow part with its problem (None: ready)."""
    crds = sorted((folder / "kube-batch" / "crds").glob("*.yaml"))
    return [
        Part("kube-batch", str(folder / "kube-batch"), version_file(folder / "kube-batch", "kube-batch",
                                                                    KUBE_BATCH_SERIES)),
        Part("kube-batch CRDs", str(folder / "kube-batch" / "crds"),
             None if crds else f"{folder / 'kube-batch' / 'crds'} holds no CRD (the tag's config/crds/*.yaml)"),
        Part("tf-operator", str(folder / "tf-operator"), version_file(folder / "tf-operator", "tf-operator",
                                                                      TF_OPERATOR_SERIES)),
        Part("TFJob CRD", str(folder / "tf-operator" / "crd.yaml"),
             None if (folder / "tf-operator" / "crd.yaml").is_file() else
             f"{folder / 'tf-operator' / 'crd.yaml'} is missing (the TFJob CRD serving v1beta1 and v1beta2)"),
    ]


def require_kubeflow(folder: Path) -> KubeflowPrograms:
    problems = [f"{p.name}: {p.problem}" for p in check_kubeflow(folder) if p.problem]
    if problems:
        raise HivedlabError("the Kubeflow parts cannot start; missing: " + "; ".join(problems)
                            + " (docs/rehearsal.md) / 演练集群缺少 Kubeflow 部件")
    return KubeflowPrograms(folder / "kube-batch" / "kube-batch", folder / "tf-operator" / "tf-operator",
                            (*sorted((folder / "kube-batch" / "crds").glob("*.yaml")),
                             folder / "tf-operator" / "crd.yaml"))


def default_scheduler_config(kubeconfig: Path, ports: Ports) -> str:
    """kube-scheduler 1.20 with its default profile (`default-scheduler`), no extender."""
    address = f"{LOOPBACK}:{ports.default_scheduler + 50}"
    return ("apiVersion: kubescheduler.config.k8s.io/v1beta1\nkind: KubeSchedulerConfiguration\n"
            f"clientConnection:\n  kubeconfig: {kubeconfig}\nleaderElection:\n  leaderElect: false\n"
            f"healthzBindAddress: {address}\nmetricsBindAddress: {address}\n")


def default_scheduler_argv(binary: Path, config: Path, ports: Ports) -> list[str]:
    return [str(binary), f"--config={config}", "--port=0", f"--bind-address={LOOPBACK}",
            f"--secure-port={ports.default_scheduler}", "--v=2"]


def default_scheduler_health(ports: Ports) -> str:
    return f"http://{LOOPBACK}:{ports.default_scheduler + 50}/healthz"


def kube_batch_argv(programs: KubeflowPrograms, kubeconfig: Path, ports: Ports) -> list[str]:
    """As kube-batch v0.4's Helm chart runs it (`--logtostderr --v 3`), on a loopback port of its own."""
    return [str(programs.kube_batch), f"--kubeconfig={kubeconfig}", f"--listen-address={LOOPBACK}:{ports.kube_batch}",
            "--logtostderr", "--v=3"]


def tf_operator_argv(programs: KubeflowPrograms) -> list[str]:
    """tf-operator.v1beta2 with gang scheduling (it reads the kubeconfig from KUBECONFIG)."""
    return [str(programs.tf_operator), "--enable-gang-scheduling", "--json-log-format=false", "--logtostderr"]
