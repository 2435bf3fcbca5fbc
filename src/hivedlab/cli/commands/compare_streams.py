"""`hivedlab compare-streams`: the same plan's streams side by side, e.g. the simulator's against the rehearsal
cluster's (docs/simulator-vs-rehearsal.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hivedlab.basics.errors import EXIT_FINDINGS, EXIT_OK
from hivedlab.cli.options import add_format, new_parser

DESCRIPTION = """\
Compare two runs of the same plans, stream by stream: per job and task the placements (node, GPUs), the pod phases,
the Framework (or TFJob) and REST states, the events (reasons and messages; for a TFJob also those on it and on its
PodGroup, with their counts), FailedScheduling counts, preemptions and exit codes. Names are normalized (run tags,
uids, times and a Kubeflow run's namespace removed) and timing is compared only as order. Each difference is one
line; those the documented table explains (docs/simulator-vs-rehearsal.md) say which entry.
比较同一实验计划的两次运行（例如模拟器与演练集群）：逐个任务比较放置、Pod 阶段、Framework（或 TFJob）与 REST
状态、事件（TFJob 还有其自身及其 PodGroup 上的事件与次数）、FailedScheduling 次数、抢占和退出码；名称已归一化，
时间只比较先后顺序。每处差异一行，已记录的差异注明其条目。

RUN_A and RUN_B are run directories or evidence logs. A run directory's experiments (experiments/<id>/) and
contrast runs (contrast/<id>@<scheduler>/, e.g. kubeflow-gang@default) are compared one by one.
运行目录中的实验（experiments/<id>/）与对比运行（contrast/<id>@<scheduler>/）逐个比较。
Exit status: 0 no difference beyond the documented ones; 1 an undocumented difference (or an experiment only one
run holds); 2 unreadable input or bad arguments."""

EXAMPLES = """\
  hivedlab compare-streams out-sim/ out-rehearsal/
  hivedlab compare-streams out-sim/ out-rehearsal/ --experiment priority
  hivedlab compare-streams out-sim/ out-k8s/ --experiment kubeflow-gang@kube-batch
  hivedlab compare-streams sim/experiments/gang/evidence.jsonl pai/experiments/gang/evidence.jsonl --format json
"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(prog, DESCRIPTION, EXAMPLES)
    parser.add_argument("run_a", metavar="RUN_A", help="a run directory or an evidence log")
    parser.add_argument("run_b", metavar="RUN_B", help="a run directory or an evidence log")
    parser.add_argument("--experiment", metavar="ID",
                        help="compare only this experiment, or this contrast run (<id>@<scheduler>)")
    add_format(parser, ("text", "json"))
    return parser


def run(args: argparse.Namespace) -> int:
    from hivedlab.checker.streams import compare_runs, render_json, render_text

    comparisons = compare_runs(Path(args.run_a), Path(args.run_b), args.experiment)
    if args.format == "json":
        print(json.dumps(render_json(comparisons), ensure_ascii=False, indent=2))
    else:
        print(render_text(comparisons), end="")
    return EXIT_FINDINGS if any(c.undocumented for c in comparisons) else EXIT_OK
