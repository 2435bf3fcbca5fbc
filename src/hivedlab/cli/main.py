"""The `hivedlab` entry point: one command, many subcommands, each imported only when it runs.

Every subcommand lives in `hivedlab/commands/<module>.py` and defines

    build_parser(prog: str) -> argparse.ArgumentParser
    run(args: argparse.Namespace) -> int

The table below is the only place that lists them, so `hivedlab --help` costs no imports
(the kubernetes client alone takes a quarter of a second to import).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from typing import Protocol

from hivedlab import __version__
from hivedlab.basics.errors import EXIT_INTERRUPTED, EXIT_USAGE, HivedlabError

# name -> one-line summary
COMMANDS: dict[str, str] = {
    "validate": "validate job protocols, HiveD configs and group inventories (CI)",
    "run": "run lab experiments on the simulated (default) or a real cluster",
    "stop": "stop the jobs a real-cluster run submitted that still wait or run",
    "check": "judge an experiment's evidence log against HiveD's behaviour",
    "report": "fill in the lab report (Markdown + HTML) from a run directory",
    "grade": "grade groups' run directories from their evidence (TAs)",
    "watch": "record pods, events and Frameworks of a real cluster into an evidence log",
    "env": "check this machine for the lab and write its environment record",
    "deploy-inputs": "write OpenPAI quick-start inputs from the group inventory",
    "scheduler-config": "render a HiveD config for the group and put it in services-configuration.yaml",
    "accounts": "create the members' OpenPAI users, grant their VCs and write their tokens (manual step 3.1)",
    "doctor": "check a deployed cluster: nodes, rest-server, portal, HiveD's VCs and cells, tokens, unfinished jobs",
    "sim": "drive the simulated HiveD scheduler directly (sim replay CONFIG OPS.json)",
    "rehearsal": "start or stop the rehearsal cluster: OpenPAI's real control plane here, GPUs emulated",
}


class Command(Protocol):
    def build_parser(self, prog: str) -> argparse.ArgumentParser: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _command(name: str) -> Command:
    """The subcommand's module, imported now."""
    if name == "validate":
        from hivedlab.cli.commands import validate

        return validate
    elif name == "run":
        from hivedlab.cli.commands import run

        return run
    elif name == "stop":
        from hivedlab.cli.commands import stop

        return stop
    elif name == "check":
        from hivedlab.cli.commands import check

        return check
    elif name == "report":
        from hivedlab.cli.commands import report

        return report
    elif name == "grade":
        from hivedlab.cli.commands import grade

        return grade
    elif name == "watch":
        from hivedlab.cli.commands import watch

        return watch
    elif name == "env":
        from hivedlab.cli.commands import env

        return env
    elif name == "deploy-inputs":
        from hivedlab.cli.commands import deploy_inputs

        return deploy_inputs
    elif name == "scheduler-config":
        from hivedlab.cli.commands import scheduler_config

        return scheduler_config
    elif name == "accounts":
        from hivedlab.cli.commands import accounts

        return accounts
    elif name == "doctor":
        from hivedlab.cli.commands import doctor

        return doctor
    elif name == "rehearsal":
        from hivedlab.cli.commands import rehearsal

        return rehearsal
    else:
        from hivedlab.cli.commands import sim

        return sim

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
    lines += [f"  {name:<{width}}  {summary}" for name, summary in COMMANDS.items()]
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
    except KeyboardInterrupt:
        print(f"hivedlab {name}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
