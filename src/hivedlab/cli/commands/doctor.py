"""`hivedlab doctor`: the post-deploy check — is the cluster what the group's inventory and HiveD config say?
The checks themselves are the cluster layer's (`hivedlab.backends.pai.deployment`); this command finds the
addresses and the tokens, runs them and prints the findings.
Exit status: 0 no errors (warnings allowed), 1 a check failed, 2 unusable input.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from hivedlab.backends.pai.addresses import hived_address, pai_address
from hivedlab.backends.pai.deployment import check_deployment
from hivedlab.backends.pai.rest import TOKEN_FILE_ENV
from hivedlab.backends.pai.tokens import load_tokens
from hivedlab.backends.pai.users import AccountsFiles
from hivedlab.basics.errors import EXIT_FINDINGS
from hivedlab.cli.commands.accounts import ADMIN_TOKEN_FILE_ENV
from hivedlab.cli.options import add_format, add_inventory, add_lang, new_parser
from hivedlab.lab_group.inventory import load_group
from hivedlab.lab_group.layouts import CONFIG_NAMES
from hivedlab.lab_group.rules import NEEDS_HOSTNAME, NEEDS_IP

EXAMPLES = """\
  hivedlab doctor --inventory group.yaml                   # after deploying (step 2) and creating accounts (3.1)
  hivedlab doctor --inventory group.yaml --config two-vc   # before experiments 4.2-4.4
  HIVEDLAB_PAI_TOKEN_FILE=~/.pai-tokens KUBECONFIG=~/pai-deploy/kube/config hivedlab doctor --format json
"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(
        prog,
        "Check a deployed cluster against the group's inventory: nodes, rest-server, portal, HiveD's VCs and cells, "
        "the members' tokens, unfinished jobs. / "
        "部署后检查：节点、rest-server、门户、HiveD 的 VC 和 cell、组员 token、未结束的任务。",
        EXAMPLES,
    )
    add_inventory(parser)
    parser.add_argument("--config", choices=CONFIG_NAMES,
                        help="the HiveD config that should be in force (default: the one HiveD's VCs match)")
    parser.add_argument("--pai-url", metavar="URL", help="the OpenPAI master (default: HIVEDLAB_PAI_URL, else "
                                                          "http://<the inventory's master ip>)")
    parser.add_argument("--hived-url", metavar="URL", help="HiveD's web service (default: HIVEDLAB_HIVED_URL, else "
                                                            "http://<master ip>:30096)")
    parser.add_argument("--token-file", metavar="FILE",
                        help="the members' token file (default: HIVEDLAB_PAI_TOKEN_FILE)")
    parser.add_argument("--kubeconfig", metavar="FILE", help="default: KUBECONFIG, else ~/pai-deploy/kube/config")
    parser.add_argument("--env", metavar="DIR", help="the members' environment records (hivedlab env): compare clocks")
    add_format(parser, ("text", "json"))
    add_lang(parser)
    return parser


def accounts_files(inventory: str | None, pai_url: str, token_file: str | None) -> AccountsFiles:
    """What the fixes' `hivedlab accounts` command names: this inventory, the admin's token file (the environment's,
    else that of the rehearsal cluster this machine runs, when `pai_url` is its rest-server) and the token file."""
    from hivedlab.rehearsal.stack import admin_token_file_for

    admin = os.environ.get(ADMIN_TOKEN_FILE_ENV) or admin_token_file_for(pai_url)
    return AccountsFiles(inventory, admin, token_file or os.environ.get(TOKEN_FILE_ENV))




def run(args: argparse.Namespace) -> int:
    inventory = load_group(args.inventory, frozenset({NEEDS_HOSTNAME, NEEDS_IP}))
    url = pai_address(inventory, args.pai_url, os.environ, "--pai-url")
    hived = hived_address(inventory, args.hived_url, os.environ, "--hived-url")
    tokens = load_tokens(token_file=args.token_file).tokens
    findings = check_deployment(url, hived, inventory, tokens, kubeconfig=args.kubeconfig, config=args.config,
                                env_folder=Path(args.env) if args.env else None,
                                accounts=accounts_files(args.inventory, url, args.token_file))
    errors = [f for f in findings if f.status == "error"]
    if args.format == "json":
        print(json.dumps({"ok": not errors, "findings": [f.as_dict() for f in findings]}, ensure_ascii=False,
                         indent=2))
    else:
        marks = {"ok": "OK  ", "skipped": "SKIP", "warning": "WARN", "error": "FAIL"}
        for f in findings:
            print(f"[{marks[f.status]}] {f.check:<11} {f.message.get(args.lang)}")
            if f.fix and f.status not in ("ok", "skipped"):
                print(f"       -> {f.fix.get(args.lang)}")
        failed = len(errors)
        print(("结果：" + ("全部通过" if not failed else f"{failed} 项未通过")) if args.lang == "zh" else
              ("result: " + ("all checks passed" if not failed else f"{failed} check(s) failed")))
    return EXIT_FINDINGS if errors else 0
