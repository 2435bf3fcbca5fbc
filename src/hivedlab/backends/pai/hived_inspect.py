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


def fetch_vcs(base_url: str, *, timeout_s: float = 10.0, session: requests.Session | None = None) -> dict[str, int]:
    """{VC name: leaf cells of its own} as the running HiveD reports them (`own_cells`); a VC with none is left out.
    Raises requests' errors when it is not reachable."""
    getter = session or requests
    response = getter.get(base_url.rstrip("/") + VCS_PATH, timeout=timeout_s)
    response.raise_for_status()
    data = response.json()
    if not isinstance(data, dict):
        raise ValueError("HiveD's inspect API did not answer with a mapping of VCs")
    own = {str(name): own_cells(cells) for name, cells in data.items()}
    return {name: leaf_count(cells) for name, cells in own.items() if cells}


OPPORTUNISTIC_SUFFIX = "-opp"  # utils.go generateOTVirtualCell: an opportunistic pod's cell shown in its VC


def own_cells(cells: Any) -> list[Any]:
    """A VC's cells without the stand-ins HiveD v0.3.4 shows for opportunistic pods (`<physical address>-opp`,
    hived_algorithm.go addLeafCell). A pod bound in a VC that the config no longer has (one running across a config
    switch) is kept as such a stand-in, and its VC stays in the view with no cell once it ends (releaseLeafCell leaves
    the empty entry), so a VC with no cell of its own is not one of the config's."""
    if not isinstance(cells, list):
        return []
    return [c for c in cells if not (isinstance(c, dict)
                                     and str(c.get("cellAddress", "")).endswith(OPPORTUNISTIC_SUFFIX))]


def fetch_cluster_status(base_url: str, *, timeout_s: float = 10.0) -> tuple[Any, Any]:
    """The physical cluster's and the virtual clusters' status trees. Raises requests' errors (and ValueError for an
    answer that is not JSON) when HiveD does not answer them."""
    answers = []
    for path in (PHYSICAL_PATH, VCS_PATH):
        response = requests.get(base_url.rstrip("/") + path, timeout=timeout_s)
        response.raise_for_status()
        answers.append(response.json())
    return answers[0], answers[1]


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
