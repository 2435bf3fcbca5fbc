"""`hivedlab validate`: job protocols, HiveD configs and group inventories, for students and course CI."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import write_atomic
from hivedlab.cli.options import add_format, new_parser

DESCRIPTION = """\
Validate job protocols, HiveD configs (bare, or inside services-configuration.yaml under
hivedscheduler.config) and group inventories with the verdicts of OpenPAI v1.2.0's rest-server and
HiveD v0.3.4. A folder is walked (*.yaml, *.yml; templates/ skipped); a file's kind is told by its
content. Files under a rejected/ folder are meant to be refused: their errors are expected.
Kubeflow TFJob + PodGroup manifests (jobs/kubeflow/<form>/) are checked too: each kind's schema,
schedulerName, group-name annotations, minMember against the replicas, GPU limits (docs/kubeflow-on-kubernetes.md).

校验作业配置、HiveD 配置（单独的文件，或 services-configuration.yaml 中的 hivedscheduler.config）
和小组清单，判定与 OpenPAI v1.2.0 rest-server 和 HiveD v0.3.4 一致；也校验 Kubeflow 的 TFJob 和 PodGroup 清单。

Jobs are checked against --hived-config (repeatable), by default against every shipped
configs/hived/*.yaml that defines the job's VC: a job passes if one of them accepts it.

exit status: 0 no errors (warnings are printed), 1 errors (or warnings with --strict),
             2 usage error or unreadable input
"""

EXAMPLES = """\
  hivedlab validate jobs configs                       # what course CI runs
  hivedlab validate jobs/job-config-6.yaml --hived-config configs/hived/one-vc.yaml
  hivedlab validate services-configuration.yaml        # the hivedscheduler section
  hivedlab validate --format github jobs configs       # annotations in a GitHub Actions log
  hivedlab validate --format sarif --out validate.sarif jobs configs
  hivedlab validate jobs/kubeflow/kube-batch           # TFJob + PodGroup manifests
  hivedlab validate group.yaml configs/hived/two-vc.yaml   # the config's nodes against the group's workers
"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(prog, DESCRIPTION, EXAMPLES)
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to validate")
    parser.add_argument("--hived-config", action="append", metavar="FILE", default=None,
                        help="HiveD config (or services-configuration.yaml) to check jobs against; repeatable")
    parser.add_argument("--strict", action="store_true", help="warnings fail too (exit status 1)")
    parser.add_argument("--pre-commit", action="store_true",
                        help="treat named files as if found in a folder walk: skip YAML of no known kind, expect "
                        "files under rejected/ to be refused (pre-commit names every changed file)")
    parser.add_argument("--inventory", metavar="FILE",
                        help="check the HiveD configs' node addresses against this group inventory's workers (also "
                             "done with an inventory among the PATHs; never ./group.yaml unless named)")
    parser.add_argument("--user", default="admin", help="OpenPAI user name used in group names (default: admin)")
    add_format(parser, ("text", "json", "junit", "github", "sarif"))
    parser.add_argument("--out", metavar="PATH", default=None, help="write the report here (default: standard output)")
    return parser


def run(args: argparse.Namespace) -> int:
    from hivedlab.checker.validate import InputError, render, validate_paths

    try:
        report = validate_paths(args.paths, hived_configs=args.hived_config, strict=args.strict, user=args.user,
                                as_walk=args.pre_commit, inventory=args.inventory)
    except (InputError, OSError) as exc:
        raise HivedlabError(str(exc)) from None
    text = render(report, args.format)
    if args.out:
        write_atomic(Path(args.out), text)
        print(render(report, "text").splitlines()[-1])
    else:
        sys.stdout.write(text)
    if report.unreadable:
        first = next((f for f in report.findings if f.rule == "input-unreadable"), None)
        print(f"hivedlab validate: error: {first.message if first else 'unreadable input'}", file=sys.stderr)
    return report.exit_code(args.strict)
