"""The simulator's seams to the HiveD model (`cluster.hived`, `cluster.hived_codec`) and to OpenPAI's admission
(`cluster.openpai.admission`): imported when first used, adapted to what the loop needs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import yaml

from cluster.backend import Reply
from cluster.openpai import naming
from hivedlab.errors import HivedlabError


def hived_api() -> Any:
    """The HiveD model's module: HivedScheduler, load_config, PodRef, Bind, Preempt, Wait, UserError, ConfigError."""
    from cluster import hived

    return hived


def _dump_bind_info_yaml(bind_info: Any) -> str:
    data = bind_info.to_dict() if hasattr(bind_info, "to_dict") else bind_info
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def bind_info_dumper() -> Callable[[Any], str]:
    """`cluster.hived_codec.dump_bind_info`: the pod-bind-info annotation text; while the codec is not installed,
    the bind info's own mapping (HiveD's field order, spec/hived.md §4.1) as YAML."""
    try:
        from cluster import hived_codec
    except ImportError:
        return _dump_bind_info_yaml
    return getattr(hived_codec, "dump_bind_info", _dump_bind_info_yaml)


def new_scheduler(api: Any, mapping: Any, name: str, clock: Callable[[], str]) -> Any:
    """A fresh `HivedScheduler` for a config mapping; a config HiveD would refuse is a one-line error."""
    try:
        return api.HivedScheduler(api.load_config(mapping), clock=clock)
    except api.ConfigError as exc:
        raise HivedlabError(f"HiveD config '{name}' would not load: {exc}") from None


def pod_ref(api: Any, name: str, uid: str) -> Any:
    return api.PodRef(naming.NAMESPACE, name, uid)


def result_kind(api: Any, result: Any) -> str:
    if isinstance(result, api.Bind):
        return "bind"
    if isinstance(result, api.Preempt):
        return "preempt"
    if isinstance(result, api.Wait):
        return "wait"
    raise HivedlabError(f"the HiveD model returned {type(result).__name__}, not Bind/Preempt/Wait")


def _leaves(cell: Mapping[str, Any]) -> int:
    children = cell.get("cellChildren") or []
    if not children:
        return 0 if cell.get("cellPriority") == -1 else 1
    return sum(_leaves(child) for child in children if isinstance(child, Mapping))


def vc_leaf_cells(scheduler: Any, config: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """What rest-server reads from HiveD's VC status (spec/openpai.md §2.1): per VC, leaf cells per leaf type of
    its top cells, opportunistic (−1) entries skipped."""
    out: dict[str, dict[str, int]] = {}
    for vc in (config.get("virtualClusters") or {}) if isinstance(config, Mapping) else {}:
        counts: dict[str, int] = {}
        for cell in scheduler.vc_status(vc) or []:
            if isinstance(cell, Mapping) and cell.get("leafCellType"):
                leaf = str(cell["leafCellType"])
                counts[leaf] = counts.get(leaf, 0) + _leaves(cell)
        out[str(vc)] = counts
    return out


def admit(protocol: str, user: str, config: Mapping[str, Any], scheduler: Any) -> Any:
    """rest-server's admission: the `AdmittedJob`, or the error `Reply`."""
    from cluster.openpai import admission

    try:
        quota = vc_leaf_cells(scheduler, config)
    except (AttributeError, TypeError, KeyError):
        quota = None  # no usable VC status: the config's own cell counts
    try:
        return admission.admit_job(protocol, user, config, quota)
    except admission.Rejection as rejection:
        body: dict[str, Any] = {"message": rejection.message}
        if rejection.code:
            body = {"code": rejection.code, "message": rejection.message}
        return Reply(rejection.status, body)
