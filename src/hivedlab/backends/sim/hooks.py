"""The simulator's seams to the HiveD model (`hivedlab.models.hived`) and to OpenPAI's admission
(`hivedlab.models.openpai.admission`), adapted to what the loop needs."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from hivedlab.backends.protocol import Reply
from hivedlab.basics.errors import HivedlabError
from hivedlab.models import hived
from hivedlab.models.openpai import admission, naming


def new_scheduler(mapping: Any, name: str, clock: Callable[[], str]) -> hived.HivedScheduler:
    """A fresh `HivedScheduler` for a config mapping; a config HiveD would refuse is a one-line error."""
    if not isinstance(mapping, Mapping):
        raise HivedlabError(f"HiveD config '{name}' would not load: the top level is not a mapping")
    try:
        return hived.HivedScheduler(hived.load_config(mapping), clock=clock)
    except hived.ConfigError as exc:
        raise HivedlabError(f"HiveD config '{name}' would not load: {exc}") from None


def pod_ref(name: str, uid: str) -> hived.PodRef:
    return hived.PodRef(naming.NAMESPACE, name, uid)


def _leaves(cell: Mapping[str, Any]) -> int:
    children = cell.get("cellChildren") or []
    if not children:
        return 0 if cell.get("cellPriority") == -1 else 1
    return sum(_leaves(child) for child in children if isinstance(child, Mapping))


def vc_leaf_cells(scheduler: Any) -> dict[str, dict[str, int]]:
    """What rest-server reads from HiveD's VC status (docs/openpai-model.md#skus-and-the-vc-status): per VC HiveD
    lists, leaf cells per leaf type of its top cells, opportunistic (−1) entries skipped; a VC listed only for its
    opportunistic cells has none (and no cell type)."""
    out: dict[str, dict[str, int]] = {}
    for vc in scheduler.listed_vcs():
        counts: dict[str, int] = {}
        for cell in scheduler.vc_status(vc) or []:
            if isinstance(cell, Mapping) and cell.get("leafCellType"):
                leaf = str(cell["leafCellType"])
                counts[leaf] = counts.get(leaf, 0) + _leaves(cell)
        out[str(vc)] = counts
    return out


def admit(protocol: str, user: str, config: Mapping[str, Any], scheduler: Any,
          granted: Collection[str] | None = None) -> Any:
    """rest-server's admission: the `AdmittedJob`, or the error `Reply`. `granted`: the VCs the user may use (None:
    every VC of the config, as `hivedlab accounts` grants them)."""
    quota = vc_leaf_cells(scheduler)
    try:
        return admission.admit_job(protocol, user, config, quota, user_vcs=granted)
    except admission.Rejection as rejection:
        body: dict[str, Any] = {"message": rejection.message}
        if rejection.code:
            body = {"code": rejection.code, "message": rejection.message}
        return Reply(rejection.status, body)
