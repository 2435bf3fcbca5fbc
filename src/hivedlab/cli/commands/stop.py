"""`hivedlab stop RUN_DIR`: stop the jobs a real-cluster run submitted that still wait or run on the cluster."""

from __future__ import annotations

import argparse
from pathlib import Path

from hivedlab.basics.errors import EXIT_FINDINGS, EXIT_OK
from hivedlab.cli.options import new_parser

DESCRIPTION = """\
Stop exactly the jobs that a run on a real cluster (hivedlab run --cluster pai) submitted and that are still waiting or
running: the run directory's pai/submitted.json says which. Each job is stopped as the member who submitted it, with
the tokens of HIVEDLAB_PAI_TOKEN_FILE (or HIVEDLAB_PAI_TOKEN); the address is HIVEDLAB_PAI_URL or the master in the
run's inventory. Other people's jobs are never touched. The calls go to RUN_DIR/pai/rest-calls.jsonl.
停止某次真实集群运行提交的、仍在等待或运行的任务（只停本次运行的任务，不动别人的任务）。

Exit status: 0 nothing left running; 1 a job could not be stopped; 2 not a run directory, no token or no cluster."""

EXAMPLES = """\
  hivedlab stop out                          # after a run that ended on an error, or was interrupted
  HIVEDLAB_PAI_TOKEN_FILE=~/.pai-tokens hivedlab stop out
  hivedlab stop out --pai-url http://10.0.0.1
"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(prog, DESCRIPTION, EXAMPLES)
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the --out folder of a hivedlab run --cluster pai")
    parser.add_argument("--pai-url", metavar="URL", help="the OpenPAI master (default: HIVEDLAB_PAI_URL, else the "
                        "master in RUN_DIR/inventory.yaml)")
    parser.add_argument("--token-file", metavar="FILE", help="`user: token` lines (default: HIVEDLAB_PAI_TOKEN_FILE)")
    return parser


def run(args: argparse.Namespace) -> int:
    from hivedlab.backends.pai import stop_run

    result = stop_run(Path(args.run_dir), pai_url=args.pai_url, token_file=args.token_file)
    for job in result.stopped:
        print(f"stopped {job.key} (was {job.state}, experiment {job.experiment}) / 已停止")
    for job in result.done:
        print(f"left as it is {job.key} ({job.state}) / 无需停止")
    for job, why in result.failed:
        print(f"could not stop {job.key}: {why}")
    if not (result.stopped or result.done or result.failed):
        print(f"{args.run_dir}: this run has no job on the cluster / 本次运行没有提交任务")
    return EXIT_FINDINGS if result.failed else EXIT_OK
