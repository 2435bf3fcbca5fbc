"""The backend for a plain Kubernetes cluster with Kubeflow's TFJob and a gang scheduler, no OpenPAI and no HiveD
(docs/kubeflow-on-kubernetes.md).

- Each experiment runs in a namespace of its own, made here and removed when the run is over; the manifests (a
  PodGroup and a TFJob per job) are created in it with the kubernetes client, as `kubectl apply` would.
- What the cluster does (pods, core/v1 Events, TFJobs, PodGroups) is recorded by the shared watcher
  (`hivedlab.backends.watcher`); the backend reads the objects as they are written (`Observed`) to answer `job_status`.
- A stop deletes the TFJob and its PodGroup (a TFJob cannot be paused; the operator's pods go with it).
- On Ctrl-C it asks before removing what it created; otherwise it removes everything when the run ends, and waits a
  while for the pods' deletions to reach the log.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import yaml

from hivedlab.backends.k8s.observed import Observed
from hivedlab.backends.protocol import (
    FINISHED_STATES,
    ConfigSwitcher,
    JobStatus,
    Reply,
    RunInfo,
    SubmitResult,
    confirm_on_interrupt,
)
from hivedlab.backends.watcher import close_api_client
from hivedlab.basics.errors import HivedlabError
from hivedlab.evidence import format_time

PLURALS = {"TFJob": "tfjobs", "PodGroup": "podgroups"}
MANAGED_BY = {"app.kubernetes.io/managed-by": "hivedlab"}
NO_HIVED_CONFIG = ("a plain Kubernetes cluster runs no HiveD: a plan that switches HiveD's config runs on "
                   "--cluster sim or pai / 普通 Kubernetes 集群上没有 HiveD，切换 HiveD 配置的实验请用 sim 或 pai")


def api_error_text(exc: Any) -> str:
    """The API server's message of an ApiException (its Status body), else the exception's first line."""
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        body = {}
    message = body.get("message") if isinstance(body, dict) else None
    return str(message or f"HTTP {exc.status} {exc.reason}").splitlines()[0][:300]


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class K8sBackend:
    """`hivedlab.backends.protocol.Backend` on a plain Kubernetes cluster. Build it with
    `hivedlab.backends.k8s.open_backend`."""

    cluster = "k8s"

    def __init__(
        self,
        api_client: Any,
        namespace: str,
        *,
        observed: Observed | None = None,
        watcher: Any = None,
        run_info: RunInfo | None = None,
        interactive: bool = False,
        poll_s: float = 5.0,
        cleanup_timeout_s: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        ask: Callable[[str], str] = input,
        say: Callable[[str], None] = _say,
        now: Callable[[], str] | None = None,
    ) -> None:
        from kubernetes import client  # imported here: the kubernetes package is slow to import

        self.api_client, self.namespace = api_client, namespace
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.observed = observed or Observed()
        self.watcher = watcher
        self.interactive, self.poll_s, self.cleanup_timeout_s = interactive, poll_s, cleanup_timeout_s
        self._sleep, self._clock, self._ask, self._say = sleep, clock, ask, say
        self._now = now
        self.created: dict[str, list[tuple[str, str, str, str]]] = {}  # job -> (group, version, plural, name)
        self.submitted: dict[str, str] = {}  # TFJob name -> user
        self.stopped: set[str] = set()
        self.remove = True  # remove what the run created when it is over (False: the user said no on Ctrl-C)
        self.run_info = run_info or RunInfo()

    # ---------------------------------------------------------------- Backend

    def now(self) -> str:
        return self._now() if self._now else format_time(datetime.now(timezone.utc))

    def switch_config(self, name: str, text: str) -> None:
        raise HivedlabError(NO_HIVED_CONFIG)

    def use_config_switcher(self, switcher: ConfigSwitcher) -> None:
        """Refused: there is no HiveD config to switch."""
        raise HivedlabError(NO_HIVED_CONFIG)

    def restart_hived(self) -> None:
        raise HivedlabError("a plain Kubernetes cluster runs no HiveD to restart / "
                            "普通 Kubernetes 集群上没有 HiveD 可重启")

    def submit(self, user: str, job_key: str, protocol: str) -> SubmitResult:
        """Create the manifests' objects (PodGroup first, then the TFJob) in the run's namespace."""
        documents = [doc for doc in yaml.safe_load_all(protocol) if isinstance(doc, dict)]
        tfjobs = [doc for doc in documents if doc.get("kind") == "TFJob"]
        if len(tfjobs) != 1 or any(doc.get("kind") not in PLURALS for doc in documents):
            raise HivedlabError(f"{job_key}: a job's manifests are one TFJob and its PodGroup, not "
                                f"{', '.join(str(d.get('kind')) for d in documents) or 'nothing'}")
        name = str(tfjobs[0]["metadata"]["name"])
        documents.sort(key=lambda doc: doc.get("kind") != "PodGroup")
        created: list[str] = []
        resumed = self.observed.known(name)  # an earlier session made it (and may have removed it): never again
        for doc in documents:
            group, version = str(doc["apiVersion"]).split("/")
            plural, obj_name = PLURALS[str(doc["kind"])], str(doc["metadata"]["name"])
            self.created.setdefault(name, []).append((group, version, plural, obj_name))
            if resumed:
                continue
            status, message = self._create(group, version, plural, doc)
            if status >= 300 and status != 409:
                return SubmitResult(user, job_key, name, name, Reply(status, {"status": status, "message": message,
                                                                              "created": created}))
            resumed = resumed or status == 409  # made by an earlier session of this run (the namespace is ours)
            if status != 409:
                created.append(f"{doc['kind']}/{obj_name}")
        self.submitted[name] = user
        if resumed and not created:
            self._say(f"{name} was already created by this run (resumed)")
            return SubmitResult(user, job_key, name, name, Reply(202, {
                "status": 202, "message": "already created by this run", "resumed": True}))
        self._say(f"created {', '.join(created)} in namespace {self.namespace} as {user}")
        return SubmitResult(user, job_key, name, name, Reply(201, {"status": 201, "created": created}))

    def _api(self, what: str, call: Callable[[], Any]) -> tuple[int, str]:
        """(status, message) of one API call: success and 4xx answers are replies; anything else is one line."""
        from kubernetes.client.exceptions import ApiException

        try:
            call()
        except ApiException as exc:
            if exc.status and 400 <= exc.status < 500:
                return int(exc.status), api_error_text(exc)
            raise HivedlabError(f"the API server failed to {what}: {api_error_text(exc)}") from None
        except Exception as exc:  # a refused connection, TLS, a timeout: one line, not a traceback
            raise HivedlabError(f"cannot {what}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from None
        return 200, ""

    def _create(self, group: str, version: str, plural: str, body: dict[str, Any]) -> tuple[int, str]:
        status, message = self._api(f"create {plural} in {self.namespace}", lambda: (
            self.custom.create_namespaced_custom_object(group, version, self.namespace, plural, body)))
        return (201, "") if status == 200 else (status, message)

    def stop(self, user: str, job_name: str) -> Reply:
        """Delete the TFJob and its PodGroup: the operator's pods are deleted with the TFJob."""
        if job_name not in self.submitted:
            raise HivedlabError(f"{job_name} was not created by this run; hivedlab stops only its own jobs")
        results = [self._delete(*entry) for entry in reversed(self.created.get(job_name, []))]
        self.stopped.add(job_name)
        self._say(f"deleted TFJob {job_name} (stopped)")
        status = max((status for status, _ in results), default=200)
        return Reply(status, {"status": status, "deleted": [name for _, name in results]})

    def _delete(self, group: str, version: str, plural: str, name: str) -> tuple[int, str]:
        status, message = self._api(f"delete {plural}/{name} in {self.namespace}", lambda: (
            self.custom.delete_namespaced_custom_object(group, version, self.namespace, plural, name,
                                                        propagation_policy="Foreground")))
        if status not in (200, 404):  # 404: already gone
            raise HivedlabError(f"cannot delete {plural}/{name} in {self.namespace}: {message}")
        return 200, f"{plural}/{name}"

    def job_status(self, user: str, job_name: str) -> JobStatus:
        if job_name not in self.submitted:
            return JobStatus(user, job_name, "UNKNOWN")
        state, gone, waiting, ran = self.observed.job(job_name)
        if job_name in self.stopped and (gone or state is None):
            state = "STOPPED"
        elif gone and state not in FINISHED_STATES:
            state = "STOPPED"  # deleted by someone else before it finished
        return JobStatus(user, job_name, state or "WAITING", waiting=waiting,
                         ran=ran or state in ("RUNNING", "SUCCEEDED"))

    def advance_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        deadline = self._clock() + timeout_s
        try:
            while not predicate():
                if self._clock() >= deadline:
                    return False
                self._sleep(min(self.poll_s, max(0.0, deadline - self._clock())))
            return True
        except KeyboardInterrupt:
            self._on_interrupt()
            raise

    def close(self) -> None:
        try:
            if self.remove:
                self._remove_everything()
        finally:
            stopper = getattr(self.watcher, "stop", None)
            if stopper:
                stopper()
            self._delete_namespace()
            close_api_client(self.api_client)

    # ---------------------------------------------------------------- cleaning up

    def _on_interrupt(self) -> None:
        """Ctrl-C: ask before removing what this run created; never anything else."""
        if not self.created:
            return
        names = ", ".join(self.created)
        self.remove = confirm_on_interrupt(
            self._ask, self.interactive, f"Remove what this run created in namespace {self.namespace} ({names})",
            "是否删除本次运行创建的对象？")
        if not self.remove:
            self._say(f"left on the cluster: {names} in namespace {self.namespace} (remove them with "
                      f"`kubectl delete namespace {self.namespace}`)")

    def _remove_everything(self) -> None:
        """Delete every TFJob and PodGroup the run made, then wait (bounded) until the watcher saw its pods go."""
        for job_name, entries in self.created.items():
            if job_name in self.stopped:
                continue
            for entry in reversed(entries):
                self._delete(*entry)
        deadline = self._clock() + self.cleanup_timeout_s
        while self.observed.pods_left() and self._clock() < deadline:
            self._sleep(min(self.poll_s, 1.0))
        if self.observed.pods_left():
            self._say(f"{self.observed.pods_left()} pod(s) of namespace {self.namespace} were still terminating when "
                      "the run ended; the namespace's removal takes them")

    def _delete_namespace(self) -> None:
        if not self.remove:
            return
        try:
            status, message = self._api(f"delete namespace {self.namespace}",
                                        lambda: self.core.delete_namespace(self.namespace))
        except HivedlabError as exc:
            status, message = 0, str(exc)
        if status not in (200, 404):
            self._say(f"could not remove namespace {self.namespace}: {message}")
