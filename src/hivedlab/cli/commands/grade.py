"""`hivedlab grade`: grade groups' run directories from their evidence (TAs), or self-check one (students)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from hivedlab.basics.errors import EXIT_FINDINGS, EXIT_OK, HivedlabError
from hivedlab.basics.files import write_atomic
from hivedlab.checker.grading.batch import grade_batch, grade_one
from hivedlab.checker.grading.labspec import LabSpec, shipped_lab
from hivedlab.checker.grading.outputs import feedback_md, results_json
from hivedlab.checker.grading.rubric import Rubric, load_rubric
from hivedlab.checker.judging.judge import Judge, judge_evidence
from hivedlab.cli.options import new_parser
from hivedlab.plans.loader import ruleset_for

DESCRIPTION = """\
Grade every group's run directory in SUBMISSIONS_DIR (one folder per group) from its evidence:
verify each evidence log (hash chain, and what a forged log gets wrong), re-judge every experiment
with the checker, compare the report's claims (claims.json) with the re-judged verdicts, and score
with a rubric. Writes grades.csv, grades.md, and per group feedback.md and Gradescope results.json.
A bad folder never stops the batch; the folders that need a look are listed at the end.

Exit status: 0 every group graded and none needs a look; 1 graded, but some group needs a look (listed at the end
and in grades.md); 2 could not grade (bad arguments, no such folder, the output cannot be written).
退出码：0 全部评分完毕且无需人工查看；1 已评分，但有小组需要人工查看；2 无法评分（参数错误、目录不存在、无法写入结果）。

按评分标准根据证据为每个小组的运行目录评分（助教用）；--self 让学生先看到助教将看到的结果（不含隐藏项）。"""

EXAMPLES = """\
  hivedlab grade submissions/ --out grades/                # default rubric (configs/rubric.default.yaml)
  hivedlab grade submissions/ --rubric my-rubric.yaml --out grades/ --jobs 2
  hivedlab grade --self out/                                # a student's self-check of a run directory
  hivedlab grade --self out/ --format json                  # as Gradescope shows it to students (no hidden items)
"""


def _cpus() -> int:
    """The CPUs this process may run on (its affinity where the system says), else the machine's."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(prog, DESCRIPTION, EXAMPLES)
    parser.add_argument("path", metavar="SUBMISSIONS_DIR",
                        help="one folder per group (or, with --self, one run directory)")
    parser.add_argument("--self", dest="self_check", action="store_true",
                        help="self-check one run directory: what a TA will see, without the hidden items")
    parser.add_argument("--rubric", metavar="FILE", help="rubric YAML (default: configs/rubric.default.yaml)")
    parser.add_argument("--out", metavar="DIR", help="output folder (default: grades/ beside SUBMISSIONS_DIR; "
                        "with --self: print to standard output)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="--self output: feedback text (default) or Gradescope JSON")
    parser.add_argument("--jobs", type=int, default=_cpus(), metavar="N",
                        help="groups graded in parallel, one worker process each (default: the number of CPUs this "
                             "process may use)")
    parser.add_argument("--max-file-mb", type=int, default=64, metavar="MB",
                        help="refuse any submitted file larger than this (default: 64)")
    return parser


def _self_check(args: argparse.Namespace, rubric: Rubric, lab: LabSpec, judge: Judge) -> int:
    run_dir = Path(args.path)
    grade = grade_one(run_dir.resolve().name, run_dir, rubric, lab, judge, args.max_file_mb * 1024 * 1024)
    visible = _visible_only(grade)  # a self-check shows and counts no hidden item, as its help says
    text = results_json(visible, rubric) if args.format == "json" else feedback_md(visible, rubric)
    if args.out:
        write_atomic(Path(args.out), text)
        print(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _visible_only(grade: Any) -> Any:
    return replace(grade, items=tuple(s for s in grade.items if not s.item.hidden),
                   penalties=tuple(p for p in grade.penalties if not p.penalty.hidden))


def run(args: argparse.Namespace) -> int:
    rubric = load_rubric(args.rubric)
    if args.jobs < 1:
        raise HivedlabError("--jobs must be at least 1")
    if args.max_file_mb < 1:
        raise HivedlabError("--max-file-mb must be at least 1")
    target = Path(args.path)
    if not target.is_dir():
        raise HivedlabError(f"{target} is not a run directory" if args.self_check
                            else f"{target} is not a folder of group folders")
    lab = shipped_lab()
    for experiment in lab.experiments:
        ruleset_for(experiment.id)  # loaded once, before the worker processes fork
    judge = judge_evidence
    if args.self_check:
        return _self_check(args, rubric, lab, judge)
    submissions = target
    out = Path(args.out) if args.out else submissions.resolve().parent / "grades"
    started = time.perf_counter()
    try:
        result = grade_batch(submissions, out, rubric, lab, judge, args.jobs, args.max_file_mb * 1024 * 1024)
    except OSError as exc:
        raise HivedlabError(f"cannot write the grades to {out}: {exc.strerror or exc}") from None
    elapsed = time.perf_counter() - started
    for grade in result.grades:
        mark = "  (needs a look)" if grade.needs_look else ""
        print(f"{grade.name}: {grade.total():g} / {grade.max_total():g}{mark}")
    print(f"graded {len(result.grades)} group(s) in {elapsed:.1f} s; wrote {out / 'grades.csv'}, {out / 'grades.md'} "
          f"and {out / 'groups'}/<group>/feedback.md, results.json")
    if result.needs_look:
        print("needs a look / 需要人工查看: " + ", ".join(result.needs_look))
        return EXIT_FINDINGS
    return EXIT_OK
