"""Which VCs HiveD runs, read from its inspect API as the real v0.3.4 answers it (hivedlab.backends.pai.hived_inspect):
opportunistic pods' made-up cells and the empty key of a VC the config no longer has are not the config's VCs."""

from __future__ import annotations

import json

from hivedlab.backends.pai import hived_inspect
from tests.support.local import json_reply
from tests.support.paths import FIXTURES

AFTER_SWITCH = json.loads((FIXTURES / "pai" / "hived-vcs-after-switch-to-one-vc.json").read_text())


def opportunistic_cell(physical_address: str) -> dict[str, object]:
    """A cell as pkg/algorithm/utils.go generateOTVirtualCell makes it for an opportunistic pod's leaf cell."""
    return {"leafCellType": "GPU", "cellType": "GPU", "cellAddress": physical_address + "-opp", "cellState": "Used",
            "cellHealthiness": "Healthy", "cellPriority": -1,
            "physicalCell": {"cellType": "GPU", "cellAddress": physical_address, "cellState": "Used"}}


def test_the_real_answer_after_a_switch_to_one_vc_shows_one_vc(serve):
    assert AFTER_SWITCH["vc1"] == [] and "default" in AFTER_SWITCH
    server = serve(lambda *_: json_reply(200, AFTER_SWITCH))
    assert hived_inspect.fetch_vcs(server.url) == {"default": 2}
    assert hived_inspect.wait_for_vcs(server.url, {"default"}, 0, sleep=lambda s: None)


def test_opportunistic_cells_count_in_no_vc(serve):
    status = {"default": [*AFTER_SWITCH["default"], opportunistic_cell("hostname-dan/0")],
              "vc1": [opportunistic_cell("hostname-carol/0")]}
    server = serve(lambda *_: json_reply(200, status))
    assert hived_inspect.fetch_vcs(server.url) == {"default": 2}
    _, virtual = hived_inspect.fetch_cluster_status(server.url)
    assert list(virtual) == ["default"] and len(virtual["default"]) == 2


def test_a_vc_of_the_config_with_its_cells_is_kept_whatever_runs_in_it():
    assert hived_inspect.configured_vcs({"vc1": [{"cellAddress": "vc1/0", "cellChildren": []}]}) == {
        "vc1": [{"cellAddress": "vc1/0", "cellChildren": []}]}
