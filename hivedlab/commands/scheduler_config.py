"""`hivedlab scheduler-config two-vc|one-vc`: the HiveD config for the group, spliced into services-configuration.yaml.

The manual's hardware (two workers with one GPU each) gets the shipped templates. Other groups get equivalent configs
built from the inventory, so that every VC still holds the same number of GPUs as in the manual:
- workers with several GPUs: each VC owns one GPU (two-vc) or two (one-vc) of its node(s), the rest is unassigned;
- a single worker (3-person group) with >= 2 GPUs: its GPUs are split between the VCs.
Each such config comes with a note on what changes in the experiments.
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from cluster.pai.hived_inspect import hived_url, wait_for_vcs
from cluster.pai.services_config import (
    FILE_NAMES,
    current_hived_config,
    find_services_file,
    splice_hived_config,
    verify_splice,
)
from hivedlab.cliutil import add_lang, new_parser, write_atomic
from hivedlab.errors import HivedlabError
from hivedlab.hived_configs import CONFIG_NAMES, render_hived_config
from hivedlab.inventory import Inventory, Member, load_inventory

CONTAINER_CONFIG_DIR = "/cluster-configuration"  # where the manual's dev-box container mounts the config (step 2.3)
SKU = {"gpu": 1, "cpu": 2, "memory": "4096Mi"}  # the manual's SKUs (step 4.1 / 4.5)

EXAMPLES = """\
  hivedlab scheduler-config two-vc --inventory group.yaml                  # print the HiveD config and the notes
  hivedlab scheduler-config two-vc --inventory group.yaml \\
      --services-config ~/pai-deploy/cluster-cfg --out out/cluster-cfg      # a copy with the config spliced in + diff
  hivedlab scheduler-config one-vc --inventory group.yaml \\
      --services-config /cluster-configuration --in-place                  # as the manual's step 4.5 (keeps a .orig)
  hivedlab scheduler-config one-vc --inventory group.yaml --wait 600        # then wait until HiveD shows the new VCs
"""


@dataclass(frozen=True)
class Layout:
    """A HiveD config for the group: its text, the VCs with their GPU counts, and what differs from the manual."""

    name: str
    text: str
    vcs: dict[str, int]
    case: str  # manual | multi-gpu | single-worker
    notes: tuple[tuple[str, str], ...] = ()  # (zh, en)


def _gpus(member: Member) -> int:
    return member.gpus if member.gpus > 0 else 1


def _dump(config: dict, header: str) -> str:
    return header + yaml.safe_dump(config, sort_keys=False, default_flow_style=False)


def plan_layout(name: str, inventory: Inventory) -> Layout:
    """Choose and render the config for the group's workers (pure apart from reading the shipped templates)."""
    if name not in CONFIG_NAMES:
        raise HivedlabError(f"unknown HiveD config '{name}' (choose one of: {', '.join(CONFIG_NAMES)})")
    workers = inventory.workers
    missing = [w.name for w in workers if not w.hostname]
    if missing:
        raise HivedlabError(f"worker(s) without a hostname in the group inventory: {', '.join(missing)}")
    if not workers:
        raise HivedlabError("the group inventory has no worker")
    if len(workers) >= 2 and all(_gpus(w) == 1 for w in workers[:2]) and (name == "two-vc" or all(
            _gpus(w) == 1 for w in workers)):
        vcs = {"default": 1, "vc1": 1} if name == "two-vc" else {"default": len(workers)}
        return Layout(name, render_hived_config(name, inventory), vcs, "manual")
    if len(workers) >= 2:
        return _multi_gpu(name, workers)
    return _single_worker(name, workers[0])


def _multi_gpu(name: str, workers: tuple[Member, ...]) -> Layout:
    header = f"# {name} for workers with several GPUs: each VC holds as many GPUs as in the manual\n"
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
            (f"每个 VC 只拥有其 worker 上的 1 块 GPU（与手册相同），其余 {_gpus(c) + _gpus(d) - 2} 块 GPU 不属于任何 VC："
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
    notes = (
        ("default VC 有 2 块 GPU（与手册相同），但它们可能在同一台机器上：4.6/4.7 中 2 个子任务可能运行在同一台 worker 上。",
         "the default VC has 2 GPUs (as in the manual) but HiveD may pack them on one node: the 2 tasks of steps "
         "4.6/4.7 may run on the same worker."),
    )
    return Layout(name, _dump(config, header), {"default": 2}, "multi-gpu", notes)


def _single_worker(name: str, worker: Member) -> Layout:
    gpus = _gpus(worker)
    wanted = 1 if name == "two-vc" else 2
    vc_names = ("default", "vc1") if name == "two-vc" else ("default",)
    if gpus < wanted * len(vc_names):
        raise HivedlabError(
            f"a single worker with {gpus} GPU cannot hold the '{name}' config ({wanted * len(vc_names)} GPUs needed): "
            "run these experiments on the simulator (`hivedlab run --cluster sim`) / 单个 worker 的 GPU 不足以构成该配置，"
            "请在模拟集群上完成这些实验")
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
        ("只有一台 worker：所有任务都运行在它上面，4.2 “任务在哪台机器上运行”的答案总是这台机器；VC 的隔离以 GPU 为单位。",
         "a single worker: every job runs on it, so step 4.2's 'which machine' is always this one; VCs are isolated "
         "per GPU instead of per machine."),
    ]
    if name == "one-vc":
        notes.append(("4.6/4.7 中 2 个子任务运行在同一台机器的 2 块 GPU 上，而不是两台机器上。",
                      "the 2 tasks of steps 4.6/4.7 run on 2 GPUs of the same machine, not on two machines."))
    return Layout(name, _dump(config, header), {vc: wanted for vc in vc_names}, "single-worker", tuple(notes))


def validate_layout(layout: Layout) -> None:
    """HiveD's load-time rules (helper A's model) when available, and the VC-name rule of spec/openpai.md §5.1."""
    data = yaml.safe_load(layout.text)
    for vc in (data.get("virtualClusters") or {}):
        if not str(vc).isalnum() or str(vc) != str(vc).lower():
            raise HivedlabError(f"VC name {vc!r} must be lower-case letters and digits (it names a StatefulSet)")
    try:
        from cluster.hived import ConfigError, load_config
    except ImportError:  # the model is another helper's; without it only the YAML shape is checked
        return
    try:
        load_config(data)
    except ConfigError as exc:
        where = f" at {exc.pointer}" if getattr(exc, "pointer", "") else ""
        raise HivedlabError(f"the rendered '{layout.name}' config would make HiveD panic{where}: {exc}") from None


def paictl_commands(config_dir: str) -> str:
    """The manual's step 4.1 sequence (run in the dev-box container, in /pai; the cluster-id prompt answers `pai`)."""
    return "\n".join([
        "sudo docker exec -it dev-box bash",
        "cd /pai",
        "python paictl.py service stop -n rest-server hivedscheduler",
        f"python paictl.py config push -p {config_dir} -m service      # cluster-id: pai",
        "python paictl.py service start -n rest-server hivedscheduler",
    ])


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(
        prog,
        "Render the lab's HiveD config (two-vc: manual step 4.1; one-vc: step 4.5) for the group's workers, validate "
        "it, splice it into a copy of services-configuration.yaml, show the diff and the paictl commands. / "
        "为本组生成 HiveD 调度配置并写入 services-configuration.yaml。",
        EXAMPLES,
    )
    parser.add_argument("name", choices=CONFIG_NAMES, help="two-vc (step 4.1) or one-vc (step 4.5)")
    parser.add_argument("--inventory", metavar="FILE", help="group inventory (default: the shipped example)")
    parser.add_argument("--services-config", metavar="PATH",
                        help=f"the cluster's {FILE_NAMES[0]} (or {FILE_NAMES[1]}), or the config folder holding it")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", metavar="DIR", help="folder for the changed copy (default: out/cluster-cfg-NAME)")
    where.add_argument("--in-place", action="store_true", help="change the file itself (the original is kept as .orig)")
    parser.add_argument("--hived-url", metavar="URL", help="HiveD's web service (default: http://<master ip>:30096)")
    parser.add_argument("--wait", type=float, metavar="SECONDS",
                        help="after the paictl commands, wait until HiveD shows the new VCs")
    add_lang(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    inventory = load_inventory(args.inventory)
    layout = plan_layout(args.name, inventory)
    validate_layout(layout)
    zh = args.lang == "zh"
    for note_zh, note_en in layout.notes:
        print(("注意：" if zh else "note: ") + (note_zh if zh else note_en))
    if not args.services_config:
        print(layout.text, end="")
        return 0 if args.wait is None else _wait(args, inventory, layout)
    source = find_services_file(Path(args.services_config).expanduser())
    try:
        original = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HivedlabError(f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}") from None
    spliced = splice_hived_config(original, layout.text)
    verify_splice(original, spliced, layout.text, str(source))
    if args.in_place:
        backup = source.with_name(source.name + ".orig")
        if not backup.exists():
            shutil.copy2(source, backup)
        target = source
    else:
        folder = Path(args.out or f"out/cluster-cfg-{args.name}")
        if source.parent.resolve() != folder.resolve():
            for other in sorted(source.parent.glob("*.yaml")):  # paictl pushes the whole folder (layout.yaml too)
                if other.name not in FILE_NAMES:
                    write_atomic(folder / other.name, other.read_bytes())
        target = folder / source.name
    write_atomic(target, spliced.encode("utf-8"))
    diff = difflib.unified_diff(original.splitlines(keepends=True), spliced.splitlines(keepends=True),
                                fromfile=str(source), tofile=str(target))
    sys.stdout.writelines(diff)
    unchanged = current_hived_config(original, str(source)) == layout.text.rstrip("\n") + "\n"
    if unchanged:
        print("（配置未变化）" if zh else "(the config is unchanged)")
    print(("\n已写入 " if zh else "\nwrote ") + str(target))
    if not args.in_place:
        print("\n把它复制到 dev-box 容器挂载的配置目录（~/pai-deploy/cluster-cfg 即容器中的 /cluster-configuration）："
               if zh else "\nCopy it into the folder the dev-box container mounts (~/pai-deploy/cluster-cfg is "
               "/cluster-configuration there):")
        print(f"cp {target} ~/pai-deploy/cluster-cfg/{source.name}")
    print("\n在 dev-box 容器中执行（实验手册 4.1）：" if zh else "\nIn the dev-box container (manual step 4.1):")
    print(paictl_commands(CONTAINER_CONFIG_DIR))
    return 0 if args.wait is None else _wait(args, inventory, layout)


def _wait(args: argparse.Namespace, inventory: Inventory, layout: Layout) -> int:
    url = args.hived_url
    if not url:
        masters = [m for m in inventory.members if "master" in m.roles and m.ip]
        if not masters:
            raise HivedlabError("give --hived-url: the inventory has no master with an IP")
        url = hived_url(masters[0].ip)
    print(("等待 HiveD 显示 VC：" if args.lang == "zh" else "waiting for HiveD to show the VCs: ")
          + ", ".join(f"{k}={v}" for k, v in layout.vcs.items()), flush=True)
    if wait_for_vcs(url, set(layout.vcs), args.wait):
        print("HiveD 已使用新配置。" if args.lang == "zh" else "HiveD runs the new config.")
        return 0
    raise HivedlabError(f"HiveD at {url} did not show the VCs {sorted(layout.vcs)} within {args.wait:g} s: check "
                        "that the paictl commands ran and `kubectl logs` of hivedscheduler-hs-0", 1)
