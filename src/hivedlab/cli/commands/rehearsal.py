"""`hivedlab rehearsal build|up|status|down|switch|fault|env`: OpenPAI's real control plane on this machine, with
emulated kubelets and GPUs (docs/rehearsal.md)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from hivedlab.basics.errors import EXIT_FINDINGS, EXIT_OK, HivedlabError
from hivedlab.cli.options import new_parser

if TYPE_CHECKING:  # imported when they run: `hivedlab --help` stays cheap
    from hivedlab.rehearsal.settings import Settings
    from hivedlab.rehearsal.stack import Cluster

DESCRIPTION = """\
The rehearsal cluster: etcd, kube-apiserver, kube-controller-manager, one kube-scheduler per VC with HiveD v0.3.4
as extender, FrameworkController v0.8.0, OpenPAI v1.2.0's rest-server, database-controller and PostgreSQL, all real,
on loopback ports; only the kubelets, containers and GPUs are emulated. The lab then runs on it with --cluster pai.
演练集群：在本机回环地址上运行 OpenPAI 的真实控制面（Kubernetes、HiveD、FrameworkController、rest-server），
仅模拟 kubelet、容器和 GPU；之后用 --cluster pai 在其上运行实验。

  build   Kubernetes 1.20.2 from Debian's source package into the home's bin/ (minutes, once)
  up      start everything (OpenPAI's programs from --programs / HIVEDLAB_REHEARSAL_PROGRAMS)
  status  each part: built/installed, and each started process: running or not
  down    stop exactly the processes `up` started and remove the cluster's state
  switch  two-vc|one-vc: what paictl's config push does (HiveD, the per-VC schedulers, the rest-server restart)
  fault   inject a failure: a node NotReady (--not-ready NODE, --ready NODE), a container exit code
          (--exit-code PART=CODE: pods whose name or OpenPAI job `user~job` contains PART), --clear
  env     the shell lines that point hivedlab, kubectl and the lab at the cluster

Home: --home, else HIVEDLAB_REHEARSAL_HOME, else ~/.cache/hivedlab/rehearsal (never inside a repository)."""

EXAMPLES = """\
  hivedlab rehearsal build                                   # once: Kubernetes 1.20.2 (about 9 minutes on 2 cores)
  hivedlab rehearsal up --programs ~/openpai-programs --inventory group.yaml --speedup 5
  eval "$(hivedlab rehearsal env)"; hivedlab run smoke --cluster pai --inventory group.yaml
  hivedlab rehearsal fault --exit-code alice~job-config-3=1  # alice's job-config-3 pods end with exit code 1
  hivedlab rehearsal switch one-vc                           # the manual's step 4.5
  hivedlab rehearsal status; hivedlab rehearsal down
"""
ACTIONS = ("build", "up", "status", "down", "switch", "fault", "env")


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(prog, DESCRIPTION, EXAMPLES)
    parser.add_argument("action", choices=ACTIONS)
    parser.add_argument("config", nargs="?", choices=("two-vc", "one-vc"),
                        help="switch: the HiveD config to switch to")
    parser.add_argument("--home", metavar="DIR", help="the cluster's folder (default: HIVEDLAB_REHEARSAL_HOME or "
                        "~/.cache/hivedlab/rehearsal)")
    parser.add_argument("--programs", metavar="DIR", help="OpenPAI's programs (default: HIVEDLAB_REHEARSAL_PROGRAMS)")
    parser.add_argument("--port-offset", type=int, metavar="N",
                        help="added to every loopback port, for a second cluster beside the first (default: "
                        "HIVEDLAB_REHEARSAL_PORT_OFFSET or 0)")
    parser.add_argument("--inventory", metavar="FILE",
                        help="group inventory (up: default ./group.yaml when there is one, else the example; switch: "
                             "default the one the cluster came up with)")
    parser.add_argument("--config", dest="start_config", choices=("two-vc", "one-vc"), default="two-vc",
                        help="up: the HiveD config to start with (default: two-vc, the manual's step 4.1)")
    parser.add_argument("--kubeflow", metavar="DIR", help="up: also start the default scheduler, kube-batch v0.4 and "
                        "tf-operator v0.5 from this folder (default: HIVEDLAB_REHEARSAL_KUBEFLOW; docs/rehearsal.md)")
    parser.add_argument("--speedup", type=float, default=1.0, metavar="X",
                        help="up: jobs' sleeps run X times faster (default: 1)")
    parser.add_argument("--not-ready", action="append", default=[], metavar="NODE")
    parser.add_argument("--ready", action="append", default=[], metavar="NODE")
    parser.add_argument("--exit-code", action="append", default=[], metavar="PART=CODE")
    parser.add_argument("--clear", action="store_true", help="fault: forget every injected failure")
    return parser


def _inventory_path(value: str | None) -> str | None:
    return os.path.abspath(value) if value else None


def _env_lines(cluster: Cluster, home: Path) -> list[str]:
    return [f"export HIVEDLAB_PAI_URL={cluster.pai_url}", f"export HIVEDLAB_HIVED_URL={cluster.hived_url}",
            f"export KUBECONFIG={cluster.kubeconfig}", f"export HIVEDLAB_REHEARSAL_HOME={home}",
            f"# OpenPAI admin's token (hivedlab accounts --admin-token-file): {cluster.pai_admin_token_file}"]


def _fault(args: argparse.Namespace, path: Path) -> str:
    from hivedlab.rehearsal.kubelet_loop import update_faults

    codes: dict[str, int] = {}
    for item in args.exit_code:
        part, _, code = item.partition("=")
        try:
            codes[part] = int(code)
        except ValueError:
            raise HivedlabError(f"--exit-code wants PART=CODE (an integer code), got {item!r}") from None
    faults = update_faults(path, args.not_ready, args.ready, codes, args.clear)
    return json.dumps({"not_ready": sorted(faults.not_ready), "exit_codes": faults.exit_codes})


def run(args: argparse.Namespace) -> int:
    from hivedlab.lab_group.inventory import GROUP_FILE, load_group, load_inventory
    from hivedlab.lab_group.rules import NEEDS_HOSTNAME
    from hivedlab.rehearsal import stack
    from hivedlab.rehearsal.settings import load_settings

    settings = load_settings(args.home, args.programs, port_offset=args.port_offset)
    if args.action == "build":
        from hivedlab.rehearsal.build import build

        build(settings.paths)
        print(f"built into {settings.paths.bin} / 构建完成")
        return EXIT_OK
    if args.action == "up":
        inventory = load_group(args.inventory, frozenset({NEEDS_HOSTNAME}))  # --inventory, ./group.yaml, the example
        inventory_path = _inventory_path(args.inventory or (GROUP_FILE if Path(GROUP_FILE).is_file() else None))
        from hivedlab.rehearsal.kubeflow import kubeflow_folder

        cluster, seconds = stack.up(settings, inventory, inventory_path, args.start_config,
                                    args.speedup, kubeflow_folder(args.kubeflow))
        print(f"the rehearsal cluster is up in {seconds:.1f} s ({cluster.config}) / 演练集群已启动")
        print("\n".join(_env_lines(cluster, settings.paths.home)))
        return EXIT_OK
    if args.action == "status":
        return _status(settings, args.kubeflow)
    if args.action == "down":
        for line in stack.down(settings):
            print(line)
        print("the rehearsal cluster is down / 演练集群已停止")
        return EXIT_OK
    if args.action == "switch":
        if not args.config:
            raise HivedlabError("switch needs a config: two-vc or one-vc")
        current = stack.read_cluster(settings)
        inventory_path = _inventory_path(args.inventory) or (current.inventory if current else None)
        cluster = stack.switch(settings, load_inventory(inventory_path), args.config)
        print(f"HiveD now runs {cluster.config} / HiveD 已切换到 {cluster.config}")
        from hivedlab.backends.pai.rest import TOKEN_FILE_ENV
        from hivedlab.backends.pai.users import AccountsFiles

        accounts = AccountsFiles(inventory_path, cluster.pai_admin_token_file, os.environ.get(TOKEN_FILE_ENV))
        dropped = stack.dropped_grants(current.config, cluster.config, accounts) if current else None
        if dropped:
            print(dropped)
        return EXIT_OK
    if args.action == "fault":
        print(_fault(args, settings.paths.faults))
        return EXIT_OK
    current = stack.read_cluster(settings)
    if current is None:
        raise HivedlabError("the rehearsal cluster is not up: run `hivedlab rehearsal up` first")
    print("\n".join(_env_lines(current, settings.paths.home)))
    return EXIT_OK


def _status(settings: Settings, kubeflow_option: str | None) -> int:
    from hivedlab.rehearsal.kubeflow import check_kubeflow, kubeflow_folder
    from hivedlab.rehearsal.programs import check_parts
    from hivedlab.rehearsal.stack import database_problem, read_cluster
    from hivedlab.rehearsal.supervisor import alive, load_record

    cluster = read_cluster(settings)
    kubeflow = kubeflow_folder(kubeflow_option) or (Path(cluster.kubeflow) if cluster and cluster.kubeflow else None)
    programs = settings.programs or (Path(cluster.programs) if cluster and cluster.programs else None)
    parts = check_parts(settings.paths, programs) + (check_kubeflow(kubeflow) if kubeflow else [])
    for part in parts:
        print(f"{'ok' if part.problem is None else 'MISSING':8} {part.name}: {part.problem or part.path}")
    if programs is None:
        print("?        OpenPAI's programs: not named (--programs or HIVEDLAB_REHEARSAL_PROGRAMS)")
    elif settings.programs is None:
        print(f"ok       OpenPAI's programs: {programs} (the folder `up` was given)")
    started = load_record(settings.paths.record)
    down = [p for p in started if not alive(p)]
    for process in started:
        print(f"{'running' if alive(process) else 'STOPPED':8} {process.name} (pid {process.pid}, log {process.log})")
    stalled = None
    if cluster and any(p.name == "rest-server" and alive(p) for p in started):
        stalled = database_problem(cluster)
        print(f"{'STALLED' if stalled else 'ok':8} rest-server's database: {stalled or 'the job list answers'}")
    print(f"cluster: {'up, ' + cluster.config if cluster and started and not down else 'down'}")
    return EXIT_FINDINGS if down or stalled else EXIT_OK
