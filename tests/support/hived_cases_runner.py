"""Runs one recorded HiveD flow (`hived-cases.yaml`) against the HiveD model's API and compares every step.

Each op of the file's `conventions` maps onto the model's API (`hivedlab.models.hived`):
schedule -> `HivedScheduler.schedule` (+ `add_allocated_pod` on a bind when `bindOnSuccess`), deletes ->
`delete_allocated_pod` / `delete_unallocated_pod`, node events -> `set_node_bad` / `set_node_healthy`,
restart -> a new `HivedScheduler` plus `add_allocated_pod` of every bound pod from its bind info
(docs/hived-model.md#restart-and-recovery), inspect / assert -> the inspect views
(docs/hived-config-and-cells.md#inspect-api). A unit step is held to both the Go test's `expect` and the replay's
`observed`; an observed step to `observed`. Outcomes the file marks random are checked for validity.
The first step that differs stops the flow with a message naming the case, the step, and both sides.

Size: over 400 lines because it is one runner, an op per method, whose ops all share one flow's state (the scheduler,
the bound pods, the remembered placements); the views it compares live in `hived_cases_views`.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tests.support.hived_annotations import bind_info_from_dict
from tests.support.hived_cases_data import RANDOM_STEP_KEY, Case, CasesFile, Step, group_of
from tests.support.hived_cases_views import (
    FREE_PRIORITY,
    bind_info_leaf_count,
    cell_label,
    cell_users,
    find_cell,
    group_summary,
    groups_by_name,
    lazy_summary,
    node_leaf_types,
    normalized_bind_info,
    observed_group_summary,
    physical_leaves,
    plain,
    vc_cell_summary,
    victim_names,
)


class FlowMismatch(AssertionError):
    """The model's behaviour differs from HiveD's recorded behaviour at one step."""


@dataclass(frozen=True)
class BoundPod:
    pod: Any  # PodRef
    spec: Mapping[str, Any]
    bind_info: Any  # BindInfo
    group: str


def same(what: str, expected: Any, actual: Any, sides: tuple[str, str] = ("HiveD", "model")) -> None:
    if expected != actual:
        raise FlowMismatch(f"{what}: {sides[0]} {expected!r}, {sides[1]} {actual!r}")


class FlowRunner:
    def __init__(self, data: CasesFile, case: Case, api: ModuleType, codec: ModuleType | None = None) -> None:
        """`api` is `hivedlab.models.hived`; `codec` is `hivedlab.models.hived_bind_info` (annotation
        text: specYaml steps, and the bind info a restart recovers from)."""
        self.data = data
        self.case = case
        self.api = api
        self.codec = codec
        self.bound: dict[str, BoundPod] = {}
        self.remembered: dict[str, dict[str, list[int]]] = {}
        self.random_binds: list[tuple[str, str]] = []  # (HiveD's node, model's node) of nondeterministic binds
        self.sched = self._start(case.config)

    def _start(self, config_name: str) -> Any:
        config = self.api.load_config(copy.deepcopy(dict(self.data.configs[config_name])))
        return self.api.HivedScheduler(config)

    def run(self) -> None:
        for step in self.case.steps:
            try:
                getattr(self, f"_op_{step.op}")(step)
                if step.op not in ("schedule", "assert", "inspect", "remember_placement"):
                    same("result", step.observed.get("result"), "ok")  # the call returned without an error
            except FlowMismatch as exc:
                raise FlowMismatch(f"{self.case.id} {step.label}: {exc}") from None
            except Exception as exc:  # a crash of the model is a finding about that step, not a harness error
                raise FlowMismatch(f"{self.case.id} {step.label}: failed with {type(exc).__name__}: {exc}") from exc
        if self.case.nondeterministic:
            self._check_random_invariant()

    # -- schedule -------------------------------------------------------------------------------------------

    def _op_schedule(self, step: Step) -> None:
        pod = self.api.PodRef(step.namespace, step.pod_name, step.pod_name)
        spec, outcome = self._spec_of(step)
        if outcome is None:
            suggested = step.suggested.resolve(list(self.sched.reported_nodes))
            try:
                outcome = self.sched.schedule(pod, spec, suggested, step.phase)
            except self.api.UserError as err:
                outcome = err
        if step.expect is not None:
            self._check_expect(step.expect, outcome)
        if isinstance(outcome, self.api.Bind) and step.bind_on_success:
            self.sched.add_allocated_pod(pod, spec, outcome.bind_info)
            self.bound[step.pod_name] = BoundPod(pod, spec, outcome.bind_info,
                                                 group_of(spec, step.namespace, step.pod_name))
        if self.case.nondeterministic:
            self._check_random_bind(step, spec, outcome)
        else:
            self._check_observed(step.observed, outcome)
        self._check_group_after(step.observed)

    def _spec_of(self, step: Step) -> tuple[Any, Any]:
        """The spec mapping to schedule with, or (None, UserError) when the annotation text itself is rejected."""
        if step.spec_yaml is None:  # a copy: the loaded file is shared by every flow
            return plain(step.spec), None
        if self.codec is None:
            raise FlowMismatch("no annotation codec to parse specYaml")
        try:
            return self.codec.spec_from_annotation(step.spec_yaml), None
        except self.api.UserError as err:
            return None, err

    def _kind(self, outcome: Any) -> str:
        for kind, cls in (("bind", "Bind"), ("preempt", "Preempt"), ("wait", "Wait"), ("error", "UserError")):
            if isinstance(outcome, getattr(self.api, cls)):
                return kind
        raise FlowMismatch(f"schedule returned {outcome!r}, not Bind/Preempt/Wait")

    def _describe(self, outcome: Any) -> str:
        kind = self._kind(outcome)
        detail = {
            "bind": lambda: f"{outcome.node} {list(outcome.leaf_cell_isolation)}",
            "preempt": lambda: f"{victim_names(outcome.victims)}",
            "wait": lambda: repr(outcome.reason),
            "error": lambda: repr(outcome.message),
        }[kind]()
        return f"{kind} {detail}"

    def _check_expect(self, expect: Mapping[str, Any], outcome: Any) -> None:
        """What HiveD's Go test asserts (conventions.expectKinds)."""
        kind, wanted = self._kind(outcome), expect["result"]
        if wanted == "error" and kind != "error":
            raise FlowMismatch(f"HiveD's test expects a user error, model: {self._describe(outcome)}")
        if wanted == "error":
            same("HiveD's test: HTTP code", expect.get("code"), 400)
        if wanted in ("bind", "bind_any") and kind != "bind":
            raise FlowMismatch(f"HiveD's test expects a bind, model: {self._describe(outcome)}")
        if wanted == "bind":
            same("HiveD's test: bind node", expect["node"], outcome.node)
            same("HiveD's test: leafCellIsolation", list(expect["leafCellIsolation"]),
                 list(outcome.leaf_cell_isolation))
        if wanted not in ("error", "bind", "bind_any", "not_bind"):
            raise FlowMismatch(f"unknown expect result {wanted!r}")
        if wanted == "not_bind":
            if kind == "bind":
                raise FlowMismatch(f"HiveD's test expects no bind, model: {self._describe(outcome)}")
            allowed = set(expect.get("victimsSubsetOf") or ())
            if allowed and kind == "preempt":
                reported = {name for names in victim_names(outcome.victims).values() for name in names}
                if not reported <= allowed:
                    raise FlowMismatch(f"HiveD's test allows victims {sorted(allowed)}, model {sorted(reported)}")

    def _check_observed(self, observed: Mapping[str, Any], outcome: Any) -> None:
        """What HiveD's algorithm returned in the replay (conventions.results)."""
        kind = self._kind(outcome)
        if kind != observed["result"]:
            raise FlowMismatch(f"result: HiveD {self._observed_text(observed)}, model {self._describe(outcome)}")
        if kind == "bind":
            same("bind node", observed["node"], outcome.node)
            same("leafCellIsolation", list(observed["leafCellIsolation"]), list(outcome.leaf_cell_isolation))
            same("bind info", normalized_bind_info(observed), normalized_bind_info(outcome.bind_info.to_dict()))
        elif kind == "wait":
            same("wait reason", observed.get("reason"), outcome.reason)
        elif kind == "error":
            same("user error message", observed.get("message"), outcome.message)
            # docs/hived-config-and-cells.md#spec-validation: every user error is a 400
            same("HTTP code", observed.get("code"), 400)
        else:
            self._check_victims(observed, victim_names(outcome.victims))

    @staticmethod
    def _check_victims(observed: Mapping[str, Any], victims: dict[str, list[str]]) -> None:
        if observed.get("victims") is not None:
            same("victims", {node: sorted(pods) for node, pods in observed["victims"].items()}, victims)
        if RANDOM_STEP_KEY in observed:
            # conventions.nondeterministicSpots: HiveD reports ONE random node's victims; valid = it is one of ours.
            reported = sorted(observed[RANDOM_STEP_KEY])
            if reported not in victims.values():
                raise FlowMismatch(f"HiveD reported victims {reported} of one node; none of the model's nodes has "
                                   f"exactly these: {victims}")

    @staticmethod
    def _observed_text(observed: Mapping[str, Any]) -> str:
        detail = {"bind": lambda: f"{observed.get('node')} {observed.get('leafCellIsolation')}",
                  "preempt": lambda: f"{observed.get('victims') or observed.get(RANDOM_STEP_KEY)}",
                  "wait": lambda: repr(observed.get("reason")),
                  "error": lambda: repr(observed.get("message"))}[observed["result"]]()
        return f"{observed['result']} {detail}"

    def _check_random_bind(self, step: Step, spec: Mapping[str, Any] | None, outcome: Any) -> None:
        """A step of a case marked nondeterministic: same kind of result, a legal placement (the right number of
        leaf cells, none of them held by another bound pod); the case-level invariant is checked at the end."""
        kind = self._kind(outcome)
        if kind != step.observed["result"]:
            raise FlowMismatch(f"result: HiveD {self._observed_text(step.observed)}, model {self._describe(outcome)}")
        if kind != "bind":
            return
        leaves = list(outcome.leaf_cell_isolation)
        same("number of leaf cells", int((spec or {}).get("leafCellNumber", 0)), len(leaves))
        same("distinct leaf cells", len(leaves), len(set(leaves)))
        held = {
            (bound.bind_info.node, index)
            for name, bound in self.bound.items()
            if name != step.pod
            for index in bound.bind_info.leaf_cell_isolation
        }
        clash = sorted(index for index in leaves if (outcome.node, index) in held)
        if clash:
            raise FlowMismatch(f"leaf cells {clash} on {outcome.node} are already held by another bound pod")
        self.random_binds.append((str(step.observed["node"]), str(outcome.node)))

    def _check_random_invariant(self) -> None:
        """conventions.nondeterministicSpots: the leaf types used (e.g. 4 K80 + 2 M60) match HiveD's, not the nodes."""
        types = node_leaf_types(self.sched.cluster_status()["physicalCluster"])
        hived = Counter(types.get(node, f"<unknown node {node}>") for node, _ in self.random_binds)
        model = Counter(types.get(node, f"<unknown node {node}>") for _, node in self.random_binds)
        if hived != model:
            raise FlowMismatch(f"{self.case.id}: leaf types of the binds: HiveD {dict(hived)}, model {dict(model)}")

    def _check_group_after(self, observed: Mapping[str, Any]) -> None:
        """The group's state after the call, in the listing and in the one-group view
        (docs/hived-config-and-cells.md#inspect-api)."""
        after = observed.get("groupAfter")
        if after is None:
            return
        name = after["name"]
        group = self._groups().get(name)
        same(f"state of group {name} after the call", after["state"], group["status"]["state"] if group else "None")
        if group is not None:
            same(f"group {name}", group, self.sched.affinity_group(name), ("affinity_groups()", "affinity_group()"))
            return
        try:
            single = self.sched.affinity_group(name)
        except self.api.UserError as err:
            same(f"affinity_group({name!r}) error", f"Affinity group {name} does not exist since it is not allocated "
                 "or preempting", err.message)
        else:
            raise FlowMismatch(f"affinity_group({name!r}) of a group not in the listing returned {single!r:.200}")

    def _groups(self) -> dict[str, Mapping[str, Any]]:
        return groups_by_name(self.sched.affinity_groups())

    # -- deletes and node events ----------------------------------------------------------------------------

    def _op_delete_allocated(self, step: Step) -> None:
        same("deleted pod was", step.observed.get("deleted"), "allocated")
        self.sched.delete_allocated_pod(self.api.PodRef(step.namespace, step.pod_name, step.pod_name))
        self.bound.pop(step.pod_name, None)

    def _op_delete_unallocated(self, step: Step) -> None:
        same("deleted pod was", step.observed.get("deleted"), "unallocated")
        self.sched.delete_unallocated_pod(self.api.PodRef(step.namespace, step.pod_name, step.pod_name))

    def _op_delete(self, step: Step) -> None:
        """observedCases: a bound pod is deleted as allocated, any other as unallocated."""
        getattr(self, "_op_delete_allocated" if step.pod in self.bound else "_op_delete_unallocated")(step)
        self._check_group_after(step.observed)

    def _op_set_bad_node(self, step: Step) -> None:
        self.sched.set_node_bad(step.raw["node"])

    def _op_set_healthy_node(self, step: Step) -> None:
        self.sched.set_node_healthy(step.raw["node"])

    _op_node_bad = _op_set_bad_node
    _op_node_healthy = _op_set_healthy_node

    # -- restart (docs/hived-model.md#restart-and-recovery) ------------------------------------------------------------

    def _op_restart(self, step: Step) -> None:
        self.sched = self._start(step.raw["config"])
        errors: list[str] = []
        for name, bound in self.bound.items():
            info = self._recovered_bind_info(bound.bind_info)
            try:
                self.sched.add_allocated_pod(bound.pod, bound.spec, info)
            except Exception as exc:  # the file records re-add errors as data
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
        if "readdErrors" in step.observed or errors:
            same("errors re-adding bound pods", step.observed.get("readdErrors"), errors or None)
        expected: Mapping[str, Mapping[str, Any]] = step.observed.get("groups") or {}
        groups = self._groups()
        same("groups after the restart", sorted(expected), sorted(groups))
        for name, wanted in expected.items():
            summary = self._restart_summary(name, groups[name])
            actual = {key: summary.get(key) for key in wanted}
            if "hasVirtualPlacement" in wanted:  # the replay's richer form records missingCells only when > 0
                actual["missingCells"] = summary["missingCells"]
                wanted = {**wanted, "missingCells": wanted.get("missingCells", 0)}
            same(f"group {name} after the restart", dict(wanted), actual)

    def _recovered_bind_info(self, info: Any) -> Any:
        """What HiveD reads back on restart: the pod-bind-info annotation (docs/hived-model.md#restart-and-recovery)."""
        if self.codec is None:
            return bind_info_from_dict(info.to_dict())
        return self.codec.load_bind_info(self.codec.dump_bind_info(info))

    def _restart_summary(self, name: str, group: Mapping[str, Any]) -> dict[str, Any]:
        summary = group_summary(group)
        infos = [bound.bind_info.to_dict() for bound in self.bound.values() if bound.group == name]
        placed = sum(len(indices) for indices in summary["physicalPlacement"].values())
        summary["missingCells"] = (bind_info_leaf_count(infos[0]) if infos else placed) - placed
        return summary

    # -- inspect --------------------------------------------------------------------------------------------

    def _op_inspect(self, step: Step) -> None:
        what = step.raw["what"]
        if what == "groups":
            expected = {name: observed_group_summary(g) for name, g in (step.observed.get("groups") or {}).items()}
            actual = {name: group_summary(g) for name, g in self._groups().items()}
            same("affinity groups", expected, actual)
        elif what == "virtualcluster":
            cells = self.sched.vc_status(step.raw["name"])
            listed = self.sched.cluster_status()["virtualClusters"][step.raw["name"]]
            same(f"VC {step.raw['name']}", cells, listed, ("vc_status()", "cluster_status()"))
            actual_vc = sorted((vc_cell_summary(c) for c in cells), key=lambda c: str(c["cellAddress"]))
            expected_vc = sorted(step.observed["virtualCluster"], key=lambda c: str(c["cellAddress"]))
            same(f"VC {step.raw['name']} status", expected_vc, actual_vc)
        else:
            self._inspect_cells(step.observed["cells"])

    def _inspect_cells(self, expected: Mapping[str, Mapping[str, str]]) -> None:
        """Leaf cells as `State/priority/using=/reserving=/vcell=`: the listed ones must match, every other
        leaf must be free."""
        users = cell_users(self._groups())
        actual: dict[str, dict[str, str]] = {}
        for (node, index), cells in physical_leaves(self.sched.cluster_status()["physicalCluster"]).items():
            who = users.get((node, index), {})
            label = " | ".join(cell_label(cell, who.get("using"), who.get("reserving")) for cell in cells)
            listed = str(index) in (expected.get(node) or {})
            if listed or label != f"Free/{FREE_PRIORITY}":
                actual.setdefault(node, {})[str(index)] = label
        same("leaf cells", {node: dict(leaves) for node, leaves in expected.items()}, actual)

    # -- assert (conventions.checks) ------------------------------------------------------------------------

    def _op_remember_placement(self, step: Step) -> None:
        name = step.raw["group"]
        group = self._groups().get(name)
        if group is None:
            raise FlowMismatch(f"group {name} does not exist")
        summary = group_summary(group)
        actual = {"physicalPlacement": summary["physicalPlacement"], "state": summary["state"]}
        same(f"group {name}", observed_group_summary(step.observed), actual)
        self.remembered[name] = summary["physicalPlacement"]

    def _op_assert(self, step: Step) -> None:
        getattr(self, f"_check_{step.raw['check']}")(step)

    def _check_groupsAbsent(self, step: Step) -> None:
        groups = self._groups()
        same("groups present", list(step.observed.get("present") or []), [g for g in step.groups if g in groups])

    def _check_groupState(self, step: Step) -> None:
        groups = self._groups()
        actual = {g: groups[g]["status"]["state"] if g in groups else "None" for g in step.groups}
        same("group states", dict(step.raw["groups"]), actual)
        same("group states (replay)", dict(step.observed.get("states") or {}), actual)

    def _check_lazyPreempted(self, step: Step) -> None:
        self._check_lazy(step, lazy=True)

    def _check_notLazyPreempted(self, step: Step) -> None:
        self._check_lazy(step, lazy=False)

    def _check_lazy(self, step: Step, lazy: bool) -> None:
        groups = self._groups()
        missing = [g for g in step.groups if g not in groups]
        if missing:
            raise FlowMismatch(f"groups {missing} do not exist")
        actual = {g: lazy_summary(groups[g]) for g in step.groups}
        for name, summary in actual.items():
            if summary["lazyPreemptionStatus"] != lazy or summary["hasVirtualPlacement"] == lazy:
                state = "lazy-preempted" if lazy else "not lazy-preempted"
                raise FlowMismatch(f"HiveD's test expects group {name} {state}, model {summary}")
        same("lazy preemption status", {g: dict(v) for g, v in step.observed.items()}, actual)

    def _check_vcCellHealth(self, step: Step) -> None:
        cells = self.sched.vc_status(step.raw["vc"])
        actual: dict[str, Any] = {}
        for address in step.raw["cells"]:
            cell = find_cell(cells, address)
            if cell is None:
                raise FlowMismatch(f"VC {step.raw['vc']} has no cell {address}")
            actual[address] = {"health": cell.get("cellHealthiness"), "priority": cell.get("cellPriority"),
                               "state": cell.get("cellState")}
            checked = not step.raw.get("onlyFree") or cell.get("cellPriority") == FREE_PRIORITY
            if checked and cell.get("cellHealthiness") != step.raw["expected"]:
                raise FlowMismatch(f"HiveD's test expects {address} {step.raw['expected']}, model {actual[address]}")
        same("VC cells", {a: dict(v) for a, v in step.observed.items()}, actual)

    def _check_cellsReturned(self, step: Step) -> None:
        """Every leaf of the remembered placement is Used at usedPriority or Free (HiveD's test), and the
        per-node distinct `State/priority` labels are the replay's."""
        name = step.groups[0]
        placement = self.remembered.get(name)
        if placement is None:
            raise FlowMismatch(f"no placement of {name} was remembered")
        leaves = physical_leaves(self.sched.cluster_status()["physicalCluster"])
        allowed = {f"Used/{step.raw['usedPriority']}", f"Free/{FREE_PRIORITY}"}
        actual: dict[str, list[str]] = {}
        for node, indices in placement.items():
            labels = {f"{c.get('cellState')}/{c.get('cellPriority')}"
                      for i in indices for c in leaves.get((node, i), [])}
            if not labels or not labels <= allowed:
                raise FlowMismatch(f"HiveD's test expects {node}'s cells in {sorted(allowed)}, model {sorted(labels)}")
            actual[node] = sorted(labels)
        same("returned cells", {n: sorted(v) for n, v in step.observed["cells"].items()}, actual)
