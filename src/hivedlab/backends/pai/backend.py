"""The real backend: a group's OpenPAI v1.2.0 + HiveD cluster, driven over REST and watched through Kubernetes.

- Submissions, stops and job states go through the rest-server (`hivedlab.backends.pai.rest`), as each member.
- What the cluster does (Pods, core/v1 Events, Frameworks) is recorded by the Kubernetes watcher
  (`hivedlab.backends.watcher.Watcher`), which runs in the background writing the evidence log. The backend reads the
  objects as they are written (a tap on the writer, `hivedlab.backends.pai.observed`) to know when a task pod waits
  (FailedScheduling) or runs.
- Its own REST calls and replies go to `<run>/pai/rest-calls.jsonl` (never a token); the runner records the submit
  and stop actions in the evidence log. Submitted job names are kept in `<run>/pai/submitted.json` so that a resumed
  run never submits a job twice and Ctrl-C only ever stops this run's jobs.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from hivedlab.backends.pai.hived_inspect import fetch_vcs, wait_for_vcs
from hivedlab.backends.pai.live import JobRow, LiveView
from hivedlab.backends.pai.observed import ObservedIndex
from hivedlab.backends.pai.rest import PaiClient, PaiError, RestCall, RestReply
from hivedlab.backends.protocol import (
    FINISHED_STATES,
    ConfigSwitcher,
    JobStatus,
    Reply,
    RunInfo,
    SubmitResult,
    TaskStatus,
    confirm_on_interrupt,
)
from hivedlab.basics.errors import HivedlabError
from hivedlab.evidence import EvidenceWriter, format_time
from hivedlab.models.openpai.naming import framework_name
from hivedlab.rundir import PAI_CALLS, PAI_SUBMITTED, RunDir, UserStop

UNFINISHED = ("WAITING", "RUNNING", "STOPPING")
STATUS_CACHE_S = 3.0  # poll job detail at most this often per job (rest-server: 600 requests/min per IP)


class RunState:
    """`<run>/pai/submitted.json`: {"user~job": {"user", "job_name", "job_key", "status"}} written whole each time."""

    def __init__(self, folder: Path, experiment: str = "") -> None:
        self.experiment = experiment
        self.path = folder / PAI_SUBMITTED
        self.calls_path = folder / PAI_CALLS
        folder.mkdir(parents=True, exist_ok=True)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else {}
        except (OSError, ValueError):
            raise HivedlabError(f"{self.path} is damaged: move it away to start a fresh run") from None
        self.jobs: dict[str, dict[str, Any]] = data if isinstance(data, dict) else {}
        self._lock = threading.Lock()

    def put(self, user: str, job_name: str, job_key: str, status: str) -> None:
        with self._lock:
            self.jobs[f"{user}~{job_name}"] = {"user": user, "job_name": job_name, "job_key": job_key,
                                               "status": status, "experiment": self.experiment}
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.jobs, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            tmp.replace(self.path)

    def get(self, user: str, job_name: str) -> dict[str, Any] | None:
        return self.jobs.get(f"{user}~{job_name}")

    def ours(self) -> list[dict[str, Any]]:
        """This experiment's submitted jobs (a run directory holds several experiments)."""
        return [j for j in self.jobs.values()
                if j.get("status") in ("accepted", "pending") and j.get("experiment", "") == self.experiment]

    def log_call(self, user: str | None, call: RestCall) -> None:
        line = json.dumps({"time": format_time(datetime.now(timezone.utc)), "user": user, **call.as_dict()},
                          ensure_ascii=False, default=str)
        with self._lock, self.calls_path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _protocol_name(protocol: str) -> str:
    try:
        data = yaml.safe_load(protocol)
    except yaml.YAMLError:
        data = None
    name = data.get("name") if isinstance(data, dict) else None
    if not isinstance(name, str) or not name:
        raise HivedlabError("the job protocol has no name: cannot submit it")
    return name


def config_vcs(text: str) -> set[str]:
    data = yaml.safe_load(text) or {}
    return set((data.get("virtualClusters") or {}) if isinstance(data, dict) else {})


class PaiBackend:
    """`hivedlab.backends.protocol.Backend` on a real cluster. Build it with `hivedlab.backends.pai.open_backend`."""

    cluster = "pai"

    def __init__(
        self,
        writer: EvidenceWriter,
        clients: dict[str, PaiClient],
        state: RunState,
        *,
        hived_url: str,
        watcher: Any = None,
        run_info: RunInfo | None = None,
        view: LiveView | None = None,
        interactive: bool = False,
        poll_s: float = 5.0,
        switch_timeout_s: float = 900.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        ask: Callable[[str], str] = input,
    ) -> None:
        self.writer, self.clients, self.state = writer, clients, state
        self.hived_url, self.watcher, self.view = hived_url, watcher, view
        self.interactive, self.poll_s, self.switch_timeout_s = interactive, poll_s, switch_timeout_s
        self._sleep, self._clock, self._ask = sleep, clock, ask
        self._cache: dict[str, tuple[float, JobStatus, str]] = {}
        self.cache_s = min(STATUS_CACHE_S, poll_s)
        self._ran: set[str] = set()
        self.index = ObservedIndex()
        self.vcs: set[str] = set()
        self.run_info = run_info or RunInfo()
        # the config switch of a rehearsal cluster this machine runs (hivedlab.rehearsal.stack.switcher_for): it
        # stands for the admin's paictl commands, so a run switches by itself instead of asking
        self._switcher: ConfigSwitcher | None = None

    # ---------------------------------------------------------------- helpers

    def client(self, user: str) -> PaiClient:
        found = self.clients.get(user.lower())
        if found is None:
            raise PaiError(
                f"no OpenPAI token for member {user}: add `{user}: <token>` to the token file (the member logs in "
                "once to get it)",
                f"没有成员 {user} 的 OpenPAI token：请在 token 文件中加入 `{user}: <token>`（该成员登录一次即可获得）")
        return found

    def _any_client(self) -> PaiClient:
        return next(iter(self.clients.values()))

    def _say(self, text: str) -> None:
        if self.view:
            self.view.step(text)

    # ---------------------------------------------------------------- Backend

    def now(self) -> str:
        return format_time(datetime.now(timezone.utc))

    def use_config_switcher(self, switcher: ConfigSwitcher) -> None:
        self._switcher = switcher

    def switch_config(self, name: str, text: str) -> None:
        """Check that HiveD runs a config with this one's VCs; if not, show how to switch and wait (interactive)."""
        wanted = config_vcs(text)
        try:
            running = set(fetch_vcs(self.hived_url))
        except Exception as exc:  # any failure means HiveD's web service is not answering
            raise HivedlabError(
                f"HiveD's web service at {self.hived_url} does not answer ({type(exc).__name__}): the cluster may run "
                "the default scheduler (empty hivedscheduler.config) or HiveD is restarting; check `kubectl get pods "
                f"| grep hivedscheduler` / HiveD 调度器 {self.hived_url} 无响应："
                "集群可能在使用默认调度器或 HiveD 正在重启") from None
        if running != wanted:
            message_en = (f"the cluster runs HiveD VCs {sorted(running)}, the '{name}' config needs {sorted(wanted)}: "
                          f"run `hivedlab scheduler-config {name} --services-config ~/pai-deploy/cluster-cfg` and the "
                          "paictl commands it prints")
            message_zh = (f"集群当前的 VC 为 {sorted(running)}，'{name}' 配置需要 {sorted(wanted)}："
                          f"请运行 hivedlab scheduler-config {name} 并执行它打印的 paictl 命令")
            if self.run_info.rehearsal:  # no paictl there: its own step
                message_en = (f"the rehearsal cluster runs HiveD VCs {sorted(running)}, the '{name}' config needs "
                              f"{sorted(wanted)}: run `hivedlab rehearsal switch {name}` (what paictl's config push "
                              "does on a real cluster)")
                message_zh = (f"演练集群当前的 VC 为 {sorted(running)}，'{name}' 配置需要 {sorted(wanted)}："
                              f"请运行 hivedlab rehearsal switch {name}（相当于真实集群上 paictl 推送配置）")
            if self._switcher is not None:
                self._say(f"switching the rehearsal cluster to '{name}' as `hivedlab rehearsal switch {name}` "
                          f"does / 演练集群切换到 {name}")
                changed = self._switcher(name)
                if changed:
                    self._say(changed)
            elif not self.interactive:
                raise HivedlabError(f"{message_en} / {message_zh}")
            else:
                if self.view:
                    self.view.pause()
                self._ask(f"{message_en}\n{message_zh}\nPress Enter when done / 完成后按回车: ")
            self._say(f"waiting for HiveD to show {sorted(wanted)} / 等待 HiveD 使用新配置")
            if not wait_for_vcs(self.hived_url, wanted, self.switch_timeout_s, poll_s=self.poll_s,
                                sleep=self._sleep, clock=self._clock):
                raise HivedlabError(f"HiveD did not show the VCs {sorted(wanted)} within {self.switch_timeout_s:g} s")
        self.vcs = wanted
        self.check_idle()
        self._say(f"HiveD config '{name}' in place: VCs {', '.join(sorted(wanted))}")

    def restart_hived(self) -> None:
        """Refused: a restart with the same config changes nothing hivedlab can observe, so it could not confirm
        that the admin restarted HiveD, and the log would claim a restart that may not have happened."""
        raise HivedlabError(
            "a plan's `restart` step runs on the simulated cluster only: on a real cluster the admin restarts HiveD "
            "by hand (paictl.py service stop -n hivedscheduler, then service start -n hivedscheduler) and hivedlab "
            "cannot confirm it / `restart` 步骤只能在模拟集群上运行：真实集群上由管理员用 paictl 手动重启 HiveD，"
            "hivedlab 无法确认重启已发生")

    def check_idle(self) -> None:
        """The manual requires a cluster with no other unfinished job in the lab's VCs (this run's earlier
        experiments included: their leftovers would change this experiment's outcome)."""
        ours = {f"{j['user']}~{j['job_name']}" for j in self.state.ours()}
        busy = [
            f"{j.get('username')}~{j.get('name')} ({j.get('state')}, {j.get('virtualCluster')})"
            for j in self._any_client().list_jobs(states=UNFINISHED)
            if f"{j.get('username')}~{j.get('name')}" not in ours and (not self.vcs or j.get("virtualCluster")
                                                                          in self.vcs)
        ]
        if busy:
            raise HivedlabError(
                f"the cluster is not idle: {', '.join(busy[:5])}{' ...' if len(busy) > 5 else ''} unfinished; the "
                "experiments need an idle cluster - wait for them or ask their owners to stop them / 集群中还有未结束的"
                "任务，实验要求集群空闲：请等待它们结束或请其所有者停止")

    def submit(self, user: str, job_key: str, protocol: str) -> SubmitResult:
        job_name = _protocol_name(protocol)
        framework = framework_name(user, job_name)
        known = self.state.get(user, job_name)
        client = self.client(user)
        if known and known.get("status") in ("accepted", "pending"):
            # a resumed run: never submit the same job twice
            if client.job(user, job_name) is not None:
                self.state.put(user, job_name, job_key, "accepted")
                self._say(f"{user}~{job_name} was already submitted by this run (resumed)")
                return SubmitResult(user, job_key, job_name, framework,
                                    Reply(202, {"status": 202, "message": "already submitted by this run",
                                                "resumed": True}))
        self.state.put(user, job_name, job_key, "pending")
        self._say(f"submit {job_key} as {user}: {job_name}")
        reply = client.submit(protocol, job_name)
        if reply.ok:
            self.state.put(user, job_name, job_key, "accepted")
            return SubmitResult(user, job_key, job_name, framework, Reply(reply.status, reply.body))
        self.state.put(user, job_name, job_key, "rejected")
        if reply.status == 400 and reply.code == "InvalidProtocolError":
            # a rejection the lab studies (e.g. over quota): a reply, not a failure
            self._say(f"rejected: {reply.message[:200]}")
            return SubmitResult(user, job_key, job_name, framework, Reply(reply.status, reply.body))
        raise client.fail(reply, f"submit {job_name} as {user}")

    def stop(self, user: str, job_name: str) -> Reply:
        if self.state.get(user, job_name) is None:
            raise HivedlabError(f"{user}~{job_name} was not submitted by this run; hivedlab stops only its own jobs")
        reply: RestReply = self.client(user).stop(user, job_name)
        self._say(f"stop {user}~{job_name}: {reply.status}")
        self._cache.pop(f"{user}~{job_name}", None)
        return Reply(reply.status, reply.body)

    def job_status(self, user: str, job_name: str) -> JobStatus:
        key = f"{user}~{job_name}"
        cached = self._cache.get(key)
        if cached and self._clock() - cached[0] < self.cache_s:
            return cached[1]
        detail = self.client(user).job(user, job_name)
        framework = framework_name(user, job_name)
        waiting, ran, reason = self.index.for_framework(framework)
        if detail is None:
            status = JobStatus(user, job_name, "UNKNOWN")
        else:
            job = detail.get("jobStatus") or {}
            tasks = _tasks(detail)
            state = str(job.get("state") or "UNKNOWN")
            ran = ran or state in ("RUNNING", "SUCCEEDED") or any(t.state in ("RUNNING", "SUCCEEDED") for t in tasks)
            ran = ran or key in self._ran
            if ran:
                self._ran.add(key)
            status = JobStatus(user, job_name, state, int(job.get("retries") or 0), waiting, ran, tasks)
        self._cache[key] = (self._clock(), status, reason)
        return status

    def advance_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        deadline = self._clock() + timeout_s
        try:
            while True:
                if predicate():
                    self._refresh_view()
                    return True
                self._refresh_view()
                if self._clock() >= deadline:
                    return False
                self._sleep(min(self.poll_s, max(0.0, deadline - self._clock())))
        except KeyboardInterrupt:
            self._on_interrupt()
            raise

    def close(self) -> None:
        if self.view:
            self.view.close()
        stopper = getattr(self.watcher, "stop", None) or getattr(self.watcher, "close", None)
        if stopper:
            stopper()
        for client in self.clients.values():
            client.close()

    # ---------------------------------------------------------------- interaction

    def _refresh_view(self) -> None:
        if not self.view:
            return
        rows = []
        for entry in self.state.ours():
            key = f"{entry['user']}~{entry['job_name']}"
            cached = self._cache.get(key)
            if not cached:
                continue
            status, reason = cached[1], cached[2]
            rows.append(JobRow(status.user, status.job_name, status.state, status.retries,
                               tuple((f"{t.task_role}-{t.index}", t.node or "", t.state) for t in status.tasks),
                               reason))
        self.view.show(rows)

    def _on_interrupt(self) -> None:
        """Ctrl-C: offer to stop the unfinished jobs this run submitted; never anyone else's."""
        if self.view:
            self.view.pause()
        mine = []
        for entry in self.state.ours():
            cached = self._cache.get(f"{entry['user']}~{entry['job_name']}")
            if not cached or cached[1].state not in FINISHED_STATES:
                mine.append(entry)
        if not mine:
            return
        names = ", ".join(f"{e['user']}~{e['job_name']}" for e in mine)
        if confirm_on_interrupt(self._ask, self.interactive, f"Stop the jobs this run submitted ({names})",
                                "是否停止本次运行提交的任务？"):
            stopped = []
            for entry in mine:
                try:
                    self.client(entry["user"]).stop(entry["user"], entry["job_name"])
                    print(f"stopped {entry['user']}~{entry['job_name']}", file=sys.stderr)
                    stopped.append(f"{entry['user']}~{entry['job_name']}")
                except HivedlabError as exc:
                    print(f"could not stop {entry['user']}~{entry['job_name']}: {exc}", file=sys.stderr)
            if stopped:  # the run's end record then says `stopped`, who stopped what and when
                RunDir(self.state.path.parent.parent).record_user_stop(
                    UserStop("the run's Ctrl-C question", tuple(stopped), self.now()))
        else:
            print(f"left running: {names} (resume the run, or stop them with `hivedlab stop "
                  f"{self.state.path.parent.parent}`)", file=sys.stderr)


def _tasks(detail: dict[str, Any]) -> tuple[TaskStatus, ...]:
    tasks = []
    for role, body in (detail.get("taskRoles") or {}).items():
        for task in (body or {}).get("taskStatuses") or []:
            code = task.get("containerExitCode")
            tasks.append(TaskStatus(str(role), int(task.get("taskIndex") or 0), str(task.get("taskState") or "UNKNOWN"),
                                    task.get("containerNodeName") or None, int(task.get("retries") or 0),
                                    code if isinstance(code, int) else None))
    return tuple(tasks)
