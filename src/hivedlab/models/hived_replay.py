"""Replay a hived-diff scenario's operations through the HiveD model, one JSON-ready result per operation.

The format is the one of `tests/fixtures/hived-diff/README.md` and `tests/fixtures/hived-diff-v2/README.md`: an
init line with the nodes in reporting order, then one line per operation. A `schedule` runs in its `phase`
(Preempting when absent) with its `suggestedNodes` (every node of the current config when absent); a bind is
immediately reported back as an allocated pod. A `restart` builds a new scheduler (from its inline `config`, or
the current one), reports the nodes Ready except those currently not Ready, and re-adds every bound pod in the order
the pods were bound (docs/hived-model.md, "Restart and recovery"). A bad operation yields an `error` line and the
replay goes on.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import yaml

from hivedlab.models.hived import (
    PHASE_FILTERING,
    PHASE_PREEMPTING,
    Bind,
    BindInfo,
    ConfigError,
    HivedConfig,
    HivedScheduler,
    InternalError,
    PodRef,
    Preempt,
    UserError,
    Wait,
    load_config,
)

NAMESPACE = "default"
PHASES = (PHASE_FILTERING, PHASE_PREEMPTING)


class Replay:
    """One scheduler instance plus the pod bookkeeping a cluster would do around it."""

    def __init__(self, config: HivedConfig) -> None:
        self.config = config
        self.scheduler = HivedScheduler(config)
        self.nodes = frozenset(self.scheduler.reported_nodes)
        self.bound: dict[str, tuple[Mapping[str, Any] | None, BindInfo]] = {}  # in the order the pods were bound
        self.waiting: set[str] = set()
        self.not_ready: set[str] = set()

    def init_line(self) -> dict[str, Any]:
        return {"op": "init", "result": "ok", "nodes": list(self.scheduler.reported_nodes)}

    def step(self, i: int, op: Any) -> dict[str, Any]:
        if type(op) is not dict and not isinstance(op, Mapping):
            return {"i": i, "result": "error", "message": f"operation {i} is not a JSON object"}
        kind = op.get("op")
        out: dict[str, Any] = {"i": i, "op": kind}
        name = _HANDLERS.get(kind) if isinstance(kind, str) else None
        handler = getattr(self, name) if name else None
        if handler is None:
            out.update(result="error", message=f"unknown op {kind!r} (expected schedule, delete, node_bad, "
                                                  "node_healthy or restart)")
            return out
        try:
            out.update(handler(op, out))
        except UserError as exc:
            out.update(result="error", message=exc.message)
        except InternalError as exc:
            out.update(result="error", message=f"HiveD internal error: {exc}", internal=True)
        except _StepError as exc:
            out.update(result="error", message=str(exc))
        except (KeyError, IndexError, AttributeError, TypeError, ValueError, RecursionError) as exc:
            # a state the model does not handle: reported on the step's line, never as a traceback
            out.update(result="error", message=f"model error: {type(exc).__name__}: {exc}", internal=True)
        return out

    def _field(self, op: Mapping[str, Any], name: str, out: dict[str, Any]) -> str:
        value = op.get(name)
        if not isinstance(value, str) or not value:
            raise _StepError(f"{op.get('op')} needs a non-empty string field {name!r}")
        out[name] = value
        return value

    def _schedule(self, op: Mapping[str, Any], out: dict[str, Any]) -> dict[str, Any]:
        name = self._field(op, "pod", out)
        spec = op.get("spec")
        if name in self.bound:
            raise _StepError(f"pod {name} is already bound; delete it before scheduling it again")
        if spec is not None and type(spec) is not dict and not isinstance(spec, Mapping):
            raise _StepError("spec must be a JSON object")
        phase = op.get("phase", PHASE_PREEMPTING)
        if phase not in PHASES:
            raise _StepError(f"phase must be {PHASE_FILTERING!r} or {PHASE_PREEMPTING!r}, got {phase!r}")
        suggested = op.get("suggestedNodes")
        if suggested is None:
            suggested = self.nodes
        elif not isinstance(suggested, list) or not all(isinstance(n, str) for n in suggested):
            raise _StepError("suggestedNodes must be a list of node names")
        pod = PodRef(NAMESPACE, name, name)
        self.waiting.add(name)
        result = self.scheduler.schedule(pod, spec, suggested, phase)
        if isinstance(result, Bind):
            self.scheduler.add_allocated_pod(pod, spec, result.bind_info)
            self.waiting.discard(name)
            self.bound[name] = (spec, result.bind_info)
            return {"result": "bind", "node": result.node, "leafCellIsolation": list(result.leaf_cell_isolation)}
        if isinstance(result, Preempt):
            victims = {node: sorted(p.name for p in pods) for node, pods in result.victims.items()}
            return {"result": "preempt", "victims": victims}
        assert isinstance(result, Wait)
        return {"result": "wait", "reason": result.reason}

    def _delete(self, op: Mapping[str, Any], out: dict[str, Any]) -> dict[str, Any]:
        name = self._field(op, "pod", out)
        pod = PodRef(NAMESPACE, name, name)
        if name in self.bound:
            del self.bound[name]
            self.scheduler.delete_allocated_pod(pod)
        elif name in self.waiting:
            self.waiting.discard(name)
            self.scheduler.delete_unallocated_pod(pod)
        else:
            raise _StepError(f"pod {name} was never scheduled or is already deleted")
        return {"result": "ok"}

    def _node(self, op: Mapping[str, Any], out: dict[str, Any]) -> dict[str, Any]:
        node = self._field(op, "node", out)
        if op["op"] == "node_bad":
            self.not_ready.add(node)
            self.scheduler.set_node_bad(node)
        else:
            self.not_ready.discard(node)
            self.scheduler.set_node_healthy(node)
        return ({"result": "ok"} if node in self.nodes
                else {"result": "ok", "warning": f"node {node} is not in the config"})

    def _restart(self, op: Mapping[str, Any], out: dict[str, Any]) -> dict[str, Any]:
        """A new scheduler process: nodes reported (not-Ready ones stay bad), then every bound pod re-added."""
        text = op.get("config")
        config = self.config
        if text is not None:
            if not isinstance(text, str):
                raise _StepError("restart's config must be the HiveD config as YAML text")
            try:
                config = load_config(yaml.safe_load(text))
            except (yaml.YAMLError, ConfigError) as exc:
                raise _StepError(f"invalid HiveD config: {exc}") from None
        scheduler = HivedScheduler(config, not_ready_nodes=self.not_ready)
        for name, (spec, info) in self.bound.items():
            scheduler.add_allocated_pod(PodRef(NAMESPACE, name, name), spec, info)
        self.config, self.scheduler = config, scheduler
        self.nodes = frozenset(scheduler.reported_nodes)
        return {"result": "ok"}


_HANDLERS = {"schedule": "_schedule", "delete": "_delete", "node_bad": "_node", "node_healthy": "_node",
             "restart": "_restart"}


class _StepError(Exception):
    """A malformed operation: reported on its own line, the replay goes on."""


def replay(config: HivedConfig, ops: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """The init line, then one result per operation."""
    session = Replay(config)
    yield session.init_line()
    for i, op in enumerate(ops):
        yield session.step(i, op)
