"""`hivedlab report RUN_DIR`: fill in the lab report (Markdown + HTML + claims.json) from a run directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hivedlab.checker.judging.rules.rule_base import INCONCLUSIVE
from hivedlab.checker.judging.verdicts import VERDICT_TEXT
from hivedlab.cli.options import add_lang, new_parser

EXAMPLES = """\
  hivedlab report out                    # out/report.md (+ PNG charts), out/report.html, out/claims.json
  hivedlab report out --lang en          # the same report in English
  hivedlab report out --out site/        # write the report elsewhere; it links back to the run's files
  # Write your own text (deployment problems, other observations) between the
  # <!-- hivedlab:free-text ... --> markers in report.md: running the command again keeps it.
  # 在 report.md 的 free-text 标记之间填写部署问题等内容，重新生成报告时会保留。
"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(
        prog,
        "Fill in the lab report from a run directory (what `hivedlab run` writes): the environment table, the "
        "five experiments' observations from their verdicts, a timeline chart per experiment, and claims.json "
        "for grading; a verdicts.json that is missing or older than its log (a run interrupted while judging) is "
        "judged again and written first, as `hivedlab run` writes it (what `hivedlab grade` reads). / "
        "根据运行目录填写实验报告（环境表、实验现象、时间线图）；缺失或过期的 verdicts.json 会先重新判定并写入。",
        EXAMPLES,
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the run directory (run.json, experiments/, env/ ...)")
    add_lang(parser)
    parser.add_argument("--out", metavar="DIR", default=None,
                        help="folder for report.md, report.html, claims.json and charts (default: RUN_DIR)")
    return parser


def run(args: argparse.Namespace) -> int:
    from hivedlab.checker.report.build import build_report  # matplotlib and markdown load only when a report is made
    from hivedlab.runner.pipeline import judge_again

    run_dir = Path(args.run_dir)
    out_dir = Path(args.out) if args.out else run_dir
    zh = args.lang == "zh"
    if out_dir == run_dir:  # verdicts.json as `hivedlab run` writes them (what `grade` reads), where missing or stale
        judged, failed = judge_again(run_dir)
        for log in judged:
            print(f"注意：{log} 的判定缺失或过期，已重新判定并写入 verdicts.json" if zh
                  else f"note: {log} had no verdicts.json or an older one: judged again and written", file=sys.stderr)
        for problem in failed:
            print(("注意：" if zh else "note: ") + problem, file=sys.stderr)
    result = build_report(run_dir, args.lang, out_dir)
    print(("报告：" if zh else "report: ") + f"{result.markdown_path}, {result.html_path}, {result.claims_path}")
    if result.inconclusive:
        word = VERDICT_TEXT[INCONCLUSIVE]
        label = f"{word.zh}的实验：" if zh else f"{word.en} experiments: "
        print(label + ", ".join(result.inconclusive))
    for problem in result.problems:
        print(("注意：" if zh else "note: ") + problem, file=sys.stderr)
    return 0
