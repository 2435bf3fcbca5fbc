"""Options and helpers every subcommand shares, so that they all behave alike."""

from __future__ import annotations

import argparse


def new_parser(prog: str, description: str, examples: str) -> argparse.ArgumentParser:
    """A parser whose --help ends with worked examples."""
    return argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog="examples:\n" + examples.rstrip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_format(parser: argparse.ArgumentParser, choices: tuple[str, ...], default: str = "text") -> None:
    parser.add_argument("--format", choices=choices, default=default, help=f"output format (default: {default})")


def add_out(parser: argparse.ArgumentParser, default: str | None = None, what: str = "output") -> None:
    parser.add_argument("--out", default=default, metavar="PATH",
                        help=f"where to write the {what}"
                        + (f" (default: {default})" if default else " (default: standard output)"))


def add_lang(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lang", choices=("zh", "en"), default="zh", help="language of user-facing text (default: zh)")


def add_inventory(parser: argparse.ArgumentParser) -> None:
    """`--inventory FILE`, read by every command through `hivedlab.lab_group.inventory.load_group`."""
    parser.add_argument("--inventory", metavar="FILE",
                        help="group inventory (default: ./group.yaml when there is one, else the example "
                             "configs/group.example.yaml)")
