"""The command line: `labs/00_check_env.py` and `hivedlab env` (which adds these options to its own parser)."""

# Python 3.6 code keeps str.format (tests/cli/test_env_python36.py refuses f-strings in it), whatever UP032 says.
# ruff: noqa: UP032

import argparse
import json
import os
import sys
from typing import List, Optional, TextIO

from . import probes
from .probes import collect_facts
from .record import build_record, failed_checks, render_text, write_record
from .shapes import DEFAULT_CUDA_IMAGE, EnvCheckError, Options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The machine check's options, on `labs/00_check_env.py`'s parser or `hivedlab env`'s."""
    parser.add_argument("--member", help="the member's name as in the group inventory (default: the hostname)")
    parser.add_argument("--role", choices=("worker", "master", "dev-box"),
                        help="this machine's role: a master or dev-box needs no GPU; adds the memory check")
    parser.add_argument("--ip", help="this machine's IP as the cluster sees it (default: the outward interface's)")
    parser.add_argument("--gpu-container", action="store_true",
                        help="also run nvidia-smi in a CUDA container (pulls --cuda-image), then check that a "
                             "container given one GPU sees exactly one")
    parser.add_argument("--cuda-image", default=DEFAULT_CUDA_IMAGE,
                        help="image for --gpu-container (default: {})".format(DEFAULT_CUDA_IMAGE))
    parser.add_argument("--linux-user", default="openpai",
                        help="the Linux user of step 1.4 to look for ('' to skip; default: openpai)")
    parser.add_argument("--openpai-version", help="the OpenPAI version deployed, when known (e.g. v1.2.0)")
    parser.add_argument("--no-sdk", action="store_true",
                        help="use the docker CLI even when the docker SDK is installed")
    parser.add_argument("--os-release", default="/etc/os-release", help=argparse.SUPPRESS)
    # probes.PROC_NET is read now, not bound at import: the tests point it at a folder of their own
    parser.add_argument("--proc-net", default=probes.PROC_NET, help=argparse.SUPPRESS)
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument("--out", metavar="PATH",
                        help="where to write the record (default: env/<member>.json; '-' to write none)")
    parser.add_argument("--lang", choices=("zh", "en"), default="zh", help="language of the text (default: zh)")


def options_from_args(args: argparse.Namespace) -> Options:
    """The options the probes and the checks read."""
    return {
        "member": args.member,
        "role": args.role,
        "ip": args.ip,
        "gpu_container": args.gpu_container,
        "cuda_image": args.cuda_image,
        "linux_user": args.linux_user,
        "openpai_version": args.openpai_version,
        "no_sdk": args.no_sdk,
        "os_release": args.os_release,
        "proc_net": args.proc_net,
    }


def execute(args: argparse.Namespace, stdout: Optional[TextIO] = None) -> int:
    """Probe, judge, write and print; returns the exit status (0 all passed, 1 a check failed)."""
    stdout = stdout or sys.stdout
    options = options_from_args(args)
    record = build_record(collect_facts(options), options)
    out = args.out or os.path.join("env", "{}.json".format(_safe_name(record["member"])))
    if out != "-":
        write_record(record, out)
    if args.format == "json":
        stdout.write(json.dumps(record, ensure_ascii=False, indent=2) + "\n")
    else:
        stdout.write(render_text(record, args.lang) + "\n")
        if out != "-":
            stdout.write(("记录已写入 " if args.lang == "zh" else "record written to ") + out + "\n")
            stdout.write(copy_hint(out, os.path.basename(out), args.role == "dev-box", args.lang) + "\n")
    return 1 if failed_checks(record) else 0


RUN_DIR_ENV = "out/env/"  # a run directory's machine records: `hivedlab.rundir.env_record_name` (out/ by default)


def copy_hint(written: str, name: str, here: bool, lang: str) -> str:
    """The command that copies a record into the run directory's env/ on the dev-box (here: this machine is it)."""
    command = ("mkdir -p {0} && cp {1} {0}{2}".format(RUN_DIR_ENV, written, name) if here else
               "scp {} <user>@<dev-box>:<repository>/{}{}".format(written, RUN_DIR_ENV, name))
    if lang == "zh":
        return "把记录复制到 dev-box 上运行目录的 env/（默认 {}）：{}".format(RUN_DIR_ENV, command)
    return "copy it into the run directory's env/ on the dev-box ({} by default): {}".format(RUN_DIR_ENV, command)


def _safe_name(name: str) -> str:
    """The member's name as a file name."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "member"


def main(argv: Optional[List[str]] = None) -> int:
    """`labs/00_check_env.py`: 0 all checks passed, 1 a check failed, 2 a usage or output error, 130 interrupted."""
    parser = argparse.ArgumentParser(
        prog="00_check_env.py",
        description="Check this machine for the lab (manual step 1) and write its environment record. / "
                    "检查本机是否满足实验手册第 1 步的要求，并写出环境记录。",
        epilog="examples:\n  python3 labs/00_check_env.py --member Carol --role worker\n"
               "  sudo python3 labs/00_check_env.py --member Carol --role worker --gpu-container --format json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return execute(args)
    except EnvCheckError as exc:
        sys.stderr.write("00_check_env.py: error: {}\n".format(exc))
        return 2
    except KeyboardInterrupt:
        return 130
