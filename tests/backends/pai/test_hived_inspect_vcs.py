"""Which VCs the running HiveD has, after a config switch with a job of a dropped VC still running (seen on the
rehearsal cluster: HiveD v0.3.4 showed `vc1` after switching to one-vc, first with the job's stand-in cell, then empty,
and the reconfig run waited for ['default'] until it timed out)."""

from __future__ import annotations

from typing import Any

from hivedlab.backends.pai import hived_inspect
from tests.support.local import json_reply


def _node(address: str, priority: int = 0) -> dict[str, Any]:
    return {"cellType": "GPU-NODE", "cellAddress": address, "cellState": "Used", "cellPriority": priority,
            "cellChildren": [{"cellType": "GPU", "cellAddress": f"{address}/0"}]}


def _stand_in(physical: str) -> dict[str, Any]:
    """utils.go generateOTVirtualCell: the physical leaf's status under the address `<physical>-opp`, priority -1."""
    return {"cellType": "GPU", "cellAddress": f"{physical}-opp", "cellState": "Used", "cellPriority": -1}


def test_a_dropped_vc_shown_only_through_stand_ins_or_empty_is_not_the_configs(serve) -> None:
    running = {"default": [_node("default/0"), _node("default/1")], "vc1": [_stand_in("0/hostname-dan/0")]}
    ended = {"default": [_node("default/0"), _node("default/1")], "vc1": []}
    replies = iter([json_reply(200, running), json_reply(200, ended)])
    server = serve(lambda *_: next(replies))
    assert hived_inspect.fetch_vcs(server.url) == {"default": 2}
    assert hived_inspect.wait_for_vcs(server.url, {"default"}, 5, poll_s=1, sleep=lambda s: None, clock=lambda: 0.0)


def test_an_opportunistic_job_does_not_count_as_its_vcs_cell(serve) -> None:
    status = {"default": [_node("default/0"), _stand_in("0/hostname-carol/0")], "vc1": [_node("vc1/0")]}
    server = serve(lambda *_: json_reply(200, status))
    assert hived_inspect.fetch_vcs(server.url) == {"default": 1, "vc1": 1}
