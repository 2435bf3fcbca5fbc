"""What the numbered lab scripts share: say which step of the manual this is, then run the CLI."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from hivedlab.basics.errors import HivedlabError
from hivedlab.cli.main import main
from hivedlab.lab_group.inventory import GROUP_FILE, find_member, group_line, load_group, shown_path
from hivedlab.plans.loader import load_plan
from hivedlab.runner import is_group_plan


def script_root() -> Path:
    """The repository a numbered script runs from: the folder above its `labs/` (where the README puts
    group.yaml)."""
    return Path(sys.argv[0]).absolute().parent.parent


def with_group(args: Sequence[str], root: Path) -> list[str]:
    """The arguments with `--inventory ROOT/group.yaml` added when none is given and the repository has one, said in
    one line as a command says the group it finds by itself (an inventory it cannot read: the command says why)."""
    own = root / GROUP_FILE
    if _option(list(args), "--inventory") is not None or not own.is_file():
        return list(args)
    try:
        print(group_line(load_group(str(own), say=False).group, shown_path(own)), file=sys.stderr, flush=True)
    except HivedlabError:
        pass
    return [*args, "--inventory", shown_path(own)]


def run_experiment_step(experiment: str, argv: Sequence[str], root: Path | None = None) -> int:
    """Print what the manual's step is about, then `hivedlab run EXPERIMENT [ARGS]` (simulated cluster by default),
    with the repository's group.yaml (`with_group`)."""
    plan = load_plan(experiment)
    step, zh, en = plan.manual_step or "", plan.summary["zh"], plan.summary["en"]
    args = with_group(argv, root or script_root())
    cluster = _option(args, "--cluster") or "sim"
    where = ("模拟集群 / simulated cluster (--cluster pai 在真实集群上运行)" if cluster == "sim"
             else "真实集群 / real cluster")
    print(f"[实验手册 {step} / manual step {step}] {zh}\n{en}\n运行于 / running on: {where}", flush=True)
    if _option(args, "--member") is not None:
        member = _known_member(args)
        if member is None:  # an unknown name: the run command says so (listing the members) before anything runs
            return main(["run", experiment, *args])
        whose = ("所有组员同时提交，不分轮次 / every member submits at once: no turns" if is_group_plan(plan)
                 else f"轮到 {member} 提交 / {member}'s turn to submit")
        print(f"轮次 / turn: {whose}", flush=True)
    print(flush=True)
    again = again_command(argv)
    if cluster == "sim" and "--replace" not in args:
        args.append("--replace")  # a script run again simulates again, as `make run` does; the earlier run is kept
    return main(["run", experiment, *args, "--again-as", again])


def again_command(argv: Sequence[str]) -> str:
    """The command that started this script, as a Ctrl-C's advice gives it back: run again, the script simulates
    again (moving the interrupted run aside) or, on a real cluster, resumes."""
    script = os.path.relpath(sys.argv[0]) if sys.argv[0] else "labs/script.py"
    return shlex.join(["python3", script, *argv])


def _option(args: list[str], name: str) -> str | None:
    """An option's value as argparse reads it: `--name VALUE` or `--name=VALUE`."""
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
    return None


def _known_member(args: list[str]) -> str | None:
    """The `--member` name as the inventory spells it, or None when the inventory (or the name) is not right."""
    try:
        inventory = load_group(_option(args, "--inventory"), say=False)
        return find_member(inventory, _option(args, "--member") or "").name
    except HivedlabError:
        return None


def run_command_step(step: str, zh: str, en: str, command: Sequence[str], root: Path | None = None) -> int:
    """Print what the manual's step is about, then run one hivedlab command (with the repository's group.yaml)."""
    print(f"[实验手册 {step} / manual step {step}] {zh}\n{en}\n", flush=True)
    return main(with_group(command, root or script_root()))


if __name__ == "__main__":
    sys.exit(run_experiment_step(sys.argv[1], sys.argv[2:]))
