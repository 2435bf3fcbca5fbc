"""`hivedlab sim replay CONFIG OPS.json`: drive the HiveD model one operation at a time, JSON Lines out."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import YAML_LOADER, read_text
from hivedlab.cli.options import new_parser

DESCRIPTION = """\
Drive the simulated HiveD v0.3.4 scheduler directly.

  replay   build the scheduler from a HiveD config, replay a list of operations (schedule, delete,
           node_bad, node_healthy, restart) and print one JSON line per operation, in the format of
           tests/fixtures/hived-diff/README.md and hived-diff-v2/README.md. A schedule runs in its
           phase (Preempting by default) with its suggestedNodes (every node by default); a bind is
           reported back to the scheduler at once.

直接驱动模拟的 HiveD v0.3.4 调度器：replay 按顺序回放操作，每个操作输出一行 JSON。"""

EXAMPLES = """\
  hivedlab sim replay configs/hived/two-vc.yaml ops.json
  hivedlab sim replay tests/fixtures/hived-perf/config.yaml tests/fixtures/hived-perf/ops.json > out.jsonl

  ops.json is a JSON array, e.g.
    [{"op": "schedule", "pod": "j1-0", "spec": {"virtualCluster": "default", "priority": 10,
      "leafCellType": "GPU-C", "leafCellNumber": 1}},
     {"op": "node_bad", "node": "hostname-dan"},
     {"op": "delete", "pod": "j1-0"}]
"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(prog, DESCRIPTION, EXAMPLES)
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    replay = sub.add_parser(
        "replay",
        help="replay operations through the HiveD model, one JSON line per operation",
        description="Replay operations through the HiveD model and print one JSON line per operation.",
        epilog="examples:\n" + EXAMPLES.rstrip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    replay.add_argument("config", metavar="CONFIG", help="HiveD config file (YAML)")
    replay.add_argument("ops", metavar="OPS.json", help="JSON array of operations ('-' for standard input)")
    return parser


def _load_config(path: str) -> Any:
    import yaml

    from hivedlab.models.hived import ConfigError, load_config

    text = read_text(path, f"HiveD config {path}")
    try:
        data = yaml.load(text, Loader=YAML_LOADER)  # a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise HivedlabError(f"invalid HiveD config {path}: Failed to unmarshal YAML{where}: {problem}") from None
    try:
        return load_config(data)
    except ConfigError as exc:
        raise HivedlabError(f"invalid HiveD config {path}: {exc}") from None


def _load_ops(path: str) -> list[Any]:
    text = read_text(path, f"operations file {path}")
    try:
        ops = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HivedlabError(f"invalid operations file {path}: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(ops, list):
        raise HivedlabError(f"invalid operations file {path}: expected a JSON array of operations")
    return ops


def run(args: argparse.Namespace) -> int:
    from hivedlab.models.hived import InternalError
    from hivedlab.models.hived_replay import Replay

    config = _load_config(args.config)
    ops = _load_ops(args.ops)
    try:
        session = Replay(config)
    except InternalError as exc:
        raise HivedlabError(f"HiveD v0.3.4 crashes at start-up with this config: {exc}") from None
    out = sys.stdout
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    out.write(dumps(session.init_line()) + "\n")
    out.flush()
    for i, op in enumerate(ops):
        out.write(dumps(session.step(i, op)) + "\n")
        out.flush()
    return 0
