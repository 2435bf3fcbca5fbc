"""Let a numbered lab script run in a new shell: without `hivedlab` importable, re-run it with the repository's `.venv`.

`make run` installs hivedlab into `.venv` only, so `python labs/03_vc_safety.py` in a fresh terminal would stop at
`ModuleNotFoundError`. Standard library only and Python 3.6 syntax: the system's Python runs this part.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".venv")


def use_repository_venv(argv: list[str] | None = None) -> None:
    """Return when hivedlab imports; else exec `.venv/bin/python` on the same script, or exit 2 saying what to run."""
    try:
        import hivedlab  # noqa: F401
        return
    except ImportError:
        pass
    python = os.path.join(VENV, "bin", "python")
    in_venv = os.path.abspath(sys.prefix) == os.path.abspath(VENV)
    if os.path.exists(python) and not in_venv:
        os.execv(python, [python] + list(sys.argv if argv is None else argv))
    sys.stderr.write(
        f"hivedlab is not installed for {sys.executable}: run `make venv` (or `make run`) in {ROOT} first, or `source "
        ".venv/bin/activate` there / 请先在仓库目录运行 `make venv`（或 `make run`）\n")
    sys.exit(2)
