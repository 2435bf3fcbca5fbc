"""`hivedlab run EXP|all`: run lab experiments on the simulated cluster (default) or a real one, write the run
directory, judge it and fill in the report, then print one summary line per experiment."""

from __future__ import annotations

import argparse
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hivedlab.basics.errors import (
    EXIT_INTERRUPTED,
    EXIT_TABLE,
    HivedlabError,
    caused_by_interrupt,
    verdict_exit,
)
from hivedlab.basics.text import display_width, pad
from hivedlab.checker.judging.verdicts import VERDICT_TEXT
from hivedlab.cli.options import add_inventory, add_lang, add_out, new_parser
from hivedlab.rundir import RunDir

if TYPE_CHECKING:
    from hivedlab.checker.judging.verdicts import ExperimentVerdict
    from hivedlab.runner import ExperimentRun

DESCRIPTION = (
    """\
Run the lab's experiments (labs/experiments/*.yaml) step by step on a cluster and record everything it does
into out/experiments/<id>/evidence.jsonl; then judge each experiment and write the report.
在集群上逐步运行实验，记录证据日志，判定结果并生成实验报告。

--cluster sim (default) runs on the embedded simulated OpenPAI + HiveD cluster in virtual time (seconds);
--cluster pai runs on the group's real cluster (minutes per experiment). Running again with the same --out resumes a
real run: nothing is submitted twice and each experiment's log grows (never deleted). A simulated run refuses a folder
that already holds the experiment unless --replace moves the earlier run to OUT/replaced/<time>/.
--scheduler default|kube-batch runs the simulated cluster without HiveD, for contrast (docs/other-schedulers.md);
the kubeflow-gang experiment runs under both unless --scheduler picks one. Contrast runs go to out/contrast/.
--member NAME makes it that member's turn: they submit the experiment's jobs, into out/experiments/<id>/<user>/;
"""
    "--each-member gives every member of the inventory a turn, in order "
    "(the manual's \"Alice, Bob, Carol, Dan 按顺序依次实验\").\n"
    "vc-safety has no turns: every member submits job-config-0 at once (manual step 4.2), once, whoever's turn it is.\n"
    "--member NAME 表示轮到该组员：由其提交实验任务；--each-member 让清单中的每位组员按顺序各做一遍"
    "（vc-safety 所有组员同时提交，只做一次）。\n"
    """\
--cluster k8s runs kubeflow-gang on a plain Kubernetes cluster with Kubeflow's TFJob and a gang scheduler
(docs/kubeflow-on-kubernetes.md): --manifests kube-batch|volcano picks the form, --kubeconfig/--context as kubectl.
--cluster k8s 在普通 Kubernetes 集群（Kubeflow TFJob + kube-batch 或 Volcano）上运行 kubeflow-gang 实验。
在同一 --out 目录再次运行真实集群实验会接着记录（日志只追加、不删除）；模拟运行遇到已有结果时需加 --replace。

A submission the rest-server refuses although the plan expects it accepted is said at once (the job, HTTP status,
the server's code and message, `hivedlab validate jobs/…`); that run ends `refused` and its verdict is inconclusive.
Ctrl-C prints the command that finishes the run: on the simulator it runs again (the interrupted run moved to
OUT/replaced/), on a real cluster it resumes.
"""
    + EXIT_TABLE
)

EXAMPLES = """\
  hivedlab run all                           # the whole lab on the simulated cluster, report in out/
  hivedlab run gang --seed 7 --out /tmp/lab  # one experiment, another seed
  hivedlab run reconfig --out out/reconfig    # the optional config switch while jobs run
  hivedlab run all --cluster pai --inventory configs/group.yaml
  hivedlab run all --cluster pai --inventory configs/group.yaml --out out  # again: resumes, appends to the logs
  hivedlab run all --replace                 # simulate again into out/, the earlier run moved to out/replaced/
  hivedlab run kubeflow-gang                 # gang scheduling without HiveD: default scheduler and kube-batch
  hivedlab run gang --scheduler kube-batch   # what HiveD's guarantees become under kube-batch
  hivedlab run priority --member Bob         # Bob's turn: Bob submits, into out/experiments/priority/bob/
  hivedlab run all --each-member             # every member's turn of every experiment, in inventory order
  hivedlab run kubeflow-gang --cluster k8s --context lab   # on a Kubernetes cluster: default scheduler, kube-batch
  hivedlab run kubeflow-gang --cluster k8s --manifests volcano --scheduler volcano
"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(prog, DESCRIPTION, EXAMPLES)
    parser.add_argument("experiment", metavar="EXP|all",
                        help="an experiment id (e.g. gang, or the optional reconfig), 'all' (the main experiments), "
                             "or 'smoke' (the step 3.2 smoke test)")
    parser.add_argument("--cluster", choices=("sim", "pai", "k8s"), default="sim",
                        help="where to run: simulated, OpenPAI + HiveD, or plain Kubernetes (default: sim)")
    parser.add_argument("--scheduler", choices=("hived", "default", "kube-batch", "volcano"),
                        help="the scheduler (default: each plan's own, hived for the five); "
                             "volcano: --cluster k8s only")
    parser.add_argument("--manifests", choices=("kube-batch", "volcano"),
                        help="--cluster k8s: the TFJob/PodGroup form under jobs/kubeflow/ (default: kube-batch, or "
                             "volcano with --scheduler volcano)")
    parser.add_argument("--kubeconfig", metavar="FILE", help="--cluster k8s: the kubeconfig (default: as kubectl)")
    parser.add_argument("--context", metavar="NAME", help="--cluster k8s: the kubeconfig context (default: current)")
    add_out(parser, default="out", what="run directory")
    parser.add_argument("--seed", type=int, default=1,
                        help="simulator seed: durations and gaps, taken with the inventory's group name so that "
                        "two groups never make the same run (default: 1)")
    add_inventory(parser)
    parser.add_argument("--no-report", action="store_true", help="skip the verdicts and the report")
    whose = parser.add_mutually_exclusive_group()
    whose.add_argument("--member", metavar="NAME",
                       help="whose turn: the member (a name from the inventory) who submits the jobs "
                            "(default: the first member)")
    whose.add_argument("--each-member", action="store_true",
                       help="give every member of the inventory a turn, in order (vc-safety once: all at once)")
    parser.add_argument("--replace", action="store_true",
                        help="simulator only: move an earlier simulated run in --out to OUT/replaced/<time>/ first")
    # how the student started this run, when it was not `hivedlab run` (a numbered script): what a Ctrl-C advises
    parser.add_argument("--again-as", metavar="COMMAND", help=argparse.SUPPRESS)
    add_lang(parser)
    return parser


def plans_to_run(experiment: str, cluster: str, scheduler: str | None,
                 manifests: str | None) -> tuple[list[Any], str]:
    """The runs, one per plan and scheduler, and on --cluster k8s the manifests' form (else "")."""
    if cluster == "k8s":
        from hivedlab.runner import k8s_plans

        return k8s_plans(_selected(experiment, None), scheduler, manifests)
    return [plan.for_scheduler(name) for plan in _selected(experiment, scheduler)
            for name in ((scheduler,) if scheduler else plan.schedulers)], ""


def _selected(experiment: str, scheduler: str | None) -> list[Any]:
    """The plans: `all` is the five HiveD experiments; `--scheduler` must be one a plan can run under."""
    from hivedlab.plans.loader import load_plan, main_plans

    if experiment == "all":  # the main experiments; an optional plan (e.g. reconfig) runs only by its id
        plans = main_plans()
        if not plans:
            raise HivedlabError("no experiment plans in labs/experiments/")
    else:
        plans = [load_plan(experiment)]
    for plan in plans:
        if scheduler == "hived" and "hived" not in plan.schedulers:
            raise HivedlabError(f"{plan.id} runs only without HiveD ({', '.join(plan.schedulers)}): "
                                "leave out --scheduler or pick one of those")
    return plans


def _summary(results: list[ExperimentRun], verdicts: dict[str, ExperimentVerdict], lang: str
             ) -> tuple[list[str], int]:
    """The summary's lines and the exit status (`EXIT_TABLE`); a contrast run (without HiveD) may break HiveD's
    guarantees, so its verdict does not count."""
    rows = [("实验", "判定", "回答") if lang == "zh" else ("experiment", "verdict", "answer")]
    bad = unsure = False
    for result in results:
        verdict = verdicts.get(result.run_id)
        outcome = result.outcome
        state = verdict.verdict if verdict else "—" if outcome.status == "finished" else outcome.status
        first = verdict.answers[0] if verdict and verdict.answers else None
        short = (first.summary or first.answer) if first else None  # the report's results table's short answer
        line = (short.get(lang) or short.en) if short else ""
        if outcome.status != "finished":
            reason = (outcome.reason_zh or outcome.reason) if lang == "zh" else outcome.reason
            line = f"{outcome.status}: {reason}" if reason else outcome.status
            unsure = unsure or not result.contrast  # without HiveD a job may never run: that is the contrast
        bad = bad or (state == "inconsistent" and not result.contrast)
        unsure = unsure or (state == "inconclusive" and not result.contrast)
        shown = VERDICT_TEXT[state].get(lang) if state in VERDICT_TEXT else state
        rows.append((result.run_id, shown, " ".join(line.split())))
    width = [max(display_width(r[i]) for r in rows) for i in range(2)]
    return ([f"{pad(r[0], width[0])}  {pad(r[1], width[1])}  {r[2]}".rstrip() for r in rows],
            verdict_exit(bad, unsure))


def _next_steps(out: Path, lang: str, report: bool, turns: bool = False) -> str:
    """Where a newcomer looks next."""
    where = RunDir(out)
    experiments = where.experiments_dir
    if lang == "zh":
        lines = [f"运行目录：{out}"]
        if report:
            lines.append(f"实验报告：{where.report_md}（浏览器打开 {where.report_html}）")
        lines.append(f"每个实验的证据、判定和时间线图：{experiments}/<实验>/；重新判定：hivedlab check {out}")
        if turns:
            lines.append(f"每位组员的一轮：{experiments}/<实验>/<用户名>/"
                         "（vc-safety 所有组员同时提交，只有一份）")
    else:
        lines = [f"run directory: {out}"]
        if report:
            lines.append(f"the report: {where.report_md} (or open {where.report_html} in a browser)")
        lines.append(f"each experiment's evidence, verdicts and chart: {experiments}/<id>/; "
                     f"judge again: hivedlab check {out}")
        if turns:
            lines.append(f"each member's turn: {experiments}/<id>/<user>/ "
                         "(vc-safety: one run, everyone at once)")
    return "\n".join(lines)


def _leftover_note(out: Path) -> str:
    from hivedlab.backends.pai import leftover_note

    return leftover_note(out)


def _previous_run_tag(out: Path) -> str | None:
    """A real run resumed in the same folder keeps its job names, so the backend finds what it already submitted."""
    previous = RunDir(out).read_record()
    if previous is None or previous.cluster not in ("pai", "k8s"):
        return None
    return previous.run_tag or None


def run_again(args: argparse.Namespace) -> str:
    """The command that finishes an interrupted run: the same one; on the simulator with --replace, which moves
    the interrupted run to OUT/replaced/ (never deleting it) and runs again; a real run resumes and appends."""
    words = ["hivedlab", "run", args.experiment]
    options = (("--cluster", args.cluster if args.cluster != "sim" else None), ("--scheduler", args.scheduler),
               ("--manifests", args.manifests), ("--kubeconfig", args.kubeconfig), ("--context", args.context),
               ("--out", args.out), ("--seed", str(args.seed) if args.seed != 1 else None),
               ("--inventory", args.inventory), ("--member", args.member),
               ("--lang", args.lang if args.lang != "zh" else None))
    words += [f"{flag} {shlex.quote(value)}" for flag, value in options if value]
    words += [flag for flag, on in (("--no-report", args.no_report), ("--each-member", args.each_member),
                                     ("--replace", args.cluster == "sim")) if on]
    return " ".join(words)


def interrupted_advice(args: argparse.Namespace, judging: bool) -> str:
    """The one line a Ctrl-C prints: what happened and the one command that ends in a complete run directory."""
    out = Path(args.out)
    if judging:
        experiments = RunDir(out).experiments_dir
        return (f"interrupted while judging and writing the report; the experiments had finished and their evidence "
                f"is in {experiments}: finish with `hivedlab report {out}` / 判定和写报告时被中断；实验已经完成，"
                f"证据在 {experiments}：运行 `hivedlab report {out}` 完成报告")
    command = args.again_as or run_again(args)
    if args.cluster == "sim":
        return (f"interrupted; run it again with `{command}` (the interrupted run is moved to "
                f"{RunDir(out).replaced_folder()}/) / 已中断；运行 `{command}` 重新运行（中断的结果移到 replaced/）")
    return (f"interrupted; resume with `{command}` (nothing is submitted twice) / 已中断；运行 `{command}` 接着运行")


def run(args: argparse.Namespace) -> int:
    """`_run`, with a Ctrl-C at any instant turned into the one line that says how to finish."""
    judging = [False]
    try:
        return _run(args, judging)
    except HivedlabError:
        raise
    except BaseException as exc:
        if not caused_by_interrupt(exc):
            raise
        raise HivedlabError(interrupted_advice(args, judging[0]), EXIT_INTERRUPTED) from None


def _run(args: argparse.Namespace, judging: list[bool]) -> int:
    from hivedlab.lab_group.inventory import find_member, load_group
    from hivedlab.lab_group.rules import NEEDS_HOSTNAME
    from hivedlab.runner import RunContext, plan_turns, run_experiments, run_pipeline
    from hivedlab.runner.backends import Opening, backend_factory

    if args.scheduler and args.cluster == "pai":
        raise HivedlabError("--scheduler applies to the simulated cluster and --cluster k8s: on OpenPAI, HiveD "
                            "decides (docs/other-schedulers.md)")
    if args.scheduler == "volcano" and args.cluster != "k8s":
        raise HivedlabError("--scheduler volcano runs on --cluster k8s only: the simulator models kube-batch")
    if args.cluster != "k8s" and (args.manifests or args.kubeconfig or args.context):
        raise HivedlabError("--manifests, --kubeconfig and --context are for --cluster k8s")
    plans, form = plans_to_run(args.experiment, args.cluster, args.scheduler, args.manifests)
    inventory = load_group(args.inventory, frozenset({NEEDS_HOSTNAME}))
    out = Path(args.out)
    if args.replace and args.cluster != "sim":
        raise HivedlabError("--replace is for simulated runs: a real run in the same --out resumes and appends")
    member = find_member(inventory, args.member).user if args.member else ""
    members = inventory.users if args.each_member else (member,)
    if args.cluster == "sim":
        make = backend_factory("sim", Opening(inventory, seed=args.seed))
        ctx = RunContext(out, "sim", args.seed, inventory, f"s{args.seed}", replace=args.replace, member=member)
    else:
        tag = _previous_run_tag(out) or datetime.now(timezone.utc).strftime("%Y%m%dt%H%M%S")
        make = backend_factory(args.cluster, Opening(inventory, turns=plan_turns(plans, members), form=form,
                                                     run_tag=tag, kubeconfig=args.kubeconfig, context=args.context))
        ctx = RunContext(out, args.cluster, None, inventory, tag, member=member)

    def progress(experiment: str) -> None:
        if args.cluster != "sim":
            print(f"running {experiment} …", file=sys.stderr, flush=True)

    if not args.no_report:
        import hivedlab.checker.report.build  # noqa: F401  # loaded before the run: a Ctrl-C in a library's import is
        #                                       the one an interrupt handler cannot always tell (`caused_by_interrupt`)
    try:
        results = run_experiments(plans, make, ctx, progress, members,
                                  notice=lambda line: print(line, file=sys.stderr, flush=True))
    except HivedlabError as exc:
        note = _leftover_note(out) if args.cluster == "pai" else ""
        if note:
            raise HivedlabError(f"{exc}; {note}", exc.exit_code) from None
        raise
    failed = [r for r in results if r.outcome.status != "finished"]
    if failed and args.cluster == "pai":
        for result in failed:
            ended = result.outcome
            print(f"hivedlab run: {result.experiment} {ended.status}: {ended.reason}", file=sys.stderr)
        note = _leftover_note(out)
        if note:
            print(f"hivedlab run: {note}", file=sys.stderr)
    verdicts: dict[str, ExperimentVerdict] = {}
    if not args.no_report:
        judging[0] = True
        pipeline = run_pipeline(out, results, args.lang)
        verdicts = pipeline.verdicts
        for name, note in pipeline.notes.items():
            if note.startswith(("failed", "skipped")):
                print(f"hivedlab run: {name}: {note}", file=sys.stderr)
    lines, code = _summary(results, verdicts, args.lang)
    print("\n".join(lines))
    print(_next_steps(out, args.lang, report=not args.no_report, turns=bool(member) or args.each_member))
    return code
