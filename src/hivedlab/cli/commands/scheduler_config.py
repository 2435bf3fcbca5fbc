"""`hivedlab scheduler-config two-vc|one-vc`: the HiveD config for the group, spliced into services-configuration.yaml.

Which config a group gets (the manual's, or an equivalent for other hardware) is
`hivedlab.lab_group.layouts.plan_layout`.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import sys
from pathlib import Path

from hivedlab.backends.pai.addresses import hived_address
from hivedlab.backends.pai.hived_inspect import wait_for_vcs
from hivedlab.backends.pai.services_config import (
    FILE_NAMES,
    current_hived_config,
    find_services_file,
    splice_hived_config,
    verify_splice,
)
from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import read_text, write_atomic
from hivedlab.cli.options import add_inventory, add_lang, new_parser
from hivedlab.lab_group.inventory import Inventory, load_group
from hivedlab.lab_group.layouts import CONFIG_NAMES, Layout, plan_layout, validate_layout
from hivedlab.lab_group.rules import NEEDS_HOSTNAME

CONTAINER_CONFIG_DIR = "/cluster-configuration"  # where the manual's dev-box container mounts the config (step 2.3)
EXAMPLES = """\
  hivedlab scheduler-config two-vc --inventory group.yaml                  # print the HiveD config and the notes
  hivedlab scheduler-config two-vc --inventory group.yaml \\
      --services-config ~/pai-deploy/cluster-cfg --out out/cluster-cfg      # a copy with the config spliced in + diff
  hivedlab scheduler-config one-vc --inventory group.yaml \\
      --services-config /cluster-configuration --in-place                  # as the manual's step 4.5 (keeps a .orig)
  hivedlab scheduler-config one-vc --inventory group.yaml --wait 600        # then wait until HiveD shows the new VCs
"""


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
    add_inventory(parser)
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
    if (args.out or args.in_place) and not args.services_config:
        option = "--out" if args.out else "--in-place"
        raise HivedlabError(f"{option} needs --services-config PATH: it changes the cluster's {FILE_NAMES[0]}; "
                            "without it the HiveD config is only printed / "
                            f"{option} 需要同时给出 --services-config：它修改集群的 {FILE_NAMES[0]}；"
                            "不给时只打印 HiveD 配置")
    inventory = load_group(args.inventory, frozenset({NEEDS_HOSTNAME}))
    layout = plan_layout(args.name, inventory)
    validate_layout(layout)
    zh = args.lang == "zh"
    for note_zh, note_en in layout.notes:
        print(("注意：" if zh else "note: ") + (note_zh if zh else note_en))
    if not args.services_config:
        print(layout.text, end="")
        return 0 if args.wait is None else _wait(args, inventory, layout)
    source = find_services_file(Path(args.services_config).expanduser())
    original = read_text(source)
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
    url = hived_address(inventory, args.hived_url, os.environ, "--hived-url")
    print(("等待 HiveD 显示 VC：" if args.lang == "zh" else "waiting for HiveD to show the VCs: ")
          + ", ".join(f"{k}={v}" for k, v in layout.vcs.items()), flush=True)
    if wait_for_vcs(url, set(layout.vcs), args.wait):
        print("HiveD 已使用新配置。" if args.lang == "zh" else "HiveD runs the new config.")
        return 0
    raise HivedlabError(f"HiveD at {url} did not show the VCs {sorted(layout.vcs)} within {args.wait:g} s: check "
                        "that the paictl commands ran and `kubectl logs` of hivedscheduler-hs-0", 1)
