"""Small evidence logs for the grading tests, written through the real EvidenceWriter (so chains are genuine)."""

from __future__ import annotations

import copy
import hashlib
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hivedlab.checker.grading.labspec import ExpectedJob, ExperimentSpec, LabSpec
from hivedlab.checker.judging.judge import Judgement
from hivedlab.evidence import EvidenceWriter, format_time

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
BIND_INFO = "hivedscheduler.microsoft.com/pod-bind-info"
ISOLATION = "hivedscheduler.microsoft.com/pod-leaf-cell-isolation"
SPEC = "hivedscheduler.microsoft.com/pod-scheduling-spec"

LOW = ExpectedJob("low", "job-config-1", "vc1", "test", (("train", 1, 1),), True)
HIGH = ExpectedJob("high", "job-config-2", "vc1", "prod", (("train", 1, 1),), True)
PRIORITY = ExperimentSpec("priority", 2, "two-vc", (LOW, HIGH))
LAB = LabSpec((PRIORITY,))


def protocol(job: ExpectedJob, **overrides: Any) -> dict[str, Any]:
    data = {
        "protocolVersion": 2, "name": job.name, "type": "job",
        "taskRoles": {"train": {"instances": 1, "resourcePerInstance": {"cpu": 2, "memoryMB": 4096, "gpu": 1}}},
        "defaults": {"virtualCluster": job.virtual_cluster},
        "extras": {"hivedScheduler": {"jobPriorityClass": job.priority_class}},
    }
    data.update(overrides)
    return data


def pod(user: str, job: ExpectedJob, uid: str, rv: int, node: str | None = None) -> dict[str, Any]:
    framework = hashlib.md5(f"{user}~{job.name}".encode()).hexdigest()
    annotations = {SPEC: f"virtualCluster: {job.virtual_cluster}\npriority: {job.priority}\nleafCellNumber: 1\n"}
    obj: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{framework}-train-0", "namespace": "default", "uid": uid, "resourceVersion": str(rv),
                     "labels": {"userName": user, "virtualCluster": job.virtual_cluster, "type": "kube-launcher-task",
                                "FC_FRAMEWORK_NAME": framework, "FC_TASKROLE_NAME": "train", "FC_TASK_INDEX": "0"},
                     "annotations": annotations},
        "spec": {"schedulerName": f"hivedscheduler-ds-{job.virtual_cluster}"},
        "status": {"phase": "Pending"},
    }
    if node:
        obj["spec"]["nodeName"] = node
        annotations[ISOLATION] = "0"
        annotations[BIND_INFO] = (f"node: {node}\nleafCellIsolation:\n- 0\ncellChain: GPU-D-NODE-POOL\n"
                                  f"affinityGroupBindInfo:\n- podPlacements:\n  - physicalNode: {node}\n"
                                  "    physicalLeafCellIndices:\n    - 0\n")
        obj["status"] = {"phase": "Running"}
    return obj


def priority_records(dan: str = "hostname-dan") -> list[tuple[str, Any]]:
    """(kind, payload) steps of a small priority run: low binds, high preempts it, high binds, low re-created."""
    steps: list[tuple[str, Any]] = [
        ("action", ("plan", {"experiment": "priority", "cluster": "sim", "seed": 1})),
        ("action", ("submit", {"user": "alice", "job": "low", "job_name": "job-config-1", "protocol": protocol(LOW),
                               "reply": {"status": 202}})),
        ("object", ("ADDED", "pods", pod("alice", LOW, "u-low-1", 10))),
        ("object", ("MODIFIED", "pods", pod("alice", LOW, "u-low-1", 11, dan))),
        ("action", ("submit", {"user": "alice", "job": "high", "job_name": "job-config-2",
                               "protocol": protocol(HIGH), "reply": {"status": 202}})),
        ("object", ("ADDED", "pods", pod("alice", HIGH, "u-high-1", 12))),
        ("object", ("DELETED", "pods", pod("alice", LOW, "u-low-1", 13, dan))),
        ("object", ("MODIFIED", "pods", pod("alice", HIGH, "u-high-1", 14, dan))),
        ("object", ("ADDED", "pods", pod("alice", LOW, "u-low-2", 15))),
        ("action", ("end", {"result": "finished"})),
    ]
    return steps


def write_log(path: Path, steps: list[tuple[str, Any]], source: str = "sim", step_s: float = 1.0) -> Path:
    with EvidenceWriter(path, source) as writer:
        for index, (kind, payload) in enumerate(steps):
            when = format_time(T0 + timedelta(seconds=index * step_s))
            if kind == "action":
                writer.write_action(payload[0], copy.deepcopy(payload[1]), when)
            else:
                writer.write_object(payload[0], payload[1], copy.deepcopy(payload[2]), when)
    return path


INVENTORY = """group: g
members:
  - {name: Alice, user: alice, roles: [dev-box], hostname: hostname-alice, ip: 192.0.2.10}
  - {name: Bob, user: bob, roles: [master], hostname: hostname-bob, ip: 192.0.2.11}
  - {name: Carol, user: carol, roles: [worker], hostname: hostname-carol, ip: 192.0.2.12, gpus: 1}
  - {name: Dan, user: dan, roles: [worker], hostname: hostname-dan, ip: 192.0.2.13, gpus: 1}
"""
HIVED = """physicalCluster:
  physicalCells:
  - cellType: GPU-C-NODE-POOL
    cellChildren: [{cellAddress: hostname-carol}]
  - cellType: GPU-D-NODE-POOL
    cellChildren: [{cellAddress: hostname-dan}]
"""
DEPLOY_TEXT = "The master could not pull images at first; we set a registry mirror in daemon.json and it worked."


def env_record(name: str, host: str, ip: str, gpus: int) -> dict[str, Any]:
    return {"record_version": 1, "member": name, "hostname": host, "ip": ip, "os": "Ubuntu 18.04.5 LTS", "vcpus": 8,
            "gpus": {"model": "NVIDIA H200" if gpus else None, "count": gpus}, "driver_version": "550.54",
            "cuda_version": "12.4" if gpus else None, "docker_version": "20.10.7", "docker_default_runtime": "nvidia",
            "openpai_version": "v1.2.0", "checks": [], "recorded_at": "2026-01-01T00:00:00Z", "tool": "hivedlab 0.1.0"}


def report_md(deploy: str = DEPLOY_TEXT, explanations: dict[str, str] | None = None) -> str:
    """A report.md with the deployment notes and, per experiment id, the group's explanation block."""
    blocks = "".join(f"\n<!-- hivedlab:free-text explanation-{exp} -->\n\n{text}\n\n<!-- /hivedlab:free-text -->\n"
                     for exp, text in (explanations or {}).items())
    return ("# 实验报告\n\n## 实验环境\n\n| Users | | Alice |\n\n## 实验结果\n\n1. 部署 OpenPAI\n\n"
            f"<!-- hivedlab:free-text deploy -->\n\n{deploy}\n\n<!-- /hivedlab:free-text -->\n\n2. 使用不同调度策略\n"
            + blocks)


def claims(verdict: str = "consistent") -> dict[str, Any]:
    return {"format": "hivedlab-claims/1", "cluster": "sim", "experiments": [
        {"id": "priority", "verdict": verdict, "answers": [
            {"question": "Q1", "verdict": verdict, "evidence": [7]},
            {"question": "Q2", "verdict": verdict, "evidence": [8]}]}]}


def make_run_dir(root: Path, source: str = "sim", steps: list[tuple[str, Any]] | None = None,
                 with_env: bool = True, claim: str = "consistent") -> Path:
    """A run directory of the priority experiment as `hivedlab run` lays it out."""
    import json

    exp = root / "experiments" / "priority"
    exp.mkdir(parents=True)
    (root / "run.json").write_text(json.dumps({"cluster": "sim" if source == "sim" else "pai", "seed": 1,
                                               "experiments": ["priority"]}))
    (root / "inventory.yaml").write_text(INVENTORY)
    if with_env:
        (root / "env").mkdir()
        for name, host, ip, gpus in (("Alice", "hostname-alice", "192.0.2.10", 0),
                                     ("Bob", "hostname-bob", "192.0.2.11", 0),
                                     ("Carol", "hostname-carol", "192.0.2.12", 1),
                                     ("Dan", "hostname-dan", "192.0.2.13", 1)):
            (root / "env" / f"{name.lower()}.json").write_text(json.dumps(env_record(name, host, ip, gpus)))
    (root / "hived").mkdir()
    (root / "hived" / "two-vc.yaml").write_text(HIVED)
    (root / "jobs" / "priority").mkdir(parents=True)
    for job in (LOW, HIGH):
        (root / "jobs" / "priority" / f"{job.name}.yaml").write_text(json.dumps(protocol(job)))
    if steps is None:
        steps = priority_records()
        if source != "sim":
            steps[0] = ("action", ("plan", {"experiment": "priority", "cluster": "pai"}))
    write_log(exp / "evidence.jsonl", steps, "sim" if source == "sim" else "k8s")
    (exp / "verdicts.json").write_text(json.dumps(fake_judge_result(consistent=True)))
    (root / "report.md").write_text(report_md())
    (root / "claims.json").write_text(json.dumps(claims(claim)))
    return root


def fake_judge_result(consistent: bool) -> dict[str, Any]:
    verdict = "consistent" if consistent else "inconclusive"
    return {"experiment": "priority", "verdict": verdict, "missing": [] if consistent else ["end of the run"],
            "answers": [
                {"question": 0, "answer": {"zh": "抢占", "en": "preempted"}, "verdict": "consistent",
                 "evidence": [6, 7]},
                {"question": 1, "answer": {"zh": "都结束", "en": "both ended"}, "verdict": verdict, "evidence": [8]}]}


def fake_judge(log: Any, experiment: str) -> Judgement:
    """Stands in for the checker's verdicts: consistent when the run reached its end record."""
    ended = any(r.kind == "action" and r.action_type == "end" for r in log.records)
    return Judgement(fake_judge_result(consistent=ended))
