"""Each VC's cells in a HiveD config (src/hivedlab/checker/judging/pod_facts.py `vc_cells_from_config`)
and a pod's priority."""

from __future__ import annotations

import yaml

from hivedlab.checker.judging.pod_facts import LeafCell, pod_priority, vc_cells_from_config
from hivedlab.checker.judging.timeline import build_timeline
from hivedlab.evidence import Record
from hivedlab.lab_group.inventory import Inventory, Member
from hivedlab.lab_group.layouts import plan_layout
from hivedlab.models.hived.annotations import SCHEDULING_SPEC

SKU = {"gpu": 1, "cpu": 2, "memory": "4096Mi"}


def group(*gpus: int) -> Inventory:
    return Inventory("g", tuple(Member(f"W{i}", f"w{i}", ("worker",), f"node-{i}", "", g) for i, g in enumerate(gpus)))


def test_the_manuals_two_vcs_own_one_gpu_each_outright() -> None:
    cells = vc_cells_from_config(plan_layout("two-vc", group(1, 1)).text)
    assert {vc: [(s.count, s.cells, s.exact) for s in shares] for vc, shares in cells.items()} == {
        "default": [(1, (LeafCell("node-0", 0),), True)], "vc1": [(1, (LeafCell("node-1", 0),), True)]}


def test_vcs_sharing_a_worker_own_a_count_of_its_gpus() -> None:
    cells = vc_cells_from_config(plan_layout("two-vc", group(4)).text)
    for vc in ("default", "vc1"):
        (share,) = cells[vc]
        assert share.count == 1 and not share.exact
        assert share.cells == tuple(LeafCell("node-0", i) for i in range(4))


def test_a_pinned_cell_is_its_vcs_outright() -> None:
    config = {
        "physicalCluster": {
            "skuTypes": {"GPU": SKU},
            "cellTypes": {"NODE": {"childCellType": "GPU", "childCellNumber": 2, "isNodeLevel": True},
                          "POOL": {"childCellType": "NODE", "childCellNumber": 2}},
            "physicalCells": [{"cellType": "POOL", "cellChildren": [
                {"cellAddress": "a", "pinnedCellId": "mine"}, {"cellAddress": "b"}]}],
        },
        "virtualClusters": {"pinned": {"pinnedCells": [{"pinnedCellId": "mine"}]},
                            "rest": {"virtualCells": [{"cellType": "POOL.NODE", "cellNumber": 1}]}},
    }
    cells = vc_cells_from_config(yaml.safe_dump(config))
    (pinned,) = cells["pinned"]
    assert pinned.exact and pinned.cells == (LeafCell("a", 0), LeafCell("a", 1))
    (rest,) = cells["rest"]
    assert rest.count == 2 and set(rest.cells) == {LeafCell(n, i) for n in "ab" for i in (0, 1)}


def test_a_config_hived_would_not_load_has_no_cells() -> None:
    assert vc_cells_from_config("virtualClusters: [") == {}
    assert vc_cells_from_config("physicalCluster: {}") == {}


def test_priority_from_the_scheduling_spec() -> None:
    assert pod_priority({SCHEDULING_SPEC: "virtualCluster: vc1\npriority: -1\n"}) == -1
    assert pod_priority({SCHEDULING_SPEC: "priority: 100"}) == 100
    assert pod_priority({SCHEDULING_SPEC: "priority: [1"}) is None
    assert pod_priority({}) is None


def test_the_config_in_force_is_the_last_switch_before_a_record() -> None:
    def switch(seq: int, text: str) -> Record:
        return Record(seq, f"2026-01-01T00:00:0{seq}.000000Z", "sim", "action", "", "", seq + 1,
                      action={"type": "config-switch", "name": "x", "text": text})

    two, one = plan_layout("two-vc", group(1, 1)).text, plan_layout("one-vc", group(1, 1)).text
    timeline = build_timeline([switch(0, two), switch(5, one)])
    assert set(timeline.vc_cells_at(0)) == set(timeline.vc_cells_at(4)) == {"default", "vc1"}
    assert set(timeline.vc_cells_at(5)) == set(timeline.vc_cells) == {"default"}
