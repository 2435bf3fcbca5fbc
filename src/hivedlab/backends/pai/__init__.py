"""The real-cluster backend (OpenPAI v1.2.0 + HiveD v0.3.4). `open_backend` builds it for one experiment.

Connection settings come from the arguments, else the environment:
- `HIVEDLAB_PAI_URL` (default `http://<master ip>` from the inventory, through pylon);
- `HIVEDLAB_PAI_TOKEN`, or `HIVEDLAB_PAI_TOKEN_FILE` (chmod 600; one token or `user: token` lines);
- `KUBECONFIG` (default `~/pai-deploy/kube/config`, what quick-start writes), `HIVEDLAB_KUBE_CONTEXT`;
- `HIVEDLAB_HIVED_URL` (default `http://<master ip>:30096`);
- `HIVEDLAB_PAI_POLL_S`: seconds between job-status polls while waiting (default 5).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict

from hivedlab.backends.pai.backend import PaiBackend, RunState, _TapWriter
from hivedlab.backends.pai.hived_inspect import hived_url as default_hived_url
from hivedlab.backends.pai.live import LiveView
from hivedlab.backends.pai.stop import StopResult, jobs_left, run_state, stop_hint, stop_jobs, submitted_jobs
from hivedlab.backends.pai.tokens import check_tokens, load_tokens, token_source
from hivedlab.backends.watcher import LISTED_WITHIN_S, Watcher, make_api_client
from hivedlab.basics.errors import HivedlabError
from hivedlab.evidence import EvidenceWriter
from hivedlab.group.inventory import load_inventory
from hivedlab.models.openpai.rest import PaiClient, PaiError, RestCall

__all__ = ["PaiBackend", "open_backend", "leftover_note", "stop_run"]

DEFAULT_KUBECONFIG = "~/pai-deploy/kube/config"
# The label of a node whose kubelet and GPUs are emulated (the rehearsal cluster, docs/rehearsal.md): a run that sees
# one says in run.json `cluster_kind: {kind: rehearsal, emulated_nodes: [...]}`, so grading can tell it apart.
EMULATED_NODE_LABEL = "hivedlab.rehearsal/emulated"


def emulated_nodes(kubeconfig: Path, context: str | None) -> list[str]:
    """The cluster's nodes labelled as emulated (empty on a real cluster, or when the nodes cannot be listed)."""
    try:
        from kubernetes import client

        api = client.CoreV1Api(make_api_client(str(kubeconfig), context))
        nodes = api.list_node(label_selector=f"{EMULATED_NODE_LABEL}=true", _request_timeout=10)
    except Exception:  # noqa: BLE001 - no permission to list nodes, no answer: nothing to say about them
        return []
    return sorted(n.metadata.name for n in nodes.items)


def _master_ip(inventory: Any) -> str | None:
    for member in getattr(inventory, "members", ()):
        if "master" in member.roles and member.ip:
            return str(member.ip)
    return None


def pai_address(inventory: Any, pai_url: str | None, env: dict[str, str]) -> str:
    """The rest-server's address: the argument, `HIVEDLAB_PAI_URL`, else the inventory master's (through pylon)."""
    master = _master_ip(inventory)
    url = pai_url or env.get("HIVEDLAB_PAI_URL") or (f"http://{master}" if master else None)
    if not url:
        raise HivedlabError("no OpenPAI address: set HIVEDLAB_PAI_URL or give the master's ip in the inventory")
    return url


def _run_clients(run_dir: Path, state: RunState, env: dict[str, str], pai_url: str | None,
                 token_file: str | Path | None, retries: int = 4) -> dict[str, PaiClient]:
    """One client per member with a token, for the run in `run_dir` (its inventory, calls logged in its pai/)."""
    inventory = load_inventory(str(run_dir / "inventory.yaml")) if (run_dir / "inventory.yaml").is_file() else None
    url = pai_address(inventory, pai_url, env)
    tokens = load_tokens(None, token_file, env)
    return {user: PaiClient(url, tok, retries=retries, on_call=_call_logger(state, user),
                            token_source=token_source(user, tokens.origins.get(user)))
            for user, tok in tokens.tokens.items()}


def _call_logger(state: RunState, user: str) -> Callable[[RestCall], None]:
    """What a member's client calls with each of its calls: the run state logs it under the member's name."""
    return lambda call: state.log_call(user, call)


class _SleepOverride(TypedDict, total=False):
    sleep: Callable[[float], None]


def stop_run(run_dir: str | Path, *, pai_url: str | None = None, token_file: str | Path | None = None,
             environ: dict[str, str] | None = None) -> StopResult:
    """`hivedlab stop RUN_DIR`: stop the jobs the run submitted that still wait or run, each as its owner."""
    folder = Path(run_dir)
    state = run_state(folder)
    if not submitted_jobs(state):
        return StopResult()
    clients = _run_clients(folder, state, dict(os.environ) if environ is None else environ, pai_url, token_file)
    try:
        return stop_jobs(state, clients)
    finally:
        for client in clients.values():
            client.close()


def leftover_note(run_dir: str | Path, *, environ: dict[str, str] | None = None) -> str:
    """After a run that ended on an error: its jobs still on the cluster and the command that stops them ("" when
    none is left); when the cluster cannot be asked (one try: the run already failed), the command all the same."""
    folder = Path(run_dir)
    try:
        state = run_state(folder)
    except HivedlabError:
        return ""
    if not submitted_jobs(state):
        return ""
    try:
        clients = _run_clients(folder, state, dict(os.environ) if environ is None else environ, None, None, retries=0)
        try:
            left = jobs_left(state, clients)
        finally:
            for client in clients.values():
                client.close()
    except HivedlabError as exc:
        return (f"could not ask the cluster which of this run's jobs still run ({exc}); to stop them: "
                f"`hivedlab stop {folder}`")
    return stop_hint(folder, left) if left else ""


def find_kubeconfig(kubeconfig: str | None, environ: dict[str, str] | os._Environ[str]) -> Path:
    raw = kubeconfig or environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
    path = Path(raw.split(os.pathsep)[0]).expanduser()
    if not path.is_file():
        raise HivedlabError(
            f"no kubeconfig at {path}: copy ~/pai-deploy/kube/config from the dev-box machine or set KUBECONFIG / "
            f"找不到 kubeconfig {path}：请从 dev-box 机器复制 ~/pai-deploy/kube/config 或设置 KUBECONFIG")
    return path


def default_watcher(writer: Any, *, kubeconfig: Path, context: str | None, namespace: str) -> Watcher:
    """The Kubernetes watcher writing into `writer`, started in the background and listed before anything is
    submitted."""
    watcher = Watcher(namespace=namespace, writer=writer, kubeconfig=str(kubeconfig), context=context)
    late = watcher.start_listed(LISTED_WITHIN_S)
    if late:
        _warn(late)
    return watcher


def _warn(text: str) -> None:
    print(f"hivedlab: warning: {text}", file=sys.stderr)


def check_version(info: dict[str, Any], url: str) -> str:
    """The rest-server's version from `/api/v2/info`; "" when it does not say (v1.2.0 answers `null` when it cannot
    read the version from its ConfigMap). Another version than v1.2 is a `PaiError`."""
    version = info.get("version")
    if version is None or version == "":
        return ""
    if not str(version).startswith("v1.2"):
        raise PaiError(f"the rest-server at {url} is OpenPAI {version}; hivedlab targets v1.2.0",
                       f"{url} 的 rest-server 版本为 {version}，hivedlab 面向 v1.2.0")
    return str(version)


def run_location(evidence: Path) -> tuple[Path, str]:
    """The run directory and the run's id of a log at `<run>/experiments/<id>/evidence.jsonl`, or of a member's turn
    at `<run>/experiments/<id>/<user>/evidence.jsonl` (id `<id>/<user>`)."""
    folder = evidence.resolve().parent
    parts = [folder.name]
    while folder.parent.name not in ("experiments", "contrast") and len(parts) < 2 and folder.parent != folder:
        folder = folder.parent
        parts.insert(0, folder.name)
    if folder.parent.name not in ("experiments", "contrast"):  # not in a run directory: the log's own folder
        return evidence.resolve().parent.parent.parent, evidence.resolve().parent.name
    return folder.parent.parent, "/".join(parts)


def open_backend(
    writer: EvidenceWriter,
    inventory: Any,
    *,
    members: Sequence[str] = (),
    run_dir: str | Path | None = None,
    pai_url: str | None = None,
    token: str | None = None,
    token_file: str | Path | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
    namespace: str = "default",
    hived_url: str | None = None,
    interactive: bool | None = None,
    watcher_factory: Callable[..., Any] | None = None,
    view: LiveView | None = None,
    poll_s: float | None = None,
    sleep: Callable[[float], None] | None = None,
    environ: dict[str, str] | None = None,
    warn: Callable[[str], None] = _warn,
) -> PaiBackend:
    """The real backend for one experiment whose evidence `writer` writes (run dir: `<run>/experiments/<id>/`, or
    `<run>/experiments/<id>/<user>/` for a member's turn).

    `members`: whose jobs the run submits; each one's token is tried before this returns (all tokens when empty).
    A resumed experiment's log is read back first, so the backend knows what its pods already did."""
    env = dict(os.environ) if environ is None else environ
    master = _master_ip(inventory)
    url = pai_address(inventory, pai_url, env)
    hived = hived_url or env.get("HIVEDLAB_HIVED_URL") or (default_hived_url(master) if master else None)
    if not hived:
        raise HivedlabError("no HiveD address: set HIVEDLAB_HIVED_URL or give the master's ip in the inventory")
    config = find_kubeconfig(kubeconfig, env) if watcher_factory is None else None
    if poll_s is None:
        try:
            poll_s = float(env.get("HIVEDLAB_PAI_POLL_S") or 5.0)
        except ValueError:
            raise HivedlabError("HIVEDLAB_PAI_POLL_S must be a number of seconds") from None
    home, run_id = run_location(Path(writer.path))
    state = RunState((Path(run_dir) if run_dir else home) / "pai", experiment=run_id)
    tokens = load_tokens(token, token_file, env)
    extra: _SleepOverride = {"sleep": sleep} if sleep else {}
    clients = {
        user: PaiClient(url, tok, on_call=_call_logger(state, user),
                        token_source=token_source(user, tokens.origins.get(user)), **extra)
        for user, tok in tokens.tokens.items()
    }
    probe = next(iter(clients.values()))
    probe.retries, retries = 1, probe.retries  # the first contact: fail fast when the master is not there
    try:
        info = probe.info()
    finally:
        probe.retries = retries
    version = check_version(info, url)
    if not version:
        warn(f"the rest-server at {url} does not say its version (/api/v2/info: version {info.get('version')!r}, "
             "as v1.2.0 answers when it cannot read its ConfigMap); going on as OpenPAI v1.2.0")
    check_tokens(clients, tokens.origins, members or tuple(clients))
    backend = PaiBackend(
        writer, clients, state, hived_url=hived,
        view=view if view is not None else LiveView(),
        interactive=sys.stdin.isatty() if interactive is None else interactive,
        poll_s=poll_s, **extra,
    )
    backend.run_info = {"openpai_version": version or None}
    backend.index.replay(writer.path)
    tap = _TapWriter(writer, backend.index)
    if watcher_factory is not None:
        backend.watcher = watcher_factory(tap)
    elif config is not None:  # always, without a factory: found (or refused) above
        kube_context = context or env.get("HIVEDLAB_KUBE_CONTEXT")
        emulated = emulated_nodes(config, kube_context)
        if emulated:
            backend.run_info["cluster_kind"] = {"kind": "rehearsal", "emulated_nodes": emulated}
        backend.watcher = default_watcher(tap, kubeconfig=config, context=kube_context, namespace=namespace)
    return backend
