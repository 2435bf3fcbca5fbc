"""The `hivedlab` entry point: one command, many subcommands, each imported only when it runs.

Every subcommand lives in `hivedlab/cli/commands/<module>.py` and defines

    build_parser(prog: str) -> argparse.ArgumentParser
    run(args: argparse.Namespace) -> int

`COMMANDS` is the only place that lists them; a command's module is imported only when it runs, so
`hivedlab --help` costs no imports (the kubernetes client alone takes a quarter of a second to import).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from hivedlab import __version__
from hivedlab.basics.errors import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    HivedlabError,
    caused_by_interrupt,
    interrupted_before_start,
)


@dataclass(frozen=True)
class CommandEntry:
    module: str  # under hivedlab.cli.commands
    summary: str


# The one list of subcommands: name -> its module and one-line summary (tests/cli/test_main.py checks that every
# module in hivedlab/cli/commands/ is listed and imports)
COMMANDS: dict[str, CommandEntry] = {
    "validate": CommandEntry("validate", "validate job protocols, HiveD configs and group inventories (CI)"),
    "run": CommandEntry("run", "run lab experiments on the simulated (default) or a real cluster"),
    "stop": CommandEntry("stop", "stop the jobs a real-cluster run submitted that still wait or run"),
    "check": CommandEntry("check", "judge an experiment's evidence log against HiveD's behaviour"),
    "report": CommandEntry("report", "fill in the lab report (Markdown + HTML) from a run directory"),
    "grade": CommandEntry("grade", "grade groups' run directories from their evidence (TAs)"),
    "watch": CommandEntry("watch", "record pods, events and Frameworks of a real cluster into an evidence log"),
    "env": CommandEntry("env", "check this machine for the lab and write its environment record"),
    "deploy-inputs": CommandEntry("deploy_inputs", "write OpenPAI quick-start inputs from the group inventory"),
    "scheduler-config": CommandEntry(
        "scheduler_config", "render a HiveD config for the group and put it in services-configuration.yaml"),
    "accounts": CommandEntry(
        "accounts", "create the members' OpenPAI users, grant their VCs and write their tokens (manual step 3.1)"),
    "doctor": CommandEntry("doctor", "check a deployed cluster: nodes, rest-server, portal, HiveD's VCs and cells, "
                                     "tokens, unfinished jobs"),
    "sim": CommandEntry("sim", "drive the simulated HiveD scheduler directly (sim replay CONFIG OPS.json)"),
    "compare-streams": CommandEntry("compare_streams", "compare two runs' streams, e.g. the simulator's and the "
                                                       "rehearsal cluster's (docs/simulator-vs-rehearsal.md)"),
    "trace": CommandEntry("trace", "replay a multi-tenant GPU trace under FIFO, quota VCs, HiveD, DRF and each VC "
                                   "alone: the sharing anomaly, measured (docs/trace.md)"),
    "rehearsal": CommandEntry("rehearsal", "start or stop the rehearsal cluster: OpenPAI's real control plane here, "
                                           "GPUs emulated"),
}


class Command(Protocol):
    def build_parser(self, prog: str) -> argparse.ArgumentParser: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _command(name: str) -> Command:
    """The subcommand's module, imported now."""
    module: Command = importlib.import_module(f"hivedlab.cli.commands.{COMMANDS[name].module}")
    return module


EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a program its pipe closed

USAGE = "usage: hivedlab [-h] [--version] COMMAND [ARGS...]"


def _top_level_help() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        USAGE,
        "",
        "The OpenPAI + HiveD scheduling lab toolkit. / OpenPAI + HiveD 调度实验工具。",
        "",
        "commands:",
    ]
    lines += [f"  {name:<{width}}  {entry.summary}" for name, entry in COMMANDS.items()]
    lines += [
        "",
        "examples:",
        "  hivedlab run all                      # the whole lab on the simulated cluster, report in out/",
        "  hivedlab validate jobs configs        # what course CI runs",
        "  hivedlab check out/experiments/gang/evidence.jsonl",
        "",
        "Run 'hivedlab COMMAND --help' for a command's options and examples.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `hivedlab ... | head`: the reader has gone; stop quietly, as cat and kubectl do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        return EXIT_BROKEN_PIPE
    except BaseException as exc:  # a Ctrl-C before the command took over (its import, its options): nothing ran
        if not caused_by_interrupt(exc):
            raise
        print(interrupted_before_start(sys.argv[1:] if argv is None else argv), file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_top_level_help())
        return 0 if args else EXIT_USAGE
    if args[0] == "--version":
        print(f"hivedlab {__version__}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        print(f"hivedlab: error: unknown command '{name}'{hint}\n{USAGE}", file=sys.stderr)
        return EXIT_USAGE
    module = _command(name)
    parser = module.build_parser(f"hivedlab {name}")
    parsed = parser.parse_args(rest)
    try:
        return int(module.run(parsed))
    except HivedlabError as exc:
        print(f"hivedlab {name}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except BaseException as exc:
        if not caused_by_interrupt(exc):
            raise
        again = shlex.join(["hivedlab", name, *rest])
        print(f"hivedlab {name}: interrupted; run `{again}` again to finish / 已中断：重新运行 `{again}` 完成",
              file=sys.stderr)
        return EXIT_INTERRUPTED
