"""A fake HiveD v0.3.4 inspect API: the physical and virtual cell trees HiveD shows for a config, over real HTTP."""

from __future__ import annotations

from typing import Any

import yaml

from tests.support.local import LocalServer, json_reply


def _cell(cell_type: str, address: str, types: dict[str, Any], listed: list[dict[str, Any]] | None = None):
    spec = types.get(cell_type)
    status = {"cellType": cell_type, "isNodeLevel": bool(spec and spec.get("isNodeLevel")), "cellAddress": address,
              "cellState": "Free", "cellHealthiness": "Healthy", "cellPriority": -2}
    if spec is None:  # a leaf cell (a GPU)
        return status
    child_type = spec["childCellType"]
    if listed is not None and not status["isNodeLevel"]:
        children = [_cell(child_type, str(c.get("cellAddress", f"{address}/{i}")), types, c.get("cellChildren"))
                    for i, c in enumerate(listed)]
    else:
        children = [_cell(child_type, f"{address}/{i}", types) for i in range(int(spec["childCellNumber"]))]
    status["leafCellType"] = child_type if child_type not in types else None
    status["cellChildren"] = children
    return status


def hived_status(config_text: str) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """(physicalcluster, virtualclusters) as HiveD's inspect API answers them for this config."""
    config = yaml.safe_load(config_text)
    types = config["physicalCluster"]["cellTypes"]
    physical = [_cell(c["cellType"], str(c.get("cellAddress", i)), types, c.get("cellChildren"))
                for i, c in enumerate(config["physicalCluster"]["physicalCells"])]
    virtual = {}
    for vc, spec in config["virtualClusters"].items():
        cells: list[dict[str, Any]] = []
        for cell in spec["virtualCells"]:
            cell_type = cell["cellType"].split(".")[-1]
            cells += [_cell(cell_type, f"{vc}/{len(cells) + i}", types) for i in range(int(cell["cellNumber"]))]
        virtual[vc] = cells
    return physical, virtual


class FakeHived:
    """Serves the inspect API for `config_text`; `serve(text)` switches the config (HiveD restarted)."""

    def __init__(self, serve, config_text: str) -> None:
        self.switch(config_text)
        self.server: LocalServer = serve(self.handle)
        self.url = self.server.url

    def switch(self, config_text: str) -> None:
        self.physical, self.virtual = hived_status(config_text)

    def handle(self, _handler, method: str, path: str, _body: bytes):
        if path.rstrip("/") == "/v1/inspect/clusterstatus/physicalcluster":
            return json_reply(200, self.physical)
        if path.rstrip("/") == "/v1/inspect/clusterstatus/virtualclusters":
            return json_reply(200, self.virtual)
        return json_reply(404, {"code": "NotFound", "message": f"{method} {path}"})
