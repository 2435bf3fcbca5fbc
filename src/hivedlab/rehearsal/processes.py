"""The rehearsal cluster's processes: which starts when, with what, and how each is known to be ready
(docs/rehearsal.md, "Order of start"; with `--kubeflow`, "Kubeflow's programs"). `Stack` is one `up` or config
switch of `hivedlab.rehearsal.stack`, which keeps the state; the secrets it makes are kept in the home's
`run/secrets.json` (mode 600: the Kubernetes admin token, OpenPAI's admin password, the JWT secret, the database
password).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from hivedlab.backends.pai.database import rehearsal_stall
from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import write_atomic
from hivedlab.basics.secrets import write_secret
from hivedlab.lab_group.inventory import Inventory
from hivedlab.lab_group.layouts import CONFIG_VCS, plan_layout
from hivedlab.models.openpai.naming import scheduler_name
from hivedlab.rehearsal import configs, kubeflow, probes
from hivedlab.rehearsal.kubeflow import KubeflowPrograms
from hivedlab.rehearsal.kubelet import untainted
from hivedlab.rehearsal.kubelet_loop import MERGE, workers_of
from hivedlab.rehearsal.programs import Programs
from hivedlab.rehearsal.settings import Settings
from hivedlab.rehearsal.supervisor import Supervisor

READY_S = 60.0
INIT_TRIES = 3
DB_PROCESSES = (("write-merger", "write-merger/index.js"), ("framework-watcher", "watcher/framework/index.js"),
                ("poller", "poller/index.js"))


def _secrets(settings: Settings) -> dict[str, str]:
    path = settings.paths.run / "secrets.json"
    if path.is_file():
        return dict(json.loads(path.read_text(encoding="utf-8")))
    values = {k: secrets.token_hex(16) for k in ("kube_token", "admin_password", "jwt_secret", "db_password")}
    write_secret(path, json.dumps(values))
    return values


def _exit_spec(programs: Programs) -> list[dict[str, Any]]:
    data = yaml.safe_load(programs.exit_spec.read_text(encoding="utf-8"))
    spec = data.get("spec") if isinstance(data, dict) else data
    if not isinstance(spec, list):
        raise HivedlabError(f"{programs.exit_spec} holds no list of exit codes (its `spec`)")
    return spec


class Stack:
    """One `up` (or switch): the settings, the programs, the supervisor and the secrets."""

    def __init__(self, settings: Settings, inventory: Inventory, programs: Programs) -> None:
        self.s, self.inventory, self.p = settings, inventory, programs
        self.run, self.ports = settings.paths.run, settings.ports
        self.sup = Supervisor(settings.paths.record, settings.paths.logs)
        self.secret = _secrets(settings)
        self.ca = self.run / "serving.crt"

    # -- files -------------------------------------------------------------------------------------------
    def prepare(self) -> None:
        run = self.run
        if not self.ca.is_file():
            done = subprocess.run(configs.certificate_argv(self.p.openssl, run / "serving.key", self.ca),
                                  capture_output=True, text=True, check=False)
            if done.returncode:
                raise HivedlabError(f"openssl could not make the serving certificate: {done.stderr.strip()[-200:]}")
            os.chmod(run / "serving.key", 0o600)
        token = self.secret["kube_token"]
        write_secret(run / "tokens.csv", configs.token_file(token))
        write_secret(self.s.paths.admin_token, token)
        write_secret(self.s.paths.kubeconfig, configs.kubeconfig(configs.apiserver_url(self.ports), self.ca, token))
        write_atomic(run / "group.yaml", configs.group_config())
        write_atomic(run / "k8s-job-exit-spec.yaml", yaml.safe_dump(_exit_spec(self.p), sort_keys=False))
        write_atomic(run / "frameworkcontroller.yaml", configs.fc_config(self.s.paths.kubeconfig, _exit_spec(self.p)))

    def _api_ok(self, path: str) -> bool:
        return probes.ok(configs.apiserver_url(self.ports) + path, ca=self.ca, token=self.secret["kube_token"])

    # -- Kubernetes ----------------------------------------------------------------------------------------
    def kubernetes(self) -> None:
        etcd = self.sup.start("etcd", configs.etcd_argv(self.p.etcd, self.run / "etcd", self.ports))
        self.sup.wait(etcd, lambda: probes.ok(f"http://127.0.0.1:{self.ports.etcd}/health"), READY_S)
        api = self.sup.start("kube-apiserver", configs.apiserver_argv(self.p.kube["kube-apiserver"], self.run,
                                                                     self.ports))
        self.sup.wait(api, lambda: self._api_ok("/readyz"), READY_S)
        # the apiserver makes the `default` namespace a moment after it is ready
        self.sup.wait(api, lambda: self._api_ok("/api/v1/namespaces/default"), READY_S)
        for path, body in configs.bootstrap_objects():
            status, answer = probes.send("POST", configs.apiserver_url(self.ports) + path, body, ca=self.ca,
                                         token=self.secret["kube_token"])
            if status not in (200, 201, 409):
                raise HivedlabError(f"the apiserver refused {body['kind']} {body['metadata']['name']}: HTTP {status}")
        kcm = self.sup.start("kube-controller-manager", configs.controller_manager_argv(
            self.p.kube["kube-controller-manager"], self.s.paths.kubeconfig, self.ports))
        self.sup.wait(kcm, lambda: probes.ok(f"https://127.0.0.1:{self.ports.controller_manager}/healthz"), READY_S)

    # -- PostgreSQL ------------------------------------------------------------------------------------------
    def _as_postgres(self) -> dict[str, Any]:
        """PostgreSQL refuses to run as root: as root, its processes run as the `postgres` account."""
        return {"user": "postgres", "group": "postgres"} if os.geteuid() == 0 else {}

    def postgres(self) -> None:
        """As root, PostgreSQL's data lives in a fresh folder under the system's temporary folder (the `postgres`
        account cannot enter root's home); `down` removes it."""
        owner = self._as_postgres()
        folder = self.run
        if owner:
            folder = Path(tempfile.mkdtemp(prefix="hivedlab-rehearsal-pg-"))
            shutil.chown(folder, "postgres", "postgres")
            write_atomic(self.run / "pg-folder", str(folder))
        data, sockets = folder / "postgres", folder / "pg-socket"
        for made in (data, sockets):
            made.mkdir(parents=True, mode=0o700)
            if owner:
                shutil.chown(made, "postgres", "postgres")
        done = subprocess.run([str(self.p.postgres_bin / "initdb"), "-D", str(data), "-U", "root",
                               "--auth=trust", "-E", "UTF8"], capture_output=True, text=True, check=False,
                              cwd="/", **owner)
        if done.returncode:
            raise HivedlabError(f"initdb failed: {(done.stderr or done.stdout).strip()[-300:]}")
        argv = [str(self.p.postgres_bin / "postgres"), "-D", str(data), "-p", str(self.ports.postgres),
                "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={sockets}"]
        if owner:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        pg = self.sup.start("postgresql", argv)
        self.sup.wait(pg, lambda: probes.port_open(self.ports.postgres), READY_S)
        deadline = time.monotonic() + READY_S
        while True:  # the port opens before the server takes connections ("the database system is starting up")
            created = subprocess.run([str(self.p.postgres_bin / "createdb"), "-h", "127.0.0.1", "-p",
                                      str(self.ports.postgres), "-U", "root", "openpai"],
                                     capture_output=True, text=True, check=False)
            if not created.returncode or "already exists" in created.stderr:
                return
            if "starting up" not in created.stderr or time.monotonic() > deadline:
                raise HivedlabError(f"createdb failed: {created.stderr.strip()[-300:]}")
            time.sleep(0.2)

    # -- HiveD and its schedulers -------------------------------------------------------------------------------
    def hived(self, config: str) -> None:
        layout = plan_layout(config, self.inventory)
        path = self.run / "hivedscheduler.yaml"
        write_atomic(path, configs.hived_config(layout.text, self.s.paths.kubeconfig, self.ports))
        env = {**os.environ, "CONFIG": str(path), "KUBECONFIG": str(self.s.paths.kubeconfig)}
        hived = self.sup.start("hivedscheduler", [str(self.p.hived), "--v=2", "--logtostderr"], env, cwd=self.run)
        self.sup.wait(hived, lambda: probes.ok(configs.hived_url(self.ports) + "/v1/inspect/clusterstatus"), READY_S)
        for index, vc in enumerate(CONFIG_VCS[config]):
            name = scheduler_name(vc)
            conf = self.run / f"{name}.yaml"
            write_atomic(conf, configs.scheduler_config(vc, index, self.s.paths.kubeconfig, self.ports))
            port = configs.scheduler_health_port(index, self.ports)
            started = self.sup.start(name, configs.scheduler_argv(self.p.kube["kube-scheduler"], conf, index,
                                                                  self.ports))
            self.sup.wait(started, lambda port=port: probes.ok(f"http://127.0.0.1:{port}/healthz"),  # type: ignore
                          READY_S)

    # -- FrameworkController, the database-controller, the rest-server -----------------------------------------
    def frameworkcontroller(self) -> None:
        env = {**os.environ, "KUBECONFIG": str(self.s.paths.kubeconfig)}
        fc = self.sup.start("frameworkcontroller", [str(self.p.fc)], env, cwd=self.run)
        self.sup.wait(fc, lambda: self._api_ok(
            "/apis/frameworkcontroller.microsoft.com/v1/namespaces/default/frameworks"), READY_S)

    def database_controller(self) -> None:
        env = {**os.environ, **configs.database_controller_env(self.run, self.ports, self.secret["db_password"])}
        folder = self.p.database_controller
        for _ in range(INIT_TRIES):  # its tables are created concurrently and may race: the pod's init container
            with (self.s.paths.logs / "database-initializer.log").open("ab") as log:  # is restarted, as here
                done = subprocess.run([self.p.node, "initializer/index.js"], cwd=folder, env=env, stdout=log,
                                      stderr=subprocess.STDOUT, check=False, timeout=READY_S)
            if not done.returncode:
                break
        else:
            raise HivedlabError("the database-controller's initializer failed (log: "
                                f"{self.s.paths.logs / 'database-initializer.log'})")
        for name, script in DB_PROCESSES:
            started = self.sup.start(f"database-controller-{name}", [self.p.node, script], env, cwd=folder)
            if name == "write-merger":
                self.sup.wait(started, lambda: probes.port_open(self.ports.write_merger), READY_S)

    def rest_server(self) -> None:
        env = {**os.environ, **configs.rest_server_env(self.run, self.ports, self.secret["admin_password"],
                                                       self.secret["jwt_secret"], self.secret["db_password"],
                                                       "hivedscheduler")}
        # its working folder is in the home's logs/: winston writes `server.log` there (src/config/logger.js, a
        # relative name), not into the user's programs; express reads `./docs/swagger.yaml` from it, hence the link
        folder = self.s.paths.logs / "rest-server"
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / "docs").is_symlink():
            (folder / "docs").symlink_to(self.p.rest_server / "docs")
        rest = self.sup.start("rest-server", [self.p.node, str(self.p.rest_server / "index.js")], env, cwd=folder)
        self.sup.wait(rest, lambda: probes.ok(self.pai_url + "/api/v2/info"), READY_S)

    def database(self, token_file: Path) -> None:
        """The rest-server reads its jobs from PostgreSQL: a job list that never answers fails here, naming the
        cause and the fix (`hivedlab.backends.pai.database`), instead of at the first run."""
        found = rehearsal_stall(self.pai_url, token_file, self.p.rest_server)
        if found is not None:
            raise found.error()

    @property
    def pai_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.rest_server}"

    def admin_login(self) -> Path:
        """OpenPAI's admin logs in once; its token is what `hivedlab accounts --admin-token-file` takes."""
        deadline = time.monotonic() + READY_S
        while True:  # the rest-server creates its admin user after it starts answering
            status, body = probes.send("POST", self.pai_url + "/api/v2/authn/basic/login",
                                       {"username": configs.ADMIN_USER, "password": self.secret["admin_password"],
                                        "expiration": 7 * 86400}, ca=None, token=None)
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if status != 200 or not isinstance(body, dict) or "token" not in body:
            raise HivedlabError(f"OpenPAI's admin could not log in: HTTP {status} {str(body)[:200]}")
        path = self.run / "pai-admin-token"
        write_secret(path, str(body["token"]))
        return path

    # -- Kubeflow (up --kubeflow) --------------------------------------------------------------------------------
    def kubeflow(self, programs: KubeflowPrograms) -> None:
        """The master's taint, the CRDs and the default Queue, then the default scheduler, kube-batch and
        tf-operator."""
        api = configs.apiserver_url(self.ports)
        for master in (w.name for w in workers_of(self.inventory).values() if w.master):
            taint = {"spec": {"taints": [kubeflow.MASTER_TAINT]}}
            status, _ = probes.send("PATCH", f"{api}/api/v1/nodes/{master}", taint, ca=self.ca,
                                    token=self.secret["kube_token"], content_type=MERGE)
            if status != 200:
                raise HivedlabError(f"the apiserver refused the master's taint on {master}: HTTP {status}")
        for path in programs.crds:
            for crd in (d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if isinstance(d, dict)):
                status, _ = probes.send("POST", f"{api}/apis/{crd.get('apiVersion')}/customresourcedefinitions", crd,
                                        ca=self.ca, token=self.secret["kube_token"])
                if status not in (200, 201, 409):
                    raise HivedlabError(f"the apiserver refused the CRD of {path}: HTTP {status}")
        deadline = time.monotonic() + READY_S
        while not all(self._api_ok(p) for p in kubeflow.SERVED):
            if time.monotonic() > deadline:
                raise HivedlabError(f"the CRDs are not served within {READY_S:g} s: {', '.join(kubeflow.SERVED)}")
            time.sleep(0.2)
        status, _ = probes.send("POST", f"{api}/apis/scheduling.incubator.k8s.io/v1alpha1/queues",
                                kubeflow.DEFAULT_QUEUE, ca=self.ca, token=self.secret["kube_token"])
        if status not in (200, 201, 409):
            raise HivedlabError(f"the apiserver refused kube-batch's default Queue: HTTP {status}")
        config = self.run / "default-scheduler.yaml"
        write_atomic(config, kubeflow.default_scheduler_config(self.s.paths.kubeconfig, self.ports))
        scheduler = self.sup.start("default-scheduler", kubeflow.default_scheduler_argv(
            self.p.kube["kube-scheduler"], config, self.ports))
        self.sup.wait(scheduler, lambda: probes.ok(kubeflow.default_scheduler_health(self.ports)), READY_S)
        batch = self.sup.start("kube-batch", kubeflow.kube_batch_argv(programs, self.s.paths.kubeconfig, self.ports))
        self.sup.wait(batch, lambda: probes.port_open(self.ports.kube_batch), READY_S)
        operator = self.sup.start("tf-operator", kubeflow.tf_operator_argv(programs),
                                  {**os.environ, "KUBECONFIG": str(self.s.paths.kubeconfig)})
        self.sup.wait(operator, lambda: "Started workers" in Path(operator.log).read_text(errors="replace"),
                      READY_S)

    def kubelets(self, inventory_path: str | None, speedup: float) -> None:
        argv = [sys.executable, "-m", "hivedlab.rehearsal.kubelet_loop", "--kubeconfig", str(self.s.paths.kubeconfig),
                "--speedup", f"{speedup:g}", "--faults", str(self.s.paths.faults)]
        if inventory_path:
            argv += ["--inventory", inventory_path]
        names = list(workers_of(self.inventory))
        started = self.sup.start("emulated-kubelets", argv)
        self.sup.wait(started, lambda: all(self._node_ready(n) for n in names), READY_S)

    def _node_ready(self, name: str) -> bool:
        status, node = probes.get(f"{configs.apiserver_url(self.ports)}/api/v1/nodes/{name}", ca=self.ca,
                                  token=self.secret["kube_token"])
        if status != 200 or not isinstance(node, dict):
            return False
        conditions = (node.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions) and \
            untainted(node) is None
