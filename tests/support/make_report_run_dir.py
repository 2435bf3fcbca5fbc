"""Writes tests/fixtures/report/run-sim/: a small run directory of the five experiments, as `hivedlab run` lays it out.

The pods and events follow docs/lab-experiments.md (HiveD v0.3.4's decisions for the lab); the verdicts give its
answers. Regenerate with `.venv/bin/python -m tests.support.make_report_run_dir` (the output is committed).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml

from hivedlab.evidence import EvidenceWriter, format_time
from tests.support.paths import FIXTURES, ROOT

HERE = FIXTURES / "report"
OUT = HERE / "run-sim"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
CARC, DAN = "hostname-carol", "hostname-dan"
RUN_TAG = "s1"
SUBMITTED: dict[str, list[tuple[str, str]]] = {}  # experiment -> (job file base, unique job name)


class Scenario:
    """Writes one experiment's evidence: actions, pods and events at given seconds after T0."""

    def __init__(self, path: Path, experiment: str, config: str, offset: int) -> None:
        self.w = EvidenceWriter(path, "sim")
        self.experiment = experiment
        self.start = T0 + timedelta(hours=offset)
        self.pods: dict[str, dict[str, Any]] = {}
        self.w.write_action("plan", {"experiment": experiment, "plan": f"labs/experiments/{experiment}.yaml",
                                     "cluster": "sim", "seed": 1, "members": ["alice", "bob", "carol", "dan"]},
                            self.at(0))
        text = (ROOT / "configs" / "hived" / f"{config}.yaml").read_text(encoding="utf-8")
        self.w.write_action("config-switch", {"name": config, "text": text}, self.at(0))

    def at(self, seconds: float) -> str:
        return format_time(self.start + timedelta(seconds=seconds))

    def submit(self, t: float, user: str, key: str, base: str, tasks: int = 1, status: int = 202) -> str:
        job = f"{base}-{user}-{self.experiment}-{RUN_TAG}"  # the runner's unique name (runner.turns.job_name_for)
        SUBMITTED.setdefault(self.experiment, []).append((base, job))
        framework = hashlib.md5(f"{user}~{job}".encode()).hexdigest()
        reply = {"status": status, "body": {"status": status, "message": (
            f"Update job {job} for user {user} successfully." if status == 202
            else "Job requests 4 SKUs, exceeds maximum 2 SKUs in VC default.")}}
        self.w.write_action("submit", {"user": user, "job": key, "job_name": job, "framework_name": framework,
                                       "protocol": f"name: {job}\n", "reply": reply,
                                       "expect": "accepted" if status == 202 else "rejected"}, self.at(t))
        if status == 202:
            for index in range(tasks):
                self.pod_added(t + 0.5, framework, index, f"{framework[:8]}-{index}-a0", user)
        return framework

    def pod_added(self, t: float, framework: str, index: int, uid: str, user: str = "alice") -> None:
        name = f"{framework}-train-{index}"
        self.pods[uid] = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": uid,
                         "labels": {"userName": user, "type": "kube-launcher-task", "FC_FRAMEWORK_NAME": framework,
                                    "FC_TASKROLE_NAME": "train", "FC_TASK_INDEX": str(index)},
                         "annotations": {}},
            "spec": {"schedulerName": "hivedscheduler-ds-default"},
            "status": {"phase": "Pending"},
        }
        self.w.write_object("ADDED", "pods", self.pods[uid], self.at(t))

    def event(self, t: float, uid: str, reason: str, message: str) -> int:
        pod = self.pods[uid]["metadata"]
        meta = {"name": f"{pod['name']}.{int(t)}", "namespace": "default"}
        obj = {"apiVersion": "v1", "kind": "Event", "metadata": meta,
               "involvedObject": {"kind": "Pod", "name": pod["name"], "uid": uid, "namespace": "default"},
               "reason": reason, "message": message, "type": "Warning" if reason == "FailedScheduling" else "Normal"}
        return self.w.write_object("ADDED", "events", obj, self.at(t))["seq"]

    def wait(self, t: float, uid: str, where: str) -> int:
        return self.event(t, uid, "FailedScheduling", "0/3 nodes are available: 1 Pod is waiting for preemptible or "
                          f"free resource to appear: insufficient capacity when scheduling in {where}.")

    def bind(self, t: float, uid: str, node: str, gpu: int = 0) -> int:
        pod = self.pods[uid]
        pod["spec"]["nodeName"] = node
        pod["metadata"]["annotations"]["hivedscheduler.microsoft.com/pod-leaf-cell-isolation"] = str(gpu)
        return self.w.write_object("MODIFIED", "pods", pod, self.at(t))["seq"]

    def run(self, t: float, uid: str) -> int:
        pod = self.pods[uid]
        pod["status"] = {"phase": "Running", "containerStatuses": [{"name": "app", "state": {"running": {
            "startedAt": self.at(t)}}}]}
        return self.w.write_object("MODIFIED", "pods", pod, self.at(t))["seq"]

    def succeed(self, t: float, uid: str) -> int:
        pod = self.pods[uid]
        pod["status"] = {"phase": "Succeeded", "containerStatuses": [{"name": "app", "state": {"terminated": {
            "exitCode": 0, "startedAt": self.at(t - 60), "finishedAt": self.at(t)}}}]}
        return self.w.write_object("MODIFIED", "pods", pod, self.at(t))["seq"]

    def delete(self, t: float, uid: str) -> int:
        return self.w.write_object("DELETED", "pods", self.pods[uid], self.at(t))["seq"]

    def preempt(self, t: float, uid: str, by: str, node: str) -> int:
        seq = self.event(t, uid, "Preempted", f"by default/{by} on node {node}")
        self.delete(t + 1, uid)
        return seq

    def end(self, t: float) -> None:
        self.w.write_action("end", {"status": "finished"}, self.at(t))
        self.w.close()


def answer(question: int, zh: str, en: str, evidence: list[int]) -> dict[str, Any]:
    return {"question": question, "answer": {"zh": zh, "en": en}, "verdict": "consistent", "evidence": evidence}


def with_rules(experiment: str, answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answers in the checker's verdict shape: the plan's rules in order, with their questions."""
    plan = yaml.safe_load((ROOT / "labs" / "experiments" / f"{experiment}.yaml").read_text(encoding="utf-8"))
    result = []
    for rule, item in zip(plan["rules"], answers, strict=True):
        index = rule["question"]
        question = {lang: plan["questions"][lang][index] for lang in ("zh", "en")}
        result.append({"rule": rule["id"], "kind": rule["kind"], "question_index": index, "question": question,
                       **{k: v for k, v in item.items() if k != "question"}})
    return result


def vc_safety(path: Path) -> list[dict[str, Any]]:
    s = Scenario(path, "vc-safety", "two-vc", 0)
    fws = [s.submit(i, user, "prod", "job-config-0") for i, user in enumerate(("alice", "bob", "carol", "dan"))]
    uids = [f"{fw[:8]}-0-a0" for fw in fws]
    first = s.bind(5, uids[0], DAN)
    s.run(10, uids[0])
    waits = [s.wait(6 + i, uid, "VC vc1") for i, uid in enumerate(uids[1:])]
    s.succeed(70, uids[0])
    binds = [first]
    for i, uid in enumerate(uids[1:]):
        base = 71 + 65 * i
        binds.append(s.bind(base, uid, DAN))
        s.run(base + 4, uid)
        s.succeed(base + 64, uid)
    s.end(270)
    return [
        answer(0, "四个 vc1 任务都在 vc1 唯一的机器 hostname-dan 上运行（T+0:00:05 起），按提交顺序一个接一个。",
               "All four vc1 jobs ran on vc1's only machine, hostname-dan (from T+0:00:05), one after another in "
               "submission order.", binds),
        answer(1, "其余任务等待（insufficient capacity when scheduling in VC vc1），"
                  "没有被调度到空闲的 default VC 的机器 hostname-carol 上：VC 安全。",
               "The other jobs waited (insufficient capacity when scheduling in VC vc1) and were never placed on the "
               "idle default VC's machine hostname-carol: VC safety.", waits),
        answer(2, "各任务按提交顺序依次在 hostname-dan 上运行：T+0:00:10、T+0:01:15、T+0:02:20、T+0:03:25 开始。",
               "The jobs ran one after another on hostname-dan in submission order, starting at T+0:00:10, T+0:01:15, "
               "T+0:02:20 and T+0:03:25.", binds),
    ]


def priority(path: Path) -> list[dict[str, Any]]:
    s = Scenario(path, "priority", "two-vc", 1)
    low = s.submit(0, "alice", "low", "job-config-1")
    low0 = f"{low[:8]}-0-a0"
    s.bind(3, low0, DAN)
    s.run(5, low0)
    high = s.submit(60, "alice", "high", "job-config-2")
    high0 = f"{high[:8]}-0-a0"
    pre = s.preempt(61, low0, f"{high}-train-0", DAN)
    bind_high = s.bind(63, high0, DAN)
    s.run(65, high0)
    low1 = f"{low[:8]}-0-a1"
    s.pod_added(64, low, 0, low1)
    wait = s.wait(65, low1, "VC vc1")
    s.succeed(365, high0)
    s.bind(366, low1, DAN)
    s.run(368, low1)
    done = s.succeed(668, low1)
    s.end(670)
    return [
        answer(0, "后提交的 prod 任务 job-config-2 没有等待：T+0:01:01 抢占了 hostname-dan 上的 test 任务 "
                  "job-config-1，T+0:01:05 在 hostname-dan 上运行。",
               "The later prod job job-config-2 did not wait: at T+0:01:01 it preempted the test job job-config-1 on "
               "hostname-dan and ran there from T+0:01:05.", [pre, bind_high]),
        answer(1, "job-config-1 重新创建后等待（insufficient capacity when scheduling in VC vc1），"
                  "job-config-2 结束后于 T+0:06:08 在 hostname-dan 上从头运行，两个任务在 T+0:11:08 都运行结束。",
               "job-config-1 was re-created and waited (insufficient capacity when scheduling in VC vc1); after "
               "job-config-2 ended it ran again from the beginning on hostname-dan at T+0:06:08; both had finished "
               "at T+0:11:08.", [wait, done]),
        answer(2, "两个任务的每次尝试都在 vc1 的机器 hostname-dan 上运行。", "Every attempt of both jobs ran on vc1's "
               "machine hostname-dan.", [bind_high]),
    ]


def opportunistic(path: Path) -> list[dict[str, Any]]:
    s = Scenario(path, "opportunistic", "two-vc", 2)
    prod = s.submit(0, "alice", "prod", "job-config-3")
    prod0 = f"{prod[:8]}-0-a0"
    s.bind(3, prod0, DAN)
    s.run(5, prod0)
    oppo = s.submit(60, "alice", "oppo", "job-config-4")
    oppo0 = f"{oppo[:8]}-0-a0"
    bind_oppo = s.bind(61, oppo0, CARC)
    s.run(63, oppo0)
    guest = s.submit(120, "alice", "guest", "job-default-test")
    guest0 = f"{guest[:8]}-0-a0"
    pre = s.preempt(121, oppo0, f"{guest}-train-0", CARC)
    bind_guest = s.bind(123, guest0, CARC)
    s.run(125, guest0)
    oppo1 = f"{oppo[:8]}-0-a1"
    s.pod_added(123, oppo, 0, oppo1)
    wait = s.wait(124, oppo1, "physical cluster")
    s.succeed(365, prod0)
    rebind = s.bind(366, oppo1, DAN)
    s.run(368, oppo1)
    s.succeed(425, guest0)
    s.succeed(668, oppo1)
    s.end(670)
    return [
        answer(0, "oppo 任务 job-config-4 没有等待 prod 任务：T+0:01:01 就在空闲的 hostname-carol 上运行"
                  "（vc1 配额之外）。",
               "The oppo job job-config-4 did not wait for the prod job: at T+0:01:01 it started on the idle "
               "hostname-carol, outside vc1's quota.", [bind_oppo]),
        answer(1, "default VC 的 test 任务在 T+0:02:01 抢占了 hostname-carol 上的 oppo 任务，"
                  "T+0:02:03 在 hostname-carol 上运行。",
               "The default VC's test job preempted the oppo job on hostname-carol at T+0:02:01 and ran there from "
               "T+0:02:03.", [pre, bind_guest]),
        answer(2, "oppo 任务重新创建后等待任意空闲 GPU（insufficient capacity when scheduling in physical cluster），"
                  "prod 任务结束后于 T+0:06:06 在 hostname-dan 上运行。",
               "The oppo job was re-created and waited for any free GPU (insufficient capacity when scheduling in "
               "physical cluster); it ran on hostname-dan from T+0:06:06 after the prod job ended.", [wait, rebind]),
    ]


def gang(path: Path) -> list[dict[str, Any]]:
    s = Scenario(path, "gang", "one-vc", 3)
    holder = s.submit(0, "alice", "holder", "job-config-5")
    h0 = f"{holder[:8]}-0-a0"
    s.bind(3, h0, CARC)
    s.run(5, h0)
    g = s.submit(60, "alice", "gang", "job-config-6", tasks=2)
    g0, g1 = f"{g[:8]}-0-a0", f"{g[:8]}-1-a0"
    waits = [s.wait(61, g0, "VC default"), s.wait(61, g1, "VC default")]
    s.succeed(365, h0)
    binds = [s.bind(366, g0, CARC), s.bind(366, g1, DAN)]
    s.run(368, g0)
    s.run(368, g1)
    s.succeed(428, g0)
    s.delete(429, g1)
    s.end(430)
    return [
        answer(0, "群调度任务 job-config-6 提交后两个子任务都等待"
                  "（insufficient capacity when scheduling in VC default），"
                  "虽然 hostname-dan 空闲；job-config-5 结束后才于 T+0:06:06 开始运行。",
               "Both tasks of the gang job job-config-6 waited (insufficient capacity when scheduling in VC default) "
               "although hostname-dan was free; it started only at T+0:06:06 after job-config-5 ended.", waits),
        answer(1, "2 个子任务同时开始：T+0:06:06 分别绑定到 hostname-carol 和 hostname-dan，没有先后运行。",
               "The 2 tasks started together: at T+0:06:06 they were bound to hostname-carol and hostname-dan, not one "
               "after the other.", binds),
    ]


def incremental(path: Path) -> list[dict[str, Any]]:
    s = Scenario(path, "incremental", "one-vc", 4)
    holder = s.submit(0, "alice", "holder", "job-config-5")
    h0 = f"{holder[:8]}-0-a0"
    s.bind(3, h0, CARC)
    s.run(5, h0)
    e = s.submit(60, "alice", "elastic", "job-config-7", tasks=2)
    e0, e1 = f"{e[:8]}-0-a0", f"{e[:8]}-1-a0"
    first = s.bind(61, e0, DAN)
    s.run(63, e0)
    wait = s.wait(62, e1, "VC default")
    s.succeed(365, h0)
    second = s.bind(366, e1, CARC)
    s.run(368, e1)
    s.succeed(423, e0)
    s.delete(424, e1)
    rejected = s.w.next_seq
    s.submit(430, "alice", "over-gang", "job-over-quota-gang", tasks=4, status=400)
    over = s.submit(432, "alice", "over-elastic", "job-over-quota-incremental", tasks=4)
    o = [f"{over[:8]}-{i}-a0" for i in range(4)]
    partial = [s.bind(433, o[0], CARC), s.bind(433, o[1], DAN), s.wait(434, o[2], "VC default"),
               s.wait(434, o[3], "VC default")]
    s.run(435, o[0])
    s.run(435, o[1])
    s.succeed(495, o[0])
    for uid in o[1:]:
        s.delete(496, uid)
    s.end(497)
    return [
        answer(0, "弹性调度任务 job-config-7 没有等待：T+0:01:01 第一个子任务就在空闲的 hostname-dan 上运行。",
               "The incremental job job-config-7 did not wait: its first task started on the free hostname-dan at "
               "T+0:01:01.", [first]),
        answer(1, "2 个子任务先后运行：第二个子任务等待（insufficient capacity when scheduling in VC default），"
                  "job-config-5 结束后于 T+0:06:06 在 hostname-carol 上运行。",
               "The 2 tasks ran one after the other: the second waited (insufficient capacity when scheduling in VC "
               "default) and ran on hostname-carol from T+0:06:06 after job-config-5 ended.", [wait, second]),
        answer(2, "需要 4 GPU 的群调度任务在提交时被拒绝"
                  "（HTTP 400：Job requests 4 SKUs, exceeds maximum 2 SKUs in VC default.）。",
               "The 4-GPU gang job was rejected at submission (HTTP 400: Job requests 4 SKUs, exceeds maximum 2 SKUs "
               "in VC default.).", [rejected]),
        answer(2, "需要 4 GPU 的弹性调度任务可以提交，每次只有 2 个子任务运行"
                  "（hostname-carol、hostname-dan），其余等待。",
               "The 4-GPU incremental job was accepted and ran two tasks at a time (hostname-carol, hostname-dan) "
               "while the others waited.", partial),
    ]


SCENARIOS = {"vc-safety": vc_safety, "priority": priority, "opportunistic": opportunistic, "gang": gang,
             "incremental": incremental}


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    (OUT / "hived").mkdir(parents=True)
    for name in ("two-vc", "one-vc"):
        shutil.copy(ROOT / "configs" / "hived" / f"{name}.yaml", OUT / "hived" / f"{name}.yaml")
    shutil.copy(ROOT / "configs" / "group.example.yaml", OUT / "inventory.yaml")
    for experiment, build in SCENARIOS.items():
        folder = OUT / "experiments" / experiment
        folder.mkdir(parents=True)
        answers = with_rules(experiment, build(folder / "evidence.jsonl"))
        verdict = {"experiment": experiment, "verdict": "consistent", "answers": answers, "missing": []}
        text = json.dumps(verdict, ensure_ascii=False, indent=2) + "\n"
        (folder / "verdicts.json").write_text(text, encoding="utf-8")
        jobs = OUT / "jobs" / experiment
        jobs.mkdir(parents=True)
        for base, job in SUBMITTED[experiment]:
            source = ROOT / "jobs" / f"{base}.yaml"
            text = source.read_text(encoding="utf-8") if source.is_file() else f"name: {base}\n"
            (jobs / f"{job}.yaml").write_text(text.replace(f"name: {base}", f"name: {job}", 1), encoding="utf-8")
    run = {"hivedlab_version": "0.1.0", "cluster": "sim", "seed": 1, "group": "example-group", "run_tag": RUN_TAG,
           "started": format_time(T0), "finished": format_time(T0 + timedelta(hours=4, seconds=431)),
           "experiments": list(SCENARIOS),
           "outcomes": {e: {"status": "finished", "reason": ""} for e in SCENARIOS}}
    (OUT / "run.json").write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
