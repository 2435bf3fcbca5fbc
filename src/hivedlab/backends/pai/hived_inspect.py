"""HiveD's inspect API (docs/openpai-model.md#hiveds-inspect-api): which VCs the running scheduler has, and waiting
for a new config."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import requests

HIVED_PORT = 30096  # NodePort of hivedscheduler-service on the PAI master
VCS_PATH = "/v1/inspect/clusterstatus/virtualclusters"
PHYSICAL_PATH = "/v1/inspect/clusterstatus/physicalcluster"
OPPORTUNISTIC_SUFFIX = "-opp"


def hived_url(master_ip: str) -> str:
    return f"http://{master_ip}:{HIVED_PORT}"


def leaf_count(cells: Any) -> int:
    """Leaf cells in a VC's cell tree (cells without children)."""
    if isinstance(cells, list):
        return sum(leaf_count(c) for c in cells)
    if isinstance(cells, dict):
        children = cells.get("cellChildren")
        return leaf_count(children) if children else 1
    return 0


def configured_vcs(status: Any) -> dict[str, list[Any]]:
    """HiveD's VirtualClusters status without what is not the config's: HiveD v0.3.4 lists each leaf cell an
    opportunistic pod uses under the pod's VC as a made-up virtual cell `<physical address>-opp`
    (pkg/algorithm/utils.go generateOTVirtualCell, hived_algorithm.go allocateLeafCell), even for a VC the config no
    longer has (a job left running across a config switch), and keeps that VC's key with an empty list once the pod
    is gone (deleteOTVirtualCell). Seen on the rehearsal cluster: `{"default": [...], "vc1": []}` after the switch to
    one-vc while a vc1 job ran."""
    if not isinstance(status, dict):
        raise ValueError("HiveD's inspect API did not answer with a mapping of VCs")
    vcs = {}
    for name, cells in status.items():
        kept = [c for c in cells or [] if not (isinstance(c, dict)
                                              and str(c.get("cellAddress", "")).endswith(OPPORTUNISTIC_SUFFIX))]
        if kept:
            vcs[str(name)] = kept
    return vcs


def fetch_vcs(base_url: str, *, timeout_s: float = 10.0, session: requests.Session | None = None) -> dict[str, int]:
    """{VC name: leaf cells} as the running HiveD reports them. Raises requests' errors when it is not reachable."""
    getter = session or requests
    response = getter.get(base_url.rstrip("/") + VCS_PATH, timeout=timeout_s)
    response.raise_for_status()
    return {name: leaf_count(cells) for name, cells in configured_vcs(response.json()).items()}


def fetch_cluster_status(base_url: str, *, timeout_s: float = 10.0) -> tuple[Any, Any]:
    """The physical cluster's and the virtual clusters' status trees (the config's cells only). Raises requests'
    errors (and ValueError for an answer that is not JSON) when HiveD does not answer them."""
    answers = []
    for path in (PHYSICAL_PATH, VCS_PATH):
        response = requests.get(base_url.rstrip("/") + path, timeout=timeout_s)
        response.raise_for_status()
        answers.append(response.json())
    return answers[0], configured_vcs(answers[1])


def wait_for_vcs(
    base_url: str,
    expected: dict[str, int] | set[str],
    timeout_s: float,
    *,
    poll_s: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    on_poll: Callable[[dict[str, int] | None, str | None], None] | None = None,
) -> bool:
    """Poll until HiveD shows exactly the `expected` VCs (and, for a mapping, their leaf-cell counts).

    HiveD restarts when its config changes (docs/openpai-model.md#services-configuration), so refused connections and
    5xx while it restarts are expected: they are reported to `on_poll` and polled again. Returns False when
    `timeout_s` passes first.
    """
    deadline = clock() + timeout_s
    while True:
        seen: dict[str, int] | None = None
        error: str | None = None
        try:
            seen = fetch_vcs(base_url, timeout_s=min(10.0, max(timeout_s, 0.1)))
        except (requests.RequestException, ValueError) as exc:
            error = type(exc).__name__
        if on_poll:
            on_poll(seen, error)
        if seen is not None and _matches(seen, expected):
            return True
        if clock() + poll_s > deadline:
            return False
        sleep(poll_s)


def _matches(seen: dict[str, int], expected: dict[str, int] | set[str]) -> bool:
    if isinstance(expected, dict):
        return seen == expected
    return set(seen) == set(expected)
