"""`hivedlab watch`: record a real cluster's OpenPAI pods, events and Frameworks into an evidence log."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from hivedlab.cli.options import new_parser

DESCRIPTION = """\
Record what a real OpenPAI v1.2.0 + HiveD cluster does: the pods of OpenPAI jobs (label
type=kube-launcher-task, optionally one user's), core/v1 Events and FrameworkController Frameworks of
the namespace, raw, into a hash-chained evidence log. Lists, then watches from the list's
resourceVersion; reconnects with backoff, re-lists on 410 Gone and never records a change twice.
Run it again on the same log to resume where it stopped. Stop with Ctrl-C (or SIGTERM): the log stays intact.
记录真实集群中 OpenPAI 任务的 Pod、事件和 Framework 到证据日志；按 Ctrl-C 结束。

Connects like kubectl: --kubeconfig (default $KUBECONFIG or ~/.kube/config), --context; inside a pod,
the in-cluster service account. Judge the log with `hivedlab check LOG --experiment ID`."""

EXAMPLES = """\
  hivedlab watch --log watch.jsonl
  hivedlab watch --log watch.jsonl --user alice            # only alice's jobs
  hivedlab watch --log watch.jsonl --kubeconfig ~/.kube/pai --context pai-master --namespace default
  hivedlab check watch.jsonl --experiment gang --hived-config configs/hived/one-vc.yaml
"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(prog, DESCRIPTION, EXAMPLES)
    parser.add_argument("--log", required=True, metavar="FILE", help="evidence log to write (appended to, resumed)")
    parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: the current one)")
    parser.add_argument("--namespace", "-n", default="default", help="namespace of OpenPAI's pods (default: default)")
    parser.add_argument("--user", metavar="NAME", help="record only this OpenPAI user's pods")
    return parser


def record(args: argparse.Namespace, stop: threading.Event) -> int:
    from hivedlab.backends.watcher import Watcher, make_api_client
    from hivedlab.evidence import EvidenceWriter

    client = make_api_client(args.kubeconfig, args.context)
    with EvidenceWriter(args.log, "k8s") as writer:
        watcher = Watcher(client, args.namespace, writer, user=args.user,
                          on_warning=lambda text: print(f"hivedlab watch: warning: {text}", file=sys.stderr))
        who = f", user {args.user}" if args.user else ""
        print(f"hivedlab watch: recording namespace {args.namespace}{who} into {args.log} "
              f"(from record {writer.next_seq}); Ctrl-C to stop", file=sys.stderr, flush=True)
        watcher.run(stop)
        total = writer.next_seq
    print(f"hivedlab watch: stopped; {args.log} holds {total} records", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    stop = threading.Event()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handle(signum: int, frame: object) -> None:
        stop.set()

    for sig in previous:
        signal.signal(sig, handle)
    try:
        return record(args, stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
