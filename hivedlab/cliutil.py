"""Options and helpers every subcommand shares, so that they all behave alike."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path


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
    parser.add_argument("--out", default=default, metavar="PATH", help=f"where to write the {what}" + (f" (default: {default})" if default else " (default: standard output)"))


def add_lang(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lang", choices=("zh", "en"), default="zh", help="language of user-facing text (default: zh)")


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write a file whole or not at all: a temp file in the same folder, then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({} if isinstance(data, bytes) else {"encoding": "utf-8"})) as handle:
            handle.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; reports and charts are for others to read too
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
