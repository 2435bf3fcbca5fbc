"""A fake HiveD v0.3.4 web service over real HTTP: the inspect API's cluster status for a config, as HiveD builds it.

Each behaviour cites the HiveD v0.3.4 source it follows (microsoft/hivedscheduler, tag v0.3.4); the contract test
(tests/test_fake_contracts.py) replays the transcripts of tests/fixtures/transcripts/hived/ against it.

- Physical cell addresses: `pkg/api/config.go` `inferPhysicalCellSpec` — a cell's address is its parent's address,
  "/", then its own `cellAddress` or, without one, its default index; below a node-level cell the index restarts at 0.
  So a node cell `hostname-carol` under the first pool cell is `0/hostname-carol`, its GPU `0/hostname-carol/0`.
- Virtual cells: `pkg/algorithm/config.go` `virtualCellConstructor.build` numbers a VC's preassigned cells `vc/0`,
  `vc/1`, … in the order of `virtualCells`; `buildChildCell` gives children `vc/N/i` (offset 0 below a preassigned
  cell, index × childNumber deeper); the cell type shown is the last part of `CHAIN.TYPE`.
- Fields: `pkg/api/types.go` `CellStatus` (`isNodeLevel` and `leafCellType` are omitted when empty);
  `pkg/algorithm/config.go` `buildFullTree` sets `leafCellType` on top cells only; a free cell has state `Free` and
  priority -2 (`pkg/algorithm/constants.go` `freePriority` = opportunistic − 1); cells of informed healthy nodes are
  `Healthy`.
- Routes: `pkg/webserver/webserver.go` `NewWebServer` and `pkg/api/constants.go`: `GET
  /v1/inspect/clusterstatus/physicalcluster`, `GET /v1/inspect/clusterstatus/virtualclusters/` (all VCs) and
  `…/virtualclusters/<vc>`; an unknown VC is a panic turned into 400 by `HandleWebServerPanic`
  (`pkg/algorithm/hived_algorithm.go` `GetVirtualClusterStatus`: "VC <vc> not found"), an unknown path 404 "Path not
  found: <path>" (`serveRootPath`), another method 400 "NotImplemented: <method>: <path>". `WebServer.serve` writes an
  error's message alone as a JSON string, prefixed by `pkg/internal/utils.go` `HandleWebServerPanic` with
  "hivedscheduler: User Error: " (4xx). Go's ServeMux answers `…/virtualclusters` without the slash with a 301 to the
  slash form.
"""

from __future__ import annotations

from typing import Any

import yaml

from tests.support.local import LocalServer, json_reply

PHYSICAL = "/v1/inspect/clusterstatus/physicalcluster"
VIRTUAL = "/v1/inspect/clusterstatus/virtualclusters/"


def _status(cell_type: str, address: str, types: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = {"cellType": cell_type}
    if (types.get(cell_type) or {}).get("isNodeLevel"):
        status["isNodeLevel"] = True
    status.update(cellAddress=address, cellState="Free", cellHealthiness="Healthy", cellPriority=-2)
    return status


def _leaf_type(cell_type: str, types: dict[str, Any]) -> str:
    while cell_type in types:
        cell_type = types[cell_type]["childCellType"]
    return cell_type


def _physical(spec: dict[str, Any], cell_type: str, index: int, prefix: str, types: dict[str, Any]) -> dict[str, Any]:
    """`inferPhysicalCellSpec`: the address, then the children's (indices restart below a node-level cell)."""
    own = spec.get("cellAddress")
    address = prefix + (str(own) if own not in (None, "") else str(index))
    status = _status(cell_type, address, types)
    kind = types.get(cell_type)
    if kind is None:  # a leaf cell
        return status
    base = 0 if kind.get("isNodeLevel") else index
    children = spec.get("cellChildren") or [{} for _ in range(int(kind["childCellNumber"]))]
    status["cellChildren"] = [_physical(child, kind["childCellType"], base * int(kind["childCellNumber"]) + i,
                                        address + "/", types) for i, child in enumerate(children)]
    return status


def _virtual(cell_type: str, address: str, types: dict[str, Any]) -> dict[str, Any]:
    """`virtualCellConstructor.buildChildCell`: children at offset 0 below `vc/N`, index × childNumber deeper."""
    status = _status(cell_type, address, types)
    kind = types.get(cell_type)
    if kind is None:
        return status
    number = int(kind["childCellNumber"])
    parts = address.split("/")
    offset = 0 if len(parts) == 2 else int(parts[-1]) * number
    status["cellChildren"] = [_virtual(kind["childCellType"], f"{address}/{offset + i}", types) for i in range(number)]
    return status


def hived_status(config_text: str) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """(physicalcluster, virtualclusters) as HiveD's inspect API answers them for this config on a healthy cluster."""
    config = yaml.safe_load(config_text)
    types = config["physicalCluster"]["cellTypes"]
    physical = []
    for index, cell in enumerate(config["physicalCluster"]["physicalCells"]):
        top = _physical(cell, cell["cellType"], index, "", types)
        physical.append({"leafCellType": _leaf_type(cell["cellType"], types), **top})
    virtual: dict[str, list[dict[str, Any]]] = {}
    for vc, spec in config["virtualClusters"].items():
        cells: list[dict[str, Any]] = []
        for cell in spec.get("virtualCells") or []:
            cell_type = str(cell["cellType"]).split(".")[-1]
            for _ in range(int(cell["cellNumber"])):
                top = _virtual(cell_type, f"{vc}/{len(cells)}", types)
                cells.append({"leafCellType": _leaf_type(cell_type, types), **top})
        virtual[str(vc)] = cells
    return physical, virtual


def user_error(status: int, message: str) -> tuple[int, dict[str, str], bytes]:
    """`HandleWebServerPanic` + `WebServer.serve`: the status, and the prefixed message as a JSON string."""
    return json_reply(status, f"hivedscheduler: User Error: {message}")


class FakeHived:
    """Serves the inspect API for `config_text`; `switch(text)` changes the config (HiveD restarted)."""

    def __init__(self, serve, config_text: str) -> None:
        self.switch(config_text)
        self.server: LocalServer = serve(self.handle)
        self.url = self.server.url

    def switch(self, config_text: str) -> None:
        self.physical, self.virtual = hived_status(config_text)

    def handle(self, _handler, method: str, path: str, _body: bytes):
        if method != "GET":
            return user_error(400, f"NotImplemented: {method}: {path}")
        if path == PHYSICAL:
            return json_reply(200, self.physical)
        if path == VIRTUAL.rstrip("/"):  # Go's ServeMux: a subtree pattern redirects its bare path
            # net/http server.go `Redirect`: for a GET, a small HTML body, `fmt.Fprintln`'d (two newlines)
            body = f'<a href="{VIRTUAL}">Moved Permanently</a>.\n\n'.encode()
            return 301, {"Location": VIRTUAL, "Content-Type": "text/html; charset=utf-8"}, body
        if path == VIRTUAL:
            return json_reply(200, self.virtual)
        if path.startswith(VIRTUAL):
            vc = path[len(VIRTUAL):]
            if vc in self.virtual:
                return json_reply(200, self.virtual[vc])
            return user_error(400, f"VC {vc} not found")
        return user_error(404, f"Path not found: {path}")
