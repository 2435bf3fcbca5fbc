"""The five policies by name, built for one workload."""

from __future__ import annotations

from collections.abc import Callable

from hivedlab.trace.cells import VcCells
from hivedlab.trace.cluster import Cluster
from hivedlab.trace.policies.base import Policy
from hivedlab.trace.policies.drf import DrfPolicy
from hivedlab.trace.policies.fifo import FifoPolicy
from hivedlab.trace.policies.hived import HivedPolicy
from hivedlab.trace.policies.private import PrivatePolicy
from hivedlab.trace.policies.quota import QuotaPolicy
from hivedlab.trace.workload import Workload

POLICIES = ("fifo", "quota", "hived", "drf", "private")


def build(name: str, workload: Workload, cells: VcCells) -> Policy:
    builders: dict[str, Callable[[], Policy]] = {
        "fifo": lambda: FifoPolicy(Cluster(workload.server_types), sorted(workload.shares)),
        "quota": lambda: QuotaPolicy(Cluster(workload.server_types),
                                     {vc: cells.gpus(vc) for vc in workload.shares}),
        "hived": lambda: HivedPolicy(Cluster(workload.server_types), cells),
        "drf": lambda: DrfPolicy(Cluster(workload.server_types), workload.shares),
        "private": lambda: PrivatePolicy(workload.server_types, cells),
    }
    return builders[name]()
