"""Tamper checks over an evidence log's raw records: what a forger gets wrong.

The hash chain (checked by `hivedlab.evidence`) is unkeyed: it catches an edited log, not a log written from scratch
by a script. These checks look for what an API server and HiveD always do and a hand-made log easily misses.
Timestamps written by different nodes (container start times, event times) are never compared with each other:
node clocks may differ by seconds. Only the recorder's own `time` (one clock) must not go backwards.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import yaml

from hivedlab.basics.yaml_load import safe_load
from hivedlab.checker.grading.grade_findings import GradeFinding
from hivedlab.checker.grading.labspec import ExperimentSpec
from hivedlab.evidence import Record, parse_time
from hivedlab.models.hived.annotations import BIND_INFO, LEAF_CELL_ISOLATION, PREFIX, SCHEDULING_SPEC
from hivedlab.models.openpai.hived_spec import PRIORITIES

RECORDER_CLOCK_SLACK = timedelta(seconds=2)  # one clock, but NTP may step it a little
_BIND_NODE = re.compile(r"^node:\s*(\S+)\s*$", re.MULTILINE)
_PHYSICAL_NODE = re.compile(r"physicalNode:\s*(\S+)")
_SPEC_PRIORITY = re.compile(r"^priority:\s*(-?\d+)\s*$", re.MULTILINE)
MAX_FINDINGS_PER_CODE = 5  # a forged log can produce thousands; the TA needs the first few


@dataclass(frozen=True)
class LogFacts:
    """What the grader learnt about one log besides its findings."""

    source: str  # "sim", "k8s", "mixed" or "" (no records)
    nodes: frozenset[str]
    plan_experiment: str | None
    plan_cluster: str | None
    submitted_keys: tuple[str, ...]
    ended: str | None  # the `end` action's status, e.g. "finished"


class _Collector:
    def __init__(self, file: str, experiment: str | None) -> None:
        self.file = file
        self.experiment = experiment
        self.findings: list[GradeFinding] = []
        self._counts: dict[str, int] = {}

    def add(self, kind: str, code: str, en: str, zh: str, seq: int | None = None) -> None:
        count = self._counts.get(code, 0)
        self._counts[code] = count + 1
        if count < MAX_FINDINGS_PER_CODE:
            self.findings.append(GradeFinding(kind, code, en, zh, self.file, seq, self.experiment))


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def check_sequence(records: Sequence[Record], out: _Collector) -> str:
    """seq counts 0, 1, 2…; the recorder's clock never goes backwards; one source per log. Returns the source."""
    sources: set[str] = set()
    last_time: datetime | None = None
    previous: int | None = None
    for index, record in enumerate(records):
        # a gap (a line that could not be read) is the chain's finding, counted once; only a seq that goes back
        # or repeats is the log's own disorder
        if previous is not None and record.seq <= previous:
            out.add("forgery", "seq-order",
                    f"record {index} has seq {record.seq}: the log's own sequence is out of order",
                    f"第 {index} 条记录的 seq 为 {record.seq}：日志自身的序号乱序", record.seq)
        previous = record.seq if previous is None else max(previous, record.seq)
        when = parse_time(record.time)
        if when is None:
            out.add("forgery", "bad-time", f"record {record.seq} has no valid time",
                    f"第 {record.seq} 条记录的时间无效", record.seq)
        else:
            if last_time is not None and when + RECORDER_CLOCK_SLACK < last_time:
                out.add("forgery", "time-backwards", f"record {record.seq} was received before the record preceding it",
                        f"第 {record.seq} 条记录的接收时间早于前一条", record.seq)
            last_time = when if last_time is None or when > last_time else last_time
        sources.add(record.source)
    if len(sources) > 1:
        out.add("forgery", "mixed-sources", f"the log mixes sources {sorted(sources)}",
                f"日志混合了多个来源 {sorted(sources)}")
        return "mixed"
    return next(iter(sources), "")


def check_objects(records: Sequence[Record], out: _Collector) -> None:
    """resourceVersion never goes backwards per object; a uid names one object; nothing changes after DELETED."""
    last_rv: dict[str, int] = {}
    owner: dict[str, tuple[str, str, str]] = {}
    deleted: dict[str, int] = {}
    for record in records:
        obj, seq = record.object, record.seq
        if record.kind != "object" or obj is None or record.watch_type == "BOOKMARK":
            continue
        raw_meta = obj.get("metadata")
        meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
        uid = meta.get("uid")
        if not isinstance(uid, str) or not uid:
            continue
        ident = (str(record.resource), str(meta.get("namespace")), str(meta.get("name")))
        if owner.setdefault(uid, ident) != ident:
            first = owner[uid]
            out.add("forgery", "uid-reused", f"uid {uid} names both {first[0]} {first[2]} and {ident[0]} {ident[2]}",
                    f"uid {uid} 同时属于 {first[2]} 和 {ident[2]}：真实集群的 uid 唯一", seq)
        rv_text = meta.get("resourceVersion")
        rv = int(rv_text) if isinstance(rv_text, str) and rv_text.isdigit() else None
        if rv is None:
            continue
        previous = last_rv.get(uid)
        if previous is not None and rv < previous:
            out.add("forgery", "rv-backwards",
                    f"{ident[2]}: resourceVersion {rv} after {previous} (resourceVersions only grow)",
                    f"{ident[2]}：resourceVersion 从 {previous} 变为 {rv}（只会增大）", seq)
        if uid in deleted and record.watch_type in ("ADDED", "MODIFIED") and rv > deleted[uid]:
            out.add("forgery", "changed-after-delete", f"{ident[2]} changed after it was deleted",
                    f"{ident[2]} 在删除之后又发生了变化", seq)
        last_rv[uid] = rv if previous is None else max(rv, previous)
        if record.watch_type == "DELETED":
            deleted[uid] = rv


def _pods(records: Sequence[Record]) -> Iterable[tuple[int, Mapping[str, Any]]]:
    for record in records:
        if record.kind == "object" and record.resource == "pods" and record.object is not None:
            yield record.seq, record.object


def _bound_pods(records: Sequence[Record]) -> Iterable[tuple[int, Mapping[str, Any]]]:
    return ((seq, pod) for seq, pod in _pods(records) if _get(pod, "spec", "nodeName"))


def check_pods(records: Sequence[Record], allowed_nodes: frozenset[str] | None,
               spec: ExperimentSpec | None, out: _Collector) -> frozenset[str]:
    """Bound pods carry HiveD's annotations on a known node; pods use the experiment's VCs and priorities."""
    nodes: set[str] = set()
    first_seen: dict[str, int] = {}
    for seq, pod in _bound_pods(records):
        name = str(_get(pod, "metadata", "name"))
        node = str(_get(pod, "spec", "nodeName"))
        nodes.add(node)
        first_seen.setdefault(node, seq)
        annotations = _get(pod, "metadata", "annotations")
        annotations = annotations if isinstance(annotations, Mapping) else {}
        missing = [key[len(PREFIX):] for key in (BIND_INFO, LEAF_CELL_ISOLATION) if not annotations.get(key)]
        if missing:
            out.add("forgery", "no-hived-annotations",
                    f"pod {name} is bound to {node} without HiveD's {', '.join(missing)} annotation",
                    f"Pod {name} 已绑定到 {node}，却没有 HiveD 的 {', '.join(missing)} 注解", seq)
            continue
        bind_info = str(annotations[BIND_INFO])
        match = _BIND_NODE.search(bind_info)
        if not match or match.group(1).strip("'\"") != node:
            out.add("forgery", "bind-node-mismatch",
                    f"pod {name} runs on {node} but HiveD's bind info names another node",
                    f"Pod {name} 运行在 {node}，但 HiveD 的绑定信息写的是另一个节点", seq)
        for other in _PHYSICAL_NODE.findall(bind_info):
            other = other.strip("'\"")
            nodes.add(other)
            first_seen.setdefault(other, seq)
    if allowed_nodes is not None:
        for node in sorted(nodes - allowed_nodes):
            out.add("foreign", "unknown-node", f"node {node} is in neither the group's inventory nor its HiveD config",
                    f"节点 {node} 不在本组的清单或 HiveD 配置中", first_seen.get(node))
    if spec is not None and spec.complete:
        _check_pod_specs(records, spec, out)
    return frozenset(nodes)


def _check_pod_specs(records: Sequence[Record], spec: ExperimentSpec, out: _Collector) -> None:
    seen: set[str] = set()
    for seq, pod in _pods(records):
        name = str(_get(pod, "metadata", "name"))
        if name in seen:
            continue
        seen.add(name)
        vc = _get(pod, "metadata", "labels", "virtualCluster")
        if isinstance(vc, str) and vc not in spec.virtual_clusters:
            out.add("foreign", "foreign-vc", f"pod {name} ran in VC {vc}, not one of the experiment's "
                    f"({', '.join(sorted(spec.virtual_clusters))})", f"Pod {name} 使用了实验规定之外的 VC {vc}", seq)
        text = _get(pod, "metadata", "annotations", SCHEDULING_SPEC)
        match = _SPEC_PRIORITY.search(text) if isinstance(text, str) else None
        if match and int(match.group(1)) not in spec.priorities:
            out.add("foreign", "foreign-priority", f"pod {name} has priority {match.group(1)}, not one of the "
                    "experiment's jobs'", f"Pod {name} 的优先级 {match.group(1)} 不是实验任务规定的", seq)


def _protocol(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str) and len(value) < 200_000:
        try:
            data = safe_load(value)  # the safe loader's data, faster
        except yaml.YAMLError:
            return None
        return data if isinstance(data, Mapping) else None
    return None


def check_actions(records: Sequence[Record], spec: ExperimentSpec | None,
                  out: _Collector) -> tuple[str | None, str | None, tuple[str, ...], str | None]:
    """The plan record names the experiment; each submission sends the lab's job with its VC and priority."""
    plan_exp = plan_cluster = ended = None
    keys: list[str] = []
    for record in records:
        if record.kind != "action" or record.action is None:
            continue
        action = record.action
        kind, seq = action.get("type"), record.seq
        if kind == "plan" and plan_exp is None:
            plan_exp = _first_str(action, "experiment", "id", "plan_id")
            plan_cluster = _first_str(action, "cluster")
        elif kind == "end":
            ended = _first_str(action, "status", "outcome", "result") or "finished"
        elif kind == "submit":
            key = _first_str(action, "job_key", "job", "key", "plan_job")
            if key:
                keys.append(key)
            if spec is not None:
                _check_submission(action, key, spec, seq, out)
    if spec is not None and plan_exp is not None and plan_exp != spec.id:
        out.add("foreign", "wrong-plan", f"the log runs plan {plan_exp}, not {spec.id}",
                f"日志运行的是计划 {plan_exp}，而不是 {spec.id}")
    return plan_exp, plan_cluster, tuple(keys), ended


def _first_str(data: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _check_submission(action: Mapping[str, Any], key: str | None, spec: ExperimentSpec, seq: Any,
                      out: _Collector) -> None:
    expected = spec.job(key) if key else None
    if expected is not None and not expected.known:
        return
    if expected is None:
        out.add("foreign", "foreign-job", f"submission of job key {key!r}, which the {spec.id} plan does not have",
                f"提交了计划 {spec.id} 中没有的任务 {key!r}", seq)
        return
    protocol = _protocol(action.get("protocol"))
    if protocol is None:
        return
    vc = _get(protocol, "defaults", "virtualCluster") or "default"
    klass = _get(protocol, "extras", "hivedScheduler", "jobPriorityClass") or "test"
    if vc != expected.virtual_cluster:
        out.add("foreign", "foreign-vc",
                f"{key} was submitted to VC {vc}; the lab's job uses {expected.virtual_cluster}",
                f"{key} 提交到了 VC {vc}，实验规定为 {expected.virtual_cluster}", seq)
    if klass != expected.priority_class and PRIORITIES.get(str(klass)) != expected.priority:
        out.add("foreign", "foreign-priority", f"{key} was submitted with priority {klass}; the lab's job uses "
                f"{expected.priority_class}", f"{key} 的优先级为 {klass}，实验规定为 {expected.priority_class}", seq)
    raw_roles = protocol.get("taskRoles")
    roles: Mapping[str, Any] = raw_roles if isinstance(raw_roles, Mapping) else {}
    sent = tuple(sorted((str(n), r.get("instances"), _get(r, "resourcePerInstance", "gpu"))
                        for n, r in roles.items() if isinstance(r, Mapping)))
    if sent != tuple(sorted(expected.task_roles)):
        out.add("foreign", "foreign-shape", f"{key}: task roles, instances or GPUs differ from the lab's job",
                f"{key}：任务角色、实例数或 GPU 数与实验规定不同", seq)


def check_log(records: Sequence[Record], file: str, spec: ExperimentSpec | None,
              allowed_nodes: frozenset[str] | None) -> tuple[LogFacts, tuple[GradeFinding, ...]]:
    """Every tamper and lab-conformance check of one log; pure."""
    out = _Collector(file, spec.id if spec else None)
    source = check_sequence(records, out)
    check_objects(records, out)
    nodes = check_pods(records, allowed_nodes, spec, out)
    plan_exp, plan_cluster, keys, ended = check_actions(records, spec, out)
    if plan_cluster and source in ("sim", "k8s") and (plan_cluster == "sim") != (source == "sim"):
        out.add("forgery", "source-mismatch", f"the plan ran on cluster {plan_cluster} but the records say {source}",
                f"计划记录的集群为 {plan_cluster}，但记录来源为 {source}")
    facts = LogFacts(source=source, nodes=nodes, plan_experiment=plan_exp, plan_cluster=plan_cluster,
                     submitted_keys=keys, ended=ended)
    return facts, tuple(out.findings)
