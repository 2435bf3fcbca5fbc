"""The one backend opener: for a cluster kind, the factory that gives each run a fresh backend. Each backend's
module is imported only when its kind is asked for (the kubernetes client alone takes a quarter of a second)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hivedlab.backends.protocol import Backend
from hivedlab.evidence import EvidenceWriter
from hivedlab.lab_group.inventory import Inventory
from hivedlab.plans.loader import Plan
from hivedlab.runner.run_types import BackendFactory, Turn
from hivedlab.runner.steps import experiment_seed, group_seed
from hivedlab.runner.turns import submitting_members


@dataclass(frozen=True)
class Opening:
    """What opening a backend needs beyond the cluster kind."""

    inventory: Inventory
    seed: int = 1  # sim: the run's seed, combined with the inventory's group name (`group_seed`)
    turns: Sequence[Turn] = ()  # pai: every turn of the run (their submitters' tokens are tried first)
    form: str = ""  # k8s: the manifests' form (kube-batch | volcano)
    run_tag: str = ""  # k8s: names each run's namespace
    kubeconfig: str | None = None
    context: str | None = None


def backend_factory(cluster: str, opening: Opening) -> BackendFactory:
    """The factory for `cluster` (sim | pai | k8s)."""
    if cluster == "sim":
        return _sim_factory(opening)
    if cluster == "pai":
        return _pai_factory(opening)
    return _k8s_factory(opening)


def _sim_factory(opening: Opening) -> BackendFactory:
    from hivedlab.backends.sim import SimCluster, settings_from_mapping
    from hivedlab.backends.sim.plain import PlainSimCluster, kubeflow_manifests

    inventory = opening.inventory
    ips = {m.hostname: m.ip for m in inventory.members if m.hostname}
    others = sum(1 for m in inventory.members if "master" in m.roles and "worker" not in m.roles)

    def make(plan: Plan, writer: EvidenceWriter) -> Backend:
        settings = settings_from_mapping(plan.sim)
        seed = experiment_seed(group_seed(opening.seed, inventory.group), plan.id)
        if plan.scheduler != "hived":
            manifests = kubeflow_manifests({key: job.file for key, job in plan.jobs.items()})
            return PlainSimCluster(writer, seed, scheduler=plan.scheduler, settings=settings, node_ips=ips,
                                   other_nodes=others, manifests=manifests)
        return SimCluster(writer, seed, settings=settings, node_ips=ips, other_nodes=others)

    return make


def _k8s_factory(opening: Opening) -> BackendFactory:
    """The plain-Kubernetes backend for each run, in a namespace of its own named after the run and its tag."""
    from hivedlab.backends.k8s import open_backend
    from hivedlab.models.kubeflow.manifests import FORMS, k8s_name

    def make(plan: Plan, writer: EvidenceWriter) -> Backend:
        namespace = k8s_name(f"hivedlab-{plan.run_id}-{opening.run_tag}")
        return open_backend(writer, FORMS[opening.form], namespace, gang=plan.scheduler != "default",
                            kubeconfig=opening.kubeconfig, context=opening.context)

    return make


def _pai_factory(opening: Opening) -> BackendFactory:
    """The real OpenPAI backend for each plan. Each one first tries the tokens of every member the whole run
    submits as, so a bad one stops it early."""
    from hivedlab.backends.pai import open_backend

    members = submitting_members(opening.turns, opening.inventory)

    def make(plan: Plan, writer: EvidenceWriter) -> Backend:
        backend = open_backend(writer, opening.inventory, members=members)
        if backend.run_info.rehearsal:
            from hivedlab.rehearsal.stack import switcher_for

            switcher = switcher_for(backend.hived_url)
            if switcher is not None:
                backend.use_config_switcher(switcher)
        return backend

    return make
