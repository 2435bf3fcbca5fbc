"""The rehearsal cluster's configuration, rendered as text and argument lists (pure: no files, no processes).

Each follows what OpenPAI v1.2.0 deploys (docs/rehearsal.md, "What each program is given"), on loopback ports, with
the differences Kubernetes 1.20 needs: a token file and a self-signed serving certificate instead of the insecure
port, and the per-VC schedulers' extender in a `kubescheduler.config.k8s.io/v1beta1` file instead of `policy.cfg`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hivedlab.models.openpai.naming import scheduler_name
from hivedlab.rehearsal.programs import PAI_VERSION
from hivedlab.rehearsal.settings import Ports

LOOPBACK = "127.0.0.1"
MANAGED_RESOURCE = "hivedscheduler.microsoft.com/pod-scheduling-enable"  # OpenPAI's policy.cfg, ignoredByScheduler
PAI_NAMESPACES = ("pai-user-v2", "pai-group", "pai-user-token")  # the rest-server's users, groups and tokens
ADMIN_USER = "admin"
# OpenPAI's rest-server defaults (src/rest-server/config/rest-server.yaml at v1.2.0)
REST_DEFAULTS = {"RATE_LIMIT_API_PER_MIN": "600", "RATE_LIMIT_LIST_JOB_PER_MIN": "60",
                 "RATE_LIMIT_SUBMIT_JOB_PER_HOUR": "60", "SCHEDULE_PORT_START": "15000", "SCHEDULE_PORT_END": "40000",
                 "JWT_TOKEN_EXPIRE_TIME": "7d", "SQL_MAX_CONNECTION": "50", "DEBUGGING_RESERVATION_SECONDS": "604800"}


def apiserver_url(ports: Ports) -> str:
    return f"https://{LOOPBACK}:{ports.apiserver}"


def hived_url(ports: Ports) -> str:
    return f"http://{LOOPBACK}:{ports.hived}"


def token_file(token: str) -> str:
    """kube-apiserver's --token-auth-file: token,user,uid,"groups" (the admin is in system:masters)."""
    return f'{token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n'


def kubeconfig(server: str, ca: Path, token: str) -> str:
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "rehearsal",
        "clusters": [{"name": "rehearsal", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": ADMIN_USER, "user": {"token": token}}],
        "contexts": [{"name": "rehearsal", "context": {"cluster": "rehearsal", "user": ADMIN_USER}}],
    }
    return yaml.safe_dump(config, sort_keys=False)


def certificate_argv(openssl: str, key: Path, cert: Path) -> list[str]:
    """One self-signed certificate for 127.0.0.1: the apiserver's serving certificate and the clients' CA."""
    return [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
            "-days", "365", "-subj", "/CN=hivedlab-rehearsal", "-addext",
            f"subjectAltName=IP:{LOOPBACK},DNS:localhost"]


def etcd_argv(etcd: str, data: Path, ports: Ports) -> list[str]:
    client, peer = f"http://{LOOPBACK}:{ports.etcd}", f"http://{LOOPBACK}:{ports.etcd_peer}"
    return [etcd, "--name", "rehearsal", "--data-dir", str(data), "--listen-client-urls", client,
            "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"rehearsal={peer}", "--log-level", "warn"]


# Kubernetes 1.20 stops filling metadata.selfLink (the RemoveSelfLink gate turned on); the course's 1.14/1.15 fill it.
# kube-batch v0.4's event recorder (client-go 1.13, tools/reference.GetReference) needs it to name an object: without
# it, every event kube-batch writes is dropped ("selfLink was empty, can't make reference").
SELF_LINK = "--feature-gates=RemoveSelfLink=false"


def apiserver_argv(binary: Path, run: Path, ports: Ports) -> list[str]:
    """ServiceAccount admission is off: no token controller makes the namespaces' default service accounts."""
    return [str(binary), f"--etcd-servers=http://{LOOPBACK}:{ports.etcd}", f"--bind-address={LOOPBACK}",
            f"--advertise-address={LOOPBACK}", f"--secure-port={ports.apiserver}",
            f"--tls-cert-file={run / 'serving.crt'}", f"--tls-private-key-file={run / 'serving.key'}",
            f"--token-auth-file={run / 'tokens.csv'}", "--authorization-mode=RBAC",
            "--service-cluster-ip-range=10.96.0.0/24", "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={run / 'serving.key'}",
            f"--service-account-signing-key-file={run / 'serving.key'}",
            "--disable-admission-plugins=ServiceAccount", "--allow-privileged=true", SELF_LINK, "--v=1"]


def controller_manager_argv(binary: Path, kubeconfig_path: Path, ports: Ports) -> list[str]:
    """The garbage collector (Framework -> ConfigMap -> Pod ownership), namespaces and pod GC: nothing else."""
    return [str(binary), f"--kubeconfig={kubeconfig_path}", "--controllers=garbagecollector,namespace,podgc",
            f"--bind-address={LOOPBACK}", f"--secure-port={ports.controller_manager}", "--port=0",
            "--leader-elect=false", "--v=1"]


def scheduler_health_port(index: int, ports: Ports) -> int:
    """The i-th VC's kube-scheduler's plain-HTTP health and metrics port (its HTTPS one is `scheduler_base + i`)."""
    return ports.scheduler_base + 50 + index


def scheduler_config(vc: str, index: int, kubeconfig_path: Path, ports: Ports) -> str:
    """OpenPAI's per-VC kube-scheduler with HiveD as its extender (policy.cfg's fields, in v1beta1's words)."""
    health = f"{LOOPBACK}:{scheduler_health_port(index, ports)}"
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1beta1", "kind": "KubeSchedulerConfiguration",
        "healthzBindAddress": health, "metricsBindAddress": health,
        "clientConnection": {"kubeconfig": str(kubeconfig_path)},
        "leaderElection": {"leaderElect": False},
        "percentageOfNodesToScore": 100,
        "profiles": [{"schedulerName": scheduler_name(vc)}],
        "extenders": [{
            "urlPrefix": f"{hived_url(ports)}/v1/extender", "filterVerb": "filter", "preemptVerb": "preempt",
            "bindVerb": "bind", "enableHTTPS": False, "httpTimeout": "5s", "nodeCacheCapable": True,
            "ignorable": False, "managedResources": [{"name": MANAGED_RESOURCE, "ignoredByScheduler": True}],
        }],
    }
    return yaml.safe_dump(config, sort_keys=False)


def scheduler_argv(binary: Path, config: Path, index: int, ports: Ports) -> list[str]:
    return [str(binary), f"--config={config}", "--port=0", f"--bind-address={LOOPBACK}",
            f"--secure-port={ports.scheduler_base + index}", "--v=2"]


def hived_config(layout_text: str, kubeconfig_path: Path, ports: Ports) -> str:
    """OpenPAI's hivedscheduler.yaml: the web service, the 50 ms waiting block, then the group's config."""
    head = {"webServerAddress": f"{LOOPBACK}:{ports.hived}", "waitingPodSchedulingBlockMilliSec": 50,
            "kubeConfigFilePath": str(kubeconfig_path)}
    return yaml.safe_dump(head, sort_keys=False) + layout_text


def _pod_pattern(pattern: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: pattern[k] for k in ("reasonRegex", "messageRegex") if k in pattern}
    containers = []
    for container in pattern.get("containers") or []:
        item = {k: container[k] for k in ("nameRegex", "reasonRegex", "messageRegex") if k in container}
        code = container.get("exitCode")
        item["codeRange"] = {"min": code, "max": code} if code is not None else {"min": 1}
        containers.append(item)
    if containers:
        out["containers"] = containers
    return out


def pod_failure_spec(exit_spec: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """FrameworkController's podFailureSpec from OpenPAI's job exit spec, as OpenPAI's FC ConfigMap renders it:
    codes below -999 or above 0 only; the behaviour as attributes; the controller's pod patterns, else any
    container that exits with the code."""
    attributes = {"TRANSIENT": ["Transient"], "TRANSIENT_CONFLICT": ["Transient", "Conflict"],
                  "PERMANENT": ["Permanent"]}
    spec = []
    for item in exit_spec:
        code = int(item["code"])
        if -999 <= code <= 0:
            continue
        entry: dict[str, Any] = {"code": code}
        if "phrase" in item:
            entry["phrase"] = item["phrase"]
        if item.get("behavior") in attributes:
            entry["type"] = {"attributes": attributes[item["behavior"]]}
        patterns = (item.get("pattern") or {}).get("controllerPodPatterns")
        entry["podPatterns"] = ([_pod_pattern(p) for p in patterns] if patterns else
                                [{"containers": [{"nameRegex": "(?ms).*", "messageRegex": "(?ms).*",
                                                  "codeRange": {"min": code, "max": code}}]}])
        spec.append(entry)
    return spec


def fc_config(kubeconfig_path: Path, exit_spec: list[dict[str, Any]]) -> str:
    """OpenPAI's frameworkcontroller.yaml (its ConfigMap template), reaching the apiserver through a kubeconfig."""
    config = {"kubeConfigFilePath": str(kubeconfig_path), "kubeClientQps": 200, "kubeClientBurst": 300,
              "workerNumber": 500, "largeFrameworkCompression": True, "frameworkCompletedRetainSec": 2147483600,
              "podFailureSpec": pod_failure_spec(exit_spec)}
    return yaml.safe_dump(config, sort_keys=False)


def group_config() -> str:
    """The rest-server's group.yaml with OpenPAI's authentication defaults (basic groups, admingroup, default)."""
    config = {
        "groupDataSource": "basic",
        "adminGroup": {"groupname": "admingroup", "description": "admin's group", "externalName": "",
                       "extension": {"acls": {"virtualClusters": [], "admin": True}}},
        "defaultGroup": {"groupname": "default", "description": "group for default vc", "externalName": "",
                         "extension": {"acls": {"virtualClusters": ["default"], "admin": False}}},
        "grouplist": [],
    }
    return yaml.safe_dump(config, sort_keys=False)


def database_url(ports: Ports, password: str) -> str:
    return f"postgresql://root:{password}@{LOOPBACK}:{ports.postgres}/openpai"


def database_controller_env(run: Path, ports: Ports, password: str) -> dict[str, str]:
    """What OpenPAI's database-controller StatefulSet gives each of its processes (RBAC on, out of the cluster)."""
    return {"LOG_LEVEL": "info", "K8S_CONNECTION_TIMEOUT_SECOND": "120",
            "WRITE_MERGER_CONNECTION_TIMEOUT_SECOND": "120",
            "RETAIN_MODE_ENABLED": "true", "RBAC_IN_CLUSTER": "true",
            "CUSTOM_K8S_API_SERVER_URL": apiserver_url(ports), "CUSTOM_K8S_CA_FILE": str(run / "serving.crt"),
            "CUSTOM_K8S_TOKEN_FILE": str(run / "admin-token"), "DB_CONNECTION_STR": database_url(ports, password),
            "MAX_DB_CONNECTION": "10", "PORT": str(ports.write_merger), "INTERVAL_SECOND": "120",
            "WRITE_MERGER_URL": f"http://{LOOPBACK}:{ports.write_merger}", "MAX_RPC_CONCURRENCY": "50",
            "NODE_TLS_REJECT_UNAUTHORIZED": "1"}


def rest_server_env(run: Path, ports: Ports, admin_password: str, jwt_secret: str, db_password: str,
                    scheduler: str) -> dict[str, str]:
    """OpenPAI's rest-server Deployment's environment, its files where the rehearsal keeps them."""
    return {
        **REST_DEFAULTS,
        "NODE_ENV": "production", "SERVER_PORT": str(ports.rest_server), "LAUNCHER_TYPE": "k8s",
        "LAUNCHER_PRIORITY_CLASS": "true", "LAUNCHER_RUNTIME_IMAGE": "openpai/openpai-runtime:v1.2.0",
        "LAUNCHER_RUNTIME_IMAGE_PULL_SECRETS": "pai-secret", "LAUNCHER_SCHEDULER": scheduler,
        "HIVED_WEBSERVICE_URI": hived_url(ports), "LOG_MANAGER_PORT": "9103", "JWT_SECRET": jwt_secret,
        "WEBPORTAL_URL": f"http://{LOOPBACK}:{ports.rest_server}", "AUTHN_METHOD": "basic",
        "DEFAULT_PAI_ADMIN_USERNAME": ADMIN_USER, "DEFAULT_PAI_ADMIN_PASSWORD": admin_password,
        "K8S_APISERVER_URI": apiserver_url(ports), "AZ_RDMA": "false", "RBAC_IN_CLUSTER": "true",
        "K8S_KUBECONFIG_PATH": str(run / "kubeconfig"), "SQL_CONNECTION_STR": database_url(ports, db_password),
        "JOB_HISTORY": "false", "WRITE_MERGER_URL": f"http://{LOOPBACK}:{ports.write_merger}",
        "HIVED_SPEC_PATH": str(run / "hivedscheduler.yaml"), "GROUP_CONFIG_PATH": str(run / "group.yaml"),
        "PAI_REST_SERVER_EXIT_SPEC_PATH": str(run / "k8s-job-exit-spec.yaml"),
    }


def bootstrap_objects() -> list[tuple[str, dict[str, Any]]]:
    """What OpenPAI's deployment creates before the rest-server starts: (API path to POST to, object)."""
    objects: list[tuple[str, dict[str, Any]]] = [
        ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        for name in PAI_NAMESPACES
    ]
    objects.append(("/api/v1/namespaces/default/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pai-version", "namespace": "default"},
        "data": {"PAI.VERSION": PAI_VERSION}}))
    return objects
