"""Layouts the lab's configs take on a group's hardware: the manual's quota where more workers than two have one GPU
each, and the manual's simulated hardware for a group that cannot hold a config."""

from __future__ import annotations

import pytest
import yaml

from hivedlab.checker.judging.pod_facts import LeafCell, vc_cells_from_config
from hivedlab.lab_group.inventory import Inventory, Member
from hivedlab.lab_group.layouts import CONFIG_VCS, SIM_WORKER, cannot_hold, manual_layout, plan_layout, validate_layout
from hivedlab.lab_group.rules import WARNING, inventory_problems


def group(*gpus: int) -> Inventory:
    workers = tuple(Member(f"W{i}", f"w{i}", ("worker",), f"node-{i}", f"192.0.2.{i + 1}", g)
                    for i, g in enumerate(gpus))
    return Inventory("g", (Member("Bob", "bob", ("master",), "master", "192.0.2.100"), *workers))


def test_three_one_gpu_workers_keep_the_manuals_two_gpu_quota() -> None:
    layout = plan_layout("one-vc", group(1, 1, 1))
    validate_layout(layout)
    assert layout.vcs == {"default": 2}
    (share,) = vc_cells_from_config(layout.text)["default"]
    assert share.count == 2 and share.cells == (LeafCell("node-0", 0), LeafCell("node-1", 0), LeafCell("node-2", 0))
    assert any("belong to no VC" in en for _, en in layout.notes)


def test_two_one_gpu_workers_keep_the_manuals_templates() -> None:
    for name in ("two-vc", "one-vc"):
        assert plan_layout(name, group(1, 1)).case == "manual"


@pytest.mark.parametrize("gpus", [(1,), (0,)])
def test_a_single_one_gpu_worker_cannot_hold_either_config(gpus: tuple[int, ...]) -> None:
    for name in ("two-vc", "one-vc"):
        why = cannot_hold(name, group(*gpus))
        assert why is not None and f"'{name}'" in why.en and name in why.zh


@pytest.mark.parametrize("gpus", [(2,), (1, 1), (1, 2), (1, 1, 1)])
def test_groups_that_hold_the_configs(gpus: tuple[int, ...]) -> None:
    assert cannot_hold("two-vc", group(*gpus)) is None and cannot_hold("one-vc", group(*gpus)) is None


@pytest.mark.parametrize("name", ["two-vc", "one-vc"])
def test_the_manuals_hardware_keeps_the_groups_worker(name: str) -> None:
    layout = manual_layout(name, group(1))
    validate_layout(layout)
    data = yaml.safe_load(layout.text)
    nodes = [child["cellAddress"] for cell in data["physicalCluster"]["physicalCells"]
             for child in cell["cellChildren"]]
    assert nodes == ["node-0", SIM_WORKER]
    assert layout.case == "manual-hardware" and layout.vcs == plan_layout(name, group(1, 1)).vcs


@pytest.mark.parametrize("gpus", [(1, 1), (2,), (8,), (2, 2), (4, 4), (1, 1, 1), (1, 2)])
def test_every_layout_has_the_vcs_the_plans_name(gpus: tuple[int, ...]) -> None:
    for name in ("two-vc", "one-vc"):
        layout = plan_layout(name, group(*gpus))
        assert tuple(layout.vcs) == CONFIG_VCS[name] == tuple(vc_cells_from_config(layout.text))
    for name in ("two-vc", "one-vc"):
        assert tuple(manual_layout(name, group(1)).vcs) == CONFIG_VCS[name]


def _inventory_data(*gpus: int) -> dict[str, object]:
    members: list[dict[str, object]] = [
        {"name": "Bob", "user": "bob", "roles": ["master"], "hostname": "master", "ip": "192.0.2.100"}]
    members += [{"name": f"W{i}", "user": f"w{i}", "roles": ["worker"], "hostname": f"node-{i}",
                 "ip": f"192.0.2.{i + 1}", "gpus": g} for i, g in enumerate(gpus)]
    return {"group": "g", "members": members}


@pytest.mark.parametrize("gpus", [(2,), (4,), (1, 1)])
def test_validate_does_not_warn_where_scheduler_config_renders(gpus: tuple[int, ...]) -> None:
    """One worker with 2 GPUs holds both configs (two-vc splits its GPUs): no warning that says it cannot."""
    assert [p for p in inventory_problems(_inventory_data(*gpus)) if p.severity == WARNING] == []
    assert all(cannot_hold(name, group(*gpus)) is None for name in ("two-vc", "one-vc"))
    for name in ("two-vc", "one-vc"):
        validate_layout(plan_layout(name, group(*gpus)))


def test_validate_warns_a_single_one_gpu_worker_what_will_happen() -> None:
    (warning,) = [p for p in inventory_problems(_inventory_data(1)) if p.severity == WARNING]
    assert warning.text.en == (
        "the group's single worker has 1 GPU, too few for the lab's HiveD configs (2 needed): hivedlab run runs the "
        "experiments on the simulated cluster on the manual's hardware and says so in the report")
    assert all(cannot_hold(name, group(1)) is not None for name in ("two-vc", "one-vc"))
