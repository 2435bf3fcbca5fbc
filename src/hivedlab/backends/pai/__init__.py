"""The real-cluster backend (OpenPAI v1.2.0 + HiveD v0.3.4). `open_backend` builds it for one experiment.

Connection settings come from the arguments, else the environment:
- `HIVEDLAB_PAI_URL` (default `http://<master ip>` from the inventory, through pylon);
- `HIVEDLAB_PAI_TOKEN`, or `HIVEDLAB_PAI_TOKEN_FILE` (chmod 600; one token or `user: token` lines);
- `KUBECONFIG` (default `~/pai-deploy/kube/config`, what quick-start writes), `HIVEDLAB_KUBE_CONTEXT`;
- `HIVEDLAB_HIVED_URL` (default `http://<master ip>:30096`);
- `HIVEDLAB_PAI_POLL_S`: seconds between job-status polls while waiting (default 5).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypedDict

from hivedlab.backends.pai.addresses import hived_address, pai_address
from hivedlab.backends.pai.backend import PaiBackend, RunState
from hivedlab.backends.pai.kubeconfig import DEFAULT_KUBECONFIG, find_kubeconfig
from hivedlab.backends.pai.live import LiveView
from hivedlab.backends.pai.observed import TapWriter
from hivedlab.backends.pai.rest import PaiClient, RestCall, modelled_version
from hivedlab.backends.pai.stop import (
    RunJob,
    StopResult,
    jobs_left,
    run_state,
    stop_hint,
    stop_jobs,
    submitted_jobs,
)
from hivedlab.backends.pai.tokens import check_tokens, load_tokens, token_source
from hivedlab.backends.protocol import RunInfo
from hivedlab.backends.watcher import LISTED_WITHIN_S, PAI_RESOURCES, Watcher, make_api_client
from hivedlab.basics.errors import HivedlabError
from hivedlab.evidence import EMULATED_NODE_LABEL, EvidenceWriter, emulated_node, format_time
from hivedlab.lab_group.inventory import Inventory, load_inventory
from hivedlab.rundir import RunDir, UserStop, run_location


def emulated_nodes(kubeconfig: Path, context: str | None) -> list[str]:
    """The cluster's nodes the rehearsal cluster's emulated kubelets registered (`hivedlab.evidence.emulated_node`;
    empty on a real cluster, or when the nodes cannot be listed): a run that sees them records `cluster_kind: {kind:
    rehearsal, emulated_nodes}` in run.json, so grading and the report can tell it apart (docs/rehearsal.md)."""
    try:
        from kubernetes import client

        api = client.CoreV1Api(make_api_client(str(kubeconfig), context))
        response = api.list_node(_request_timeout=10, _preload_content=False)
        try:
            nodes = json.loads(response.data).get("items") or []
        finally:
            response.release_conn()
    except Exception:  # no permission to list nodes, no answer: nothing to say about them
        return []
    return sorted(str((n.get("metadata") or {}).get("name")) for n in nodes if emulated_node(n))


__all__ = ["DEFAULT_KUBECONFIG", "EMULATED_NODE_LABEL", "PaiBackend", "find_kubeconfig", "leftover_note",
           "open_backend", "stop_run"]


def _run_clients(run_dir: Path, state: RunState, env: dict[str, str], pai_url: str | None,
                 token_file: str | Path | None, retries: int = 4) -> dict[str, PaiClient]:
    """One client per member with a token, for the run in `run_dir` (its inventory, calls logged in its pai/)."""
    where = RunDir(run_dir)
    inventory = load_inventory(str(where.inventory_path)) if where.inventory_path.is_file() else None
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
    def record(job: RunJob) -> None:  # the run, running or resumed, then ends `stopped`: who stopped what and when
        RunDir(folder).record_user_stop(UserStop("hivedlab stop", (job.key,), format_time(datetime.now(timezone.utc))))

    try:
        return stop_jobs(state, clients, before=record)
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


def default_watcher(writer: Any, *, kubeconfig: Path, context: str | None, namespace: str) -> Watcher:
    """The Kubernetes watcher writing into `writer` (the task pods, events, Frameworks and the nodes' readiness),
    started in the background and listed before anything is submitted."""
    watcher = Watcher(namespace=namespace, writer=writer, kubeconfig=str(kubeconfig), context=context,
                      resources=PAI_RESOURCES)
    late = watcher.start_listed(LISTED_WITHIN_S)
    if late:
        _warn(late)
    return watcher


def _warn(text: str) -> None:
    print(f"hivedlab: warning: {text}", file=sys.stderr)


def open_backend(
    writer: EvidenceWriter,
    inventory: Inventory | None,
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
    url = pai_address(inventory, pai_url, env)
    hived = hived_address(inventory, hived_url, env)
    config = find_kubeconfig(kubeconfig, env) if watcher_factory is None else None
    if poll_s is None:
        try:
            poll_s = float(env.get("HIVEDLAB_PAI_POLL_S") or 5.0)
        except ValueError:
            raise HivedlabError("HIVEDLAB_PAI_POLL_S must be a number of seconds") from None
    home, run_id = run_location(Path(writer.path))
    state = RunState(RunDir(Path(run_dir) if run_dir else home).pai_state, experiment=run_id)
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
    version = modelled_version(info, url)
    if not version:
        warn(f"the rest-server at {url} does not say its version (/api/v2/info: version {info.get('version')!r}, "
             "as v1.2.0 answers when it cannot read its ConfigMap); going on as OpenPAI v1.2.0")
    check_tokens(clients, tokens.origins, members or tuple(clients))
    kube_context = context or env.get("HIVEDLAB_KUBE_CONTEXT")
    emulated = emulated_nodes(config, kube_context) if config is not None else []
    backend = PaiBackend(
        writer, clients, state, hived_url=hived, run_info=RunInfo(version, tuple(emulated)),
        view=view if view is not None else LiveView(),
        interactive=sys.stdin.isatty() if interactive is None else interactive,
        poll_s=poll_s, **extra,
    )
    backend.index.replay(writer.path)
    tap = TapWriter(writer, backend.index)
    if watcher_factory is not None:
        backend.watcher = watcher_factory(tap)
    elif config is not None:  # always, without a factory: found (or refused) above
        backend.watcher = default_watcher(tap, kubeconfig=config, context=kube_context, namespace=namespace)
    return backend
