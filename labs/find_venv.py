"""Let a numbered lab script run in a new shell: without `hivedlab` importable, re-run it with the repository's `.venv`.

`make run` installs hivedlab into `.venv` only, so `python3 labs/03_vc_safety.py` in a fresh terminal would stop at
`ModuleNotFoundError`. Standard library only and Python 3.6 code: the system's Python (Ubuntu 18.04: 3.6) runs this
part, so no `X | None` or `list[str]` in annotations (evaluated at import) and `.format()` rather than f-strings.
"""

# Python 3.6 code keeps str.format (tests/cli/test_env_python36.py refuses f-strings in it), whatever UP032 says.
# ruff: noqa: UP032

import os
import sys
from typing import List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".venv")


def use_repository_venv(argv: Optional[List[str]] = None) -> None:
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
        "hivedlab is not installed for {}: run `make venv` (or `make run`) in {} first, or `source "
        ".venv/bin/activate` there / 请先在仓库目录运行 `make venv`（或 `make run`）\n".format(sys.executable, ROOT))
    sys.exit(2)
