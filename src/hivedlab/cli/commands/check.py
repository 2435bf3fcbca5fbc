"""`hivedlab check`: judge evidence logs against HiveD v0.3.4's behaviour (src/hivedlab/checker/judging/verdicts.py)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from hivedlab.basics.errors import (
    EXIT_FINDINGS,
    EXIT_INCONCLUSIVE,
    EXIT_TABLE,
    EXIT_USAGE,
    BilingualError,
    HivedlabError,
    verdict_exit,
)
from hivedlab.basics.files import read_text, write_atomic
from hivedlab.basics.text import Text
from hivedlab.cli.options import add_format, add_lang, add_out, new_parser
from hivedlab.rundir import EVIDENCE, EXPERIMENTS, RunDir

if TYPE_CHECKING:
    from hivedlab.checker.judging.verdicts import ExperimentVerdict

DESCRIPTION = """\
Judge an experiment's evidence log: build the timeline of every job, task and attempt, apply the
experiment plan's rules and answer the lab report's questions with observations and the records
they rest on. The log names its plan (its `plan` record); --experiment is needed only for a log
without one (e.g. from `hivedlab watch`).
判断实验证据日志是否符合 HiveD 的行为，并回答实验报告中的问题。

Verdicts: consistent / inconsistent (with what HiveD would have done) / inconclusive (what is missing).
A broken hash chain, a log holding several experiments or pods on machines outside the log's HiveD
config make every answer inconclusive. Given a run directory, it also writes each log's verdicts.json beside it
and the run's claims.json again, as `hivedlab run` does (what `hivedlab grade` reads).
判定运行目录时，同时重写每个实验的 verdicts.json 和 claims.json。

The text output says what is wrong with a log (its warnings) in --lang, and so does the error for a log it cannot
judge (unreadable, of another experiment, naming no plan or one there is not), with --format json too; --format json
and verdicts.json hold the warnings in English.
文本输出按 --lang 的语言说明日志的问题（警告）；无法判定日志时（无法读取、属于另一个实验、
没有写明或写了不存在的实验计划）的错误信息也按 --lang 的语言输出（--format json 也是如此）；
--format json 和 verdicts.json 中的警告是英文。

""" + EXIT_TABLE

EXAMPLES = """\
  hivedlab check out/experiments/gang/evidence.jsonl
  hivedlab check out/                       # every experiments/*/evidence.jsonl of a run directory, and
                                            # each member's turn, experiments/*/<user>/evidence.jsonl
  hivedlab check watch.jsonl --experiment priority --hived-config configs/hived/two-vc.yaml
  hivedlab check out/experiments/priority/evidence.jsonl --format json --out verdicts.json
  hivedlab check out/ --lang en
"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(prog, DESCRIPTION, EXAMPLES)
    parser.add_argument("logs", nargs="+", metavar="LOG", help="evidence log(s), or a run directory")
    parser.add_argument("--experiment", metavar="ID", help="the experiment plan, for a log without a plan record")
    parser.add_argument("--hived-config", metavar="FILE", help="HiveD config, for a log without a config-switch record")
    add_format(parser, ("text", "json"))
    add_lang(parser)
    add_out(parser, what="verdicts")
    return parser


def _run_logs(path: Path, order: Mapping[str, int]) -> list[Path]:
    """A run directory's logs in plan order: each experiment's, then its members' turns (`experiments/<id>/<user>/`,
    docs/evidence.md) in the inventory's order; a folder of experiment folders is read the same way."""
    root = RunDir(path).experiments_dir if RunDir(path).experiments_dir.is_dir() else path
    users = _inventory_users(path)
    logs = [*root.glob(f"*/{EVIDENCE}"), *root.glob(f"*/*/{EVIDENCE}")]

    def key(log: Path) -> tuple[int, str, int, str]:
        member = log.parent.name if log.parent.parent != root else ""
        experiment = log.parent.parent.name if member else log.parent.name
        rank = users.index(member) if member in users else len(users) if member else -1
        return order.get(experiment, 1 << 30), experiment, rank, member

    return sorted(logs, key=key)


def _inventory_users(path: Path) -> list[str]:
    """The users of the run's inventory.yaml, in order (none when it is missing or broken)."""
    from hivedlab.lab_group.inventory import recorded_inventory

    inventory = recorded_inventory(RunDir(path).inventory_path)
    return list(inventory.users) if inventory else []


def _logs(paths: list[str], order: Mapping[str, int]) -> list[Path]:
    found: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            logs = _run_logs(path, order)
            if not logs:
                raise BilingualError(Text(f"{path}：这个目录中没有 {EXPERIMENTS}/*/{EVIDENCE}",
                                          f"{path}: no {EXPERIMENTS}/*/{EVIDENCE} in this directory"))
            found += logs
        else:
            found.append(path)
    return found


def run(args: argparse.Namespace) -> int:
    try:
        return _check(args)
    except BilingualError as exc:  # a log, a plan or a folder refused: said in --lang
        raise HivedlabError(exc.said_in(args.lang), exc.exit_code) from exc


def _check(args: argparse.Namespace) -> int:
    from hivedlab.checker.judging.judge import judge_file, render_json, render_text
    from hivedlab.plans.loader import load_plan, load_plans

    config_text = None
    if args.hived_config:
        config_text = read_text(args.hived_config)
    if args.experiment:
        load_plan(args.experiment)  # an unknown id fails here, once, with a hint
    order: dict[str, int] = {}
    try:
        order = {plan.id: plan.order for plan in load_plans()}
    except HivedlabError:
        pass  # a broken plan file is reported when a log needs it

    results, judged, worst = [], [], 0
    for log in _logs(args.logs, order):
        try:
            results.append(judge_file(log, args.experiment, config_text))
            judged.append(log)  # the file judged: a verdict names its log relative to its run directory
        except HivedlabError as exc:
            if len(args.logs) == 1 and not Path(args.logs[0]).is_dir():
                raise
            print(f"hivedlab check: error: {exc.said_in(args.lang)}", file=sys.stderr)
            worst = EXIT_USAGE
    if not results:
        return worst or EXIT_USAGE
    for text in args.logs:
        if Path(text).is_dir():
            _write_run_files(Path(text), [(log, r) for r, log in zip(results, judged, strict=True)
                                          if log.is_relative_to(Path(text))])
    if args.format == "json":
        output = render_json(results)
    else:
        output = "\n".join(render_text(r, args.lang) for r in results)
    if args.out:
        write_atomic(Path(args.out), output)
    else:
        sys.stdout.write(output)
    codes = {r.exit_code for r in results}
    return worst or verdict_exit(EXIT_FINDINGS in codes, EXIT_INCONCLUSIVE in codes)


def _write_run_files(run_dir: Path, results: list[tuple[Path, ExperimentVerdict]]) -> None:
    """A run directory judged again: its verdicts.json files, and its report and claims.json when it has them (in
    the report's language), as `hivedlab run` writes them, so that `hivedlab grade` reads what was just judged."""
    from hivedlab.runner.pipeline import write_verdicts

    for log, result in results:
        write_verdicts(log, result)
    claims = RunDir(run_dir).claims
    if not claims.is_file():
        return
    from hivedlab.checker.report.build import build_report

    try:
        lang = json.loads(claims.read_text(encoding="utf-8")).get("lang")
    except (OSError, ValueError, AttributeError):
        lang = None
    build_report(run_dir, lang if lang in ("zh", "en") else "zh")
