"""The lab's two HiveD configs, rendered for a group from its inventory.

The manual's hardware (two workers with one GPU each) gets the shipped Jinja2 templates. Other groups get
equivalent configs built from the inventory (`plan_layout`), so that every VC still holds the same number of GPUs
as in the manual:
- workers with several GPUs, or more than two workers (one-vc): each VC owns one GPU (two-vc) or two (one-vc) of
  its node(s), the rest is unassigned (a third worker's GPU too: the manual's quota of two stays two);
- a single worker (3-person group) with >= 2 GPUs: its GPUs are split between the VCs.
Each such config comes with a note on what changes in the experiments.

A group that cannot hold a config (a single worker with one GPU, `cannot_hold`) runs that experiment on the simulated
cluster on the manual's hardware (`manual_layout`): its own worker plus a simulated one that is nobody's machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jinja2
import yaml

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import parse_yaml
from hivedlab.basics.resources import HIVED_CONFIGS
from hivedlab.basics.text import Text
from hivedlab.lab_group.inventory import Inventory, Member
from hivedlab.lab_group.rules import LAB_CONFIG_GPUS, NO_WORKER
from hivedlab.models.hived import ConfigError, load_config

CONFIG_NAMES = ("two-vc", "one-vc")
FIXED_CONFIGS = {"four-gpu-nodes": {"default": 4}}  # configs/hived/contrast/<name>.yaml: VC -> GPUs
# The VCs of each config, the same on every layout: the names the plans' rules may use
CONFIG_VCS = {"two-vc": ("default", "vc1"), "one-vc": ("default",), **{k: tuple(v) for k, v in FIXED_CONFIGS.items()}}
TEMPLATES = HIVED_CONFIGS / "templates"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_hived_config(name: str, inventory: Inventory) -> str:
    """Render `two-vc` or `one-vc` with the inventory's workers' hostnames (config order = inventory order)."""
    if name not in CONFIG_NAMES:
        raise HivedlabError(f"unknown HiveD config '{name}' (choose one of: {', '.join(CONFIG_NAMES)})")
    workers = inventory.workers
    needed = 2 if name == "two-vc" else 1
    if len(workers) < needed:
        raise HivedlabError(f"the '{name}' config needs {needed} worker(s) in the group inventory, "
                            f"found {len(workers)}")
    missing = [w.name for w in workers if not w.hostname]
    if missing:
        raise HivedlabError(f"worker(s) without a hostname in the group inventory: {', '.join(missing)}")
    return _environment().get_template(f"{name}.yaml.j2").render(workers=workers)


SKU = {"gpu": 1, "cpu": 2, "memory": "4096Mi"}  # the manual's SKUs (step 4.1 / 4.5)

@dataclass(frozen=True)
class Layout:
    """A HiveD config for the group: its text, the VCs with their GPU counts, and what differs from the manual."""

    name: str
    text: str
    vcs: dict[str, int]
    case: str  # manual | multi-gpu | single-worker | fixed | manual-hardware (`manual_layout`)
    notes: tuple[tuple[str, str], ...] = ()  # (zh, en)


def _gpus(member: Member) -> int:
    return member.gpus if member.gpus > 0 else 1


def _dump(config: dict[str, Any], header: str) -> str:
    return header + yaml.safe_dump(config, sort_keys=False, default_flow_style=False)


def plan_layout(name: str, inventory: Inventory) -> Layout:
    """Choose and render the config for the group's workers (pure apart from reading the shipped templates).
    A contrast experiment's fixed cluster (`FIXED_CONFIGS`) is the same for every group."""
    if name in FIXED_CONFIGS:
        text = (HIVED_CONFIGS / "contrast" / f"{name}.yaml").read_text(encoding="utf-8")
        return Layout(name, text, dict(FIXED_CONFIGS[name]), "fixed")
    if name not in CONFIG_NAMES:
        raise HivedlabError(f"unknown HiveD config '{name}' (choose one of: {', '.join(CONFIG_NAMES)})")
    workers = inventory.workers
    missing = [w.name for w in workers if not w.hostname]
    if missing:
        raise HivedlabError(f"worker(s) without a hostname in the group inventory: {', '.join(missing)}")
    if not workers:
        raise HivedlabError(NO_WORKER.en)
    if len(workers) >= 2 and all(_gpus(w) == 1 for w in workers[:2]) and (name == "two-vc" or (
            len(workers) == 2)):
        vcs = {"default": 1, "vc1": 1} if name == "two-vc" else {"default": 2}
        return Layout(name, render_hived_config(name, inventory), vcs, "manual")
    if len(workers) >= 2:
        return _multi_gpu(name, workers)
    return _single_worker(name, workers[0])


def _multi_gpu(name: str, workers: tuple[Member, ...]) -> Layout:
    header = f"# {name} for the group's workers: each VC holds as many GPUs as in the manual\n"
    if name == "two-vc":
        c, d = workers[0], workers[1]
        config = {
            "physicalCluster": {
                "skuTypes": {"GPU-C": dict(SKU), "GPU-D": dict(SKU)},
                "cellTypes": {
                    "GPU-C-NODE": {"childCellType": "GPU-C", "childCellNumber": _gpus(c), "isNodeLevel": True},
                    "GPU-C-NODE-POOL": {"childCellType": "GPU-C-NODE", "childCellNumber": 1},
                    "GPU-D-NODE": {"childCellType": "GPU-D", "childCellNumber": _gpus(d), "isNodeLevel": True},
                    "GPU-D-NODE-POOL": {"childCellType": "GPU-D-NODE", "childCellNumber": 1},
                },
                "physicalCells": [
                    {"cellType": "GPU-C-NODE-POOL", "cellChildren": [{"cellAddress": c.hostname}]},
                    {"cellType": "GPU-D-NODE-POOL", "cellChildren": [{"cellAddress": d.hostname}]},
                ],
            },
            "virtualClusters": {
                "default": {"virtualCells": [{"cellType": "GPU-C-NODE-POOL.GPU-C-NODE.GPU-C", "cellNumber": 1}]},
                "vc1": {"virtualCells": [{"cellType": "GPU-D-NODE-POOL.GPU-D-NODE.GPU-D", "cellNumber": 1}]},
            },
        }
        notes = (
            ("每个 VC 只拥有其 worker 上的 1 块 GPU（与手册相同），"
             f"其余 {_gpus(c) + _gpus(d) - 2} 块 GPU 不属于任何 VC："
             "oppo 任务可能直接用这些空闲 GPU 运行，4.4 中 default VC 的 test 任务可能不需要抢占它。",
             f"each VC owns 1 GPU of its worker (as in the manual); the other {_gpus(c) + _gpus(d) - 2} GPUs belong to "
             "no VC: the oppo job may run on them, and the test job of step 4.4 may not need to preempt it."),
        )
        return Layout(name, _dump(config, header), {"default": 1, "vc1": 1}, "multi-gpu", notes)
    per_node = min(_gpus(w) for w in workers)
    config = {
        "physicalCluster": {
            "skuTypes": {"GPU": dict(SKU)},
            "cellTypes": {
                "GPU-NODE": {"childCellType": "GPU", "childCellNumber": per_node, "isNodeLevel": True},
                "GPU-NODE-POOL": {"childCellType": "GPU-NODE", "childCellNumber": len(workers)},
            },
            "physicalCells": [{"cellType": "GPU-NODE-POOL",
                               "cellChildren": [{"cellAddress": w.hostname} for w in workers]}],
        },
        "virtualClusters": {"default": {"virtualCells": [{"cellType": "GPU-NODE-POOL.GPU-NODE.GPU", "cellNumber": 2}]}},
    }
    spare = len(workers) * per_node - 2
    notes = (
        ("default VC 有 2 块 GPU（与手册相同），但它们可能在同一台机器上："
         "4.6/4.7 中 2 个子任务可能运行在同一台 worker 上。",
         "the default VC has 2 GPUs (as in the manual) but HiveD may pack them on one node: the 2 tasks of steps "
         "4.6/4.7 may run on the same worker.") if per_node > 1 else
        (f"default VC 有 2 块 GPU（与手册相同），其余 {spare} 块 GPU 不属于任何 VC："
         "4.6/4.7 中的任务仍按 2 块 GPU 的配额等待。",
         f"the default VC has 2 GPUs (as in the manual); the other {spare} GPU(s) belong to no VC: the jobs of steps "
         "4.6/4.7 still wait for a quota of 2 GPUs."),
    )
    return Layout(name, _dump(config, header), {"default": 2}, "multi-gpu", notes)


def _single_worker(name: str, worker: Member) -> Layout:
    gpus = _gpus(worker)
    wanted = 1 if name == "two-vc" else 2
    vc_names = ("default", "vc1") if name == "two-vc" else ("default",)
    if gpus < wanted * len(vc_names):
        raise HivedlabError(
            f"a single worker with {gpus} GPU cannot hold the '{name}' config ({wanted * len(vc_names)} GPUs needed): "
            "run these experiments on the simulator (`hivedlab run --cluster sim`) / "
            "单个 worker 的 GPU 不足以构成该配置，请在模拟集群上完成这些实验")
    header = f"# {name} for a single worker: its {gpus} GPUs are split between the VCs\n"
    config = {
        "physicalCluster": {
            "skuTypes": {"GPU": dict(SKU)},
            "cellTypes": {"GPU-NODE": {"childCellType": "GPU", "childCellNumber": gpus, "isNodeLevel": True}},
            "physicalCells": [{"cellType": "GPU-NODE", "cellAddress": worker.hostname}],
        },
        "virtualClusters": {vc: {"virtualCells": [{"cellType": "GPU-NODE.GPU", "cellNumber": wanted}]}
                            for vc in vc_names},
    }
    notes = [
        ("只有一台 worker：所有任务都运行在它上面，4.2 “任务在哪台机器上运行”的答案总是这台机器；"
         "VC 的隔离以 GPU 为单位。",
         "a single worker: every job runs on it, so step 4.2's 'which machine' is always this one; VCs are isolated "
         "per GPU instead of per machine."),
    ]
    if name == "one-vc":
        notes.append(("4.6/4.7 中 2 个子任务运行在同一台机器的 2 块 GPU 上，而不是两台机器上。",
                      "the 2 tasks of steps 4.6/4.7 run on 2 GPUs of the same machine, not on two machines."))
    return Layout(name, _dump(config, header), {vc: wanted for vc in vc_names}, "single-worker", tuple(notes))


MANUAL_GPUS = LAB_CONFIG_GPUS
SIM_WORKERS = ("sim-worker-1", "sim-worker-2")  # the manual's workers a group lacks: simulated nodes, nobody's machines
SIM_WORKER = SIM_WORKERS[1]


def cannot_hold(name: str, inventory: Inventory) -> Text | None:
    """Why the group's workers cannot hold config `name` (a single worker with fewer GPUs than the config needs),
    None when they can (or when `plan_layout` refuses for another reason, which it then says itself)."""
    workers = inventory.workers
    if name not in CONFIG_NAMES or len(workers) != 1 or _gpus(workers[0]) >= MANUAL_GPUS:
        return None
    gpus = _gpus(workers[0])
    return Text(f"本组只有一台 worker，{gpus} 块 GPU，不足以构成 {name} 配置（需要 {MANUAL_GPUS} 块）",
                f"the group's single worker has {gpus} GPU, too few for the '{name}' config ({MANUAL_GPUS} needed)")


def manual_layout(name: str, inventory: Inventory) -> Layout:
    """Config `name` on the manual's hardware, two workers with one GPU each, for the simulated cluster: the group's
    own worker first, then `SIM_WORKER`. The group's members stay who they are; only the machines are the manual's."""
    if name not in CONFIG_NAMES:
        raise HivedlabError(f"unknown HiveD config '{name}' (choose one of: {', '.join(CONFIG_NAMES)})")
    own = [Member(w.name, w.user, ("worker",), w.hostname, w.ip, 1) for w in inventory.workers[:1] if w.hostname]
    simulated = Member(SIM_WORKER, "", ("worker",), SIM_WORKER, "", 1)
    workers = (*own, simulated) if own else (Member(SIM_WORKERS[0], "", ("worker",), SIM_WORKERS[0], "", 1), simulated)
    text = _environment().get_template(f"{name}.yaml.j2").render(workers=workers)
    vcs = {"default": 1, "vc1": 1} if name == "two-vc" else {"default": 2}
    note = (f"在模拟集群上按手册的硬件（两台各有 1 块 GPU 的 worker）运行：第二台 worker {SIM_WORKER} 是模拟的。",
            f"run on the simulated cluster on the manual's hardware (two workers with one GPU each): the second "
            f"worker, {SIM_WORKER}, is simulated.")
    return Layout(name, text, vcs, "manual-hardware", (note,))


def validate_layout(layout: Layout) -> None:
    """HiveD's load-time rules, and OpenPAI's rule for VC names (each names a StatefulSet)."""
    data = parse_yaml(layout.text, f"the rendered '{layout.name}' config")
    for vc in (data.get("virtualClusters") or {}):
        if not str(vc).isalnum() or str(vc) != str(vc).lower():
            raise HivedlabError(f"VC name {vc!r} must be lower-case letters and digits (it names a StatefulSet)")
    try:
        load_config(data)
    except ConfigError as exc:
        where = f" at {exc.pointer}" if getattr(exc, "pointer", "") else ""
        raise HivedlabError(f"the rendered '{layout.name}' config would make HiveD panic{where}: {exc}") from None
