"""HiveD's load-time rules (docs/hived-config-and-cells.md#load-time-rules-and-errors) against the recorded
`configLoadCases`, plus address inference."""

from __future__ import annotations

from typing import Any

import pytest

from hivedlab.models.hived import ConfigError, load_config
from tests.support.fixture_yaml import fixture_yaml
from tests.support.paths import FIXTURES

CASES_FILE = FIXTURES / "spec" / "hived-cases.yaml"
_DATA = fixture_yaml(CASES_FILE)
LOAD_CASES = _DATA["configLoadCases"]


def _config_of(case: dict[str, Any]) -> dict[str, Any]:
    config = case["config"]
    return _DATA["configs"][config]["config"] if isinstance(config, str) else config


def _verdict(case: dict[str, Any]) -> dict[str, Any]:
    return case.get("load") or case["observed"]


def test_cases_present() -> None:
    assert LOAD_CASES


@pytest.mark.parametrize("case", LOAD_CASES, ids=[c["id"] for c in LOAD_CASES])
def test_config_load_case(case: dict[str, Any]) -> None:
    verdict = _verdict(case)
    if verdict["result"] == "ok":
        config = load_config(_config_of(case))
        assert config.chains
        return
    with pytest.raises(ConfigError) as info:
        load_config(_config_of(case))
    assert info.value.message == verdict["message"]


def _node_pool(children: Any = None, vc_cells: int = 1) -> dict[str, Any]:
    return {
        "physicalCluster": {
            "cellTypes": {
                "PCIE": {"childCellType": "GPU", "childCellNumber": 2},
                "SOCKET": {"childCellType": "PCIE", "childCellNumber": 2},
                "NODE": {"childCellType": "SOCKET", "childCellNumber": 2, "isNodeLevel": True},
                "RACK": {"childCellType": "NODE", "childCellNumber": 2},
            },
            "physicalCells": [{"cellType": "RACK", "cellChildren": children}],
        },
        "virtualClusters": {"a": {"virtualCells": [{"cellType": "RACK.NODE", "cellNumber": vc_cells}]}},
    }


def _addresses(cell: Any) -> list[str]:
    return [cell.address] + [a for child in cell.children for a in _addresses(child)]


def test_address_inference_restarts_below_node() -> None:
    config = load_config(_node_pool([{"cellAddress": "n1"}, {"cellAddress": "n2"}]))
    node = config.physical_cells[0].children[1]
    assert node.address == "0/n2"
    assert [s.address for s in node.children] == ["0/n2/0", "0/n2/1"]
    assert [p.address for p in node.children[1].children] == ["0/n2/1/2", "0/n2/1/3"]
    assert [g.address for g in node.children[1].children[1].children] == ["0/n2/1/3/6", "0/n2/1/3/7"]


def test_default_children_and_types() -> None:
    config = load_config(_node_pool(None))
    assert [c.address for c in config.physical_cells[0].children] == ["0/0", "0/1"]
    rack = config.cell_types["RACK"]
    assert (rack.level, rack.leaf_cell_number, rack.multi_node, rack.leaf_type) == (5, 16, True, "GPU")
    assert config.cell_types["NODE"].multi_node is False
    assert config.cell_types["GPU"].level == 1
    assert config.web_server_address == ":9096" and config.force_pod_bind_threshold == 3


def test_wrong_scalar_type_is_unmarshal_error() -> None:
    data = _node_pool()
    data["physicalCluster"]["cellTypes"]["PCIE"]["childCellNumber"] = "two"
    with pytest.raises(ConfigError) as info:
        load_config(data)
    assert info.value.message.startswith("Failed to unmarshal YAML")
    assert info.value.pointer == "/physicalCluster/cellTypes/PCIE/childCellNumber"


def test_leaf_address_out_of_int32_range() -> None:
    data = _node_pool([{"cellAddress": "n1", "cellChildren": [{"cellChildren": [{"cellChildren": [
        {"cellAddress": "99999999999"}]}]}]}])
    with pytest.raises(ConfigError) as info:
        load_config(data)
    assert "value out of range" in info.value.message
    assert info.value.pointer.endswith("/cellAddress")


def test_chain_without_vc_is_refused() -> None:
    data = _node_pool()
    data["physicalCluster"]["physicalCells"].append({"cellType": "NODE", "cellAddress": "x"})
    with pytest.raises(ConfigError) as info:
        load_config(data)
    assert info.value.pointer == "/physicalCluster/physicalCells/1"


def test_cycle_is_an_error_not_a_crash() -> None:
    data = _node_pool()
    data["physicalCluster"]["cellTypes"]["GPU"] = {"childCellType": "RACK", "childCellNumber": 1}
    with pytest.raises(ConfigError):
        load_config(data)
