"""`hivedlab trace`: replay a multi-tenant GPU trace under FIFO, quota VCs, HiveD, DRF and each VC alone, and write
a report that answers the lecture's two questions with the numbers (docs/trace.md)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.text import pad
from hivedlab.cli.options import add_format, add_lang, add_out, new_parser
from hivedlab.rundir import REPORT_HTML

if TYPE_CHECKING:
    from hivedlab.trace.metrics import PolicyRow
    from hivedlab.trace.simulate import Progress
    from hivedlab.trace.workload import LeftOut

POLICY_NAMES = ("fifo", "quota", "hived", "drf", "private")
SHOWN = 20  # jobs left out named on standard error

DESCRIPTION = """\
Replay a multi-tenant GPU trace on one cluster model under several policies and write a report:
FIFO (one queue), quota VCs (YARN capacity scheduler: quota in GPUs, idle quota lent and taken back by
preemption), HiveD (the toolkit's HiveD v0.3.4 model, each VC's cells from its share), DRF between VCs, and
each VC alone on a private cluster made of its cells - the reference of the sharing anomaly.

The default workload is a seeded Philly-like trace (configs/trace/philly-like.yaml: each figure's source,
each assumption stated). A trace of your own: --csv FILE (columns job, vc, user, submit_time, gpus,
duration[, cpu, memory_mb]), or the Philly release's files, downloaded by you: --philly cluster_job_log
with --machines cluster_machine_list. The toolkit never downloads anything.

Output folder (--out): report.zh.md, report.en.md, report.html, charts/, trace.json. A folder holding
another kind of output is refused; --replace moves an earlier trace output to OUT/replaced/<time>/.
Exit codes: 0 done, 2 unreadable input or unusable folder, 130 interrupted.

在同一集群模型上按多种策略重放多租户 GPU 负载（FIFO、配额 VC、HiveD、DRF、各 VC 独占），
写出报告，用数字回答课程的两个问题。默认负载为内置的、带种子的类 Philly 负载。"""

EXAMPLES = """\
  hivedlab trace                                    # the generated Philly-size trace, report in trace-out/
  hivedlab trace --jobs 10000 --seed 3 --out t10k   # a smaller generated trace
  hivedlab trace --csv my-trace.csv --shares shares.yaml --lang en
  hivedlab trace --philly philly/cluster_job_log --machines philly/cluster_machine_list
  hivedlab trace --policies quota,hived,private --replace
  hivedlab trace --format json | jq '.policies.hived.anomalous_vcs'"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(prog, DESCRIPTION, EXAMPLES)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--csv", metavar="FILE", help="a trace in the plain CSV form")
    source.add_argument("--philly", metavar="FILE", help="the Philly release's cluster_job_log (JSON array)")
    parser.add_argument("--machines", metavar="FILE",
                        help="the Philly release's cluster_machine_list (default: the generator's server table)")
    parser.add_argument("--shares", metavar="FILE",
                        help="YAML mapping VC -> share (default: each VC's part of the trace's GPU time)")
    parser.add_argument("--params", metavar="FILE",
                        help="generator parameters (default: configs/trace/philly-like.yaml)")
    parser.add_argument("--jobs", type=int, metavar="N", help="generated trace: this many jobs (default: 117325)")
    parser.add_argument("--seed", type=int, default=7, help="generated trace's seed (default: 7)")
    parser.add_argument("--policies", default=",".join(POLICY_NAMES),
                        help=f"comma-separated, from {', '.join(POLICY_NAMES)} (default: all)")
    parser.add_argument("--no-charts", action="store_true", help="skip the PNG charts (faster)")
    parser.add_argument("--replace", action="store_true",
                        help="move an earlier trace output in --out to OUT/replaced/<time>/ first")
    add_out(parser, default="trace-out", what="report folder")
    add_lang(parser)
    add_format(parser, ("text", "json"))
    return parser


def _policies(text: str) -> list[str]:
    chosen = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in POLICY_NAMES]
    if unknown or not chosen:
        raise HivedlabError(f"--policies: unknown {', '.join(unknown) or 'empty list'} "
                            f"(choose from {', '.join(POLICY_NAMES)})")
    return list(dict.fromkeys(chosen))


def run(args: argparse.Namespace) -> int:
    from hivedlab.trace.generator import default_params_text
    from hivedlab.trace.inputs import TraceRequest, check_exists, load
    from hivedlab.trace.run import assumptions, prepare_folder, replay, summary, write_output
    from hivedlab.trace.workload import TraceInputError

    policies = _policies(args.policies)
    if args.jobs is not None and args.jobs <= 0:
        raise HivedlabError("--jobs must be a positive number")
    trace = args.csv or args.philly
    request = TraceRequest(
        trace=Path(trace) if trace else None, kind="philly" if args.philly else "csv",
        machines=Path(args.machines) if args.machines else None, shares=Path(args.shares) if args.shares else None,
        params=Path(args.params) if args.params else None, jobs=args.jobs, seed=args.seed)
    out = Path(args.out)
    try:
        check_exists([request.trace, request.machines, request.shares, request.params])
        workload = load(request)
        aside = prepare_folder(out, args.replace)  # after the input is read: bad input moves nothing aside
        params_text = request.params.read_text(encoding="utf-8") if request.params else default_params_text()
    except TraceInputError as exc:
        raise HivedlabError(str(exc)) from None
    if aside is not None:
        print(f"之前的结果已移到 {aside}/ / the earlier output was moved to {aside}/", file=sys.stderr)
    _report_left_out(workload.left_out)
    result = replay(workload, policies, _progress)
    assumed = assumptions(params_text) if request.trace is None else []
    write_output(out, result, args.lang, assumed, not args.no_charts)
    if args.format == "json":
        print(json.dumps(summary(result), ensure_ascii=False, indent=1))
    else:
        _print_table(result.rows, args.lang)
        print(("报告：" if args.lang == "zh" else "report: ") + str(out / REPORT_HTML))
    return 0


def _report_left_out(left_out: Sequence[LeftOut]) -> None:
    """One line per job left out (the first 20), then how many more."""
    for item in left_out[:SHOWN]:
        print(f"剔除 / left out: {item.job}: {item.reason}", file=sys.stderr)
    if len(left_out) > SHOWN:
        print(f"剔除 / left out: {len(left_out) - SHOWN} more (the report counts every reason)", file=sys.stderr)


def _progress(policy: str) -> Progress:
    began = time.monotonic()
    last = [began]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 5 or (done == total and now - began >= 5):
            last[0] = now
            print(f"{policy}: {done}/{total} jobs done ({now - began:.0f} s)", file=sys.stderr, flush=True)

    return show


def _print_table(rows: Mapping[str, PolicyRow], lang: str) -> None:
    from hivedlab.trace.report import NAMES, minutes, percent, ratio

    print(f"{'policy':<14} {'mean wait':>10} {'p95':>9} {'util %':>7} {'Jain':>6} {'>alone':>7} {'preempt':>8}")
    for name, row in rows.items():
        anomalous = "-" if name == "private" else str(len(row.anomalous_vcs))
        label = pad(NAMES[lang][name], 14)
        print(f"{label} {minutes(row.delays.mean):>10} {minutes(row.delays.p95):>9} "
              f"{percent(row.utilization):>7} {ratio(row.jain):>6} {anomalous:>7} {row.preemptions:>8}")
