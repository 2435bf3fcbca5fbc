"""Files that hold a secret (an SSH password, OpenPAI tokens): mode 600, and never inside a repository's tree.

A secret written into a git work tree is one `git add .` away from the course's server, so a secret's folder is
refused when it or a parent holds `.git` (a folder, or the file of a linked worktree).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from hivedlab.basics.errors import HivedlabError


def repository_root(path: Path) -> Path | None:
    """The git work tree that holds `path` (which need not exist yet), or None."""
    here = path.expanduser().absolute()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def refuse_inside_repository(folder: Path, what: str, advice: str) -> None:
    """One-line refusal when `folder` lies in a git work tree: `what` holds a secret, `advice` says where else."""
    root = repository_root(folder)
    if root is not None:
        raise HivedlabError(f"{folder} is inside the git repository {root}, and {what} holds a secret: {advice}")


def write_secret(path: Path, text: str) -> None:
    """Write `text` whole or not at all, readable by its owner only (mode 600) from the first byte."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_secret(path: Path, what: str) -> str:
    """A secret file's text: refused when group or others may read it, or when it lies in a git work tree."""
    refuse_inside_repository(path.parent, what, "move it out of the repository (e.g. to your home folder)")
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise HivedlabError(f"{what} {path} is readable by group or others (mode {mode:04o}): "
                                f"run `chmod 600 {path}`")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise HivedlabError(f"{what} {path}: not UTF-8 text") from None
    except OSError as exc:
        raise HivedlabError(f"cannot read {what} {path} ({exc.strerror or exc})") from None
