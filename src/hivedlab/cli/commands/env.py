"""`hivedlab env`: the machine check of the manual's step 1, and the environment record.

The implementation is the package `hivedlab.envcheck` (standard library only, Python 3.6 code, so that
`labs/00_check_env.py` runs it alone on a member's machine); this command runs that same code.
"""

from __future__ import annotations

import argparse

from hivedlab import envcheck
from hivedlab.basics.errors import HivedlabError
from hivedlab.cli.options import new_parser

EXAMPLES = """\
  hivedlab env --member Carol --role worker                 # check, write env/Carol.json
  sudo hivedlab env --member Carol --role worker --gpu-container   # also run nvidia-smi in a CUDA container
  hivedlab env --format json --out out/env/Carol.json       # the record the report reads
  python3 labs/00_check_env.py --member Carol               # the same check, with the system Python alone
"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(
        prog,
        "Check this machine for the lab (Docker, the nvidia default runtime, GPUs, driver and CUDA, OS) and write "
        "its environment record. Each failed check says what to run. / 检查本机环境并写出环境记录。",
        EXAMPLES,
    )
    envcheck.add_arguments(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        return envcheck.execute(args)
    except envcheck.EnvCheckError as exc:
        raise HivedlabError(str(exc)) from None
