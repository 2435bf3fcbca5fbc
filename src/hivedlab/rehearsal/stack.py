"""`up`, `status`, `down` and the config switch of the rehearsal cluster, and the state they keep; the processes
themselves, in their order of start, are `hivedlab.rehearsal.processes`.

State kept in the home's `run/` while the cluster is up: `cluster.json` (what `status` and a run's record read),
the secrets (`secrets.json`), the kubeconfig, the configs, etcd's and PostgreSQL's data. `down` stops the recorded
processes and removes `run/`; the logs stay until the next `up`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hivedlab.backends.pai.database import rehearsal_stall
from hivedlab.backends.pai.rest import TOKEN_FILE_ENV
from hivedlab.backends.pai.users import AccountsFiles
from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import write_atomic
from hivedlab.lab_group.inventory import Inventory, load_inventory
from hivedlab.lab_group.layouts import CONFIG_VCS, plan_layout
from hivedlab.models.openpai.naming import scheduler_name
from hivedlab.rehearsal import configs, kubeflow
from hivedlab.rehearsal.build import BUILD_LOG
from hivedlab.rehearsal.processes import Stack
from hivedlab.rehearsal.programs import require
from hivedlab.rehearsal.settings import Settings, load_settings, need_programs, port_offset
from hivedlab.rehearsal.supervisor import Started, alive, exclusive, load_record, stop_all


@dataclass(frozen=True)
class Cluster:
    """What `up` started: read back by `status`, the switch and a run's record (`cluster.json`)."""

    config: str
    inventory: str | None
    speedup: float
    pai_url: str
    hived_url: str
    apiserver: str
    kubeconfig: str
    pai_admin_token_file: str
    programs: str | None = None  # the switch restarts HiveD and the rest-server from this folder
    port_offset: int = 0
    kubeflow: str | None = None  # the Kubeflow programs' folder, when `up --kubeflow` started them

    def as_dict(self) -> dict[str, Any]:
        return {"kind": "rehearsal", **self.__dict__}


def read_cluster(settings: Settings) -> Cluster | None:
    path = settings.paths.cluster
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("kind", None)
    return Cluster(**data)


def running(settings: Settings) -> list[Started]:
    return [p for p in load_record(settings.paths.record) if alive(p)]


def up(settings: Settings, inventory: Inventory, inventory_path: str | None, config: str = "two-vc",
       speedup: float = 1.0, kubeflow_folder: Path | None = None) -> tuple[Cluster, float]:
    """Start everything (with `kubeflow_folder`: also the Kubeflow parts); on any failure stop what was started.
    Returns the cluster and the seconds it took."""
    with exclusive(settings.paths.lock):
        return _up(settings, inventory, inventory_path, config, speedup, kubeflow_folder)


def _up(settings: Settings, inventory: Inventory, inventory_path: str | None, config: str,
        speedup: float, kubeflow_folder: Path | None) -> tuple[Cluster, float]:
    if running(settings):
        raise HivedlabError("the rehearsal cluster is already up (`hivedlab rehearsal status`); run "
                            "`hivedlab rehearsal down` first / 演练集群已在运行")
    programs = require(settings.paths, need_programs(settings))
    kubeflow_programs = kubeflow.require_kubeflow(kubeflow_folder) if kubeflow_folder else None
    plan_layout(config, inventory)  # refuse an inventory that cannot hold the config before anything starts
    begin = time.monotonic()
    if settings.paths.run.exists():
        shutil.rmtree(settings.paths.run)
    settings.paths.run.mkdir(parents=True, mode=0o700)
    clear_logs(settings.paths.logs)
    stack = Stack(settings, inventory, programs)
    try:
        stack.prepare()
        stack.kubernetes()
        stack.postgres()
        stack.hived(config)
        stack.frameworkcontroller()
        stack.database_controller()
        stack.rest_server()
        token_file = stack.admin_login()
        stack.database(token_file)
        stack.kubelets(inventory_path, speedup)
        if kubeflow_programs is not None:
            stack.kubeflow(kubeflow_programs)
    except BaseException:
        stop_all(settings.paths.record)
        remove_pg_folder(settings)
        raise
    cluster = Cluster(config, inventory_path, speedup, stack.pai_url, configs.hived_url(settings.ports),
                      configs.apiserver_url(settings.ports), str(settings.paths.kubeconfig), str(token_file),
                      str(need_programs(settings)), port_offset(settings),
                      str(kubeflow_folder) if kubeflow_folder else None)
    write_atomic(settings.paths.cluster, json.dumps(cluster.as_dict(), indent=2) + "\n")
    return cluster, time.monotonic() - begin


def clear_logs(logs: Path) -> None:
    """The last `up`'s logs go before the next one; the build's log (`build.log`, of `rehearsal build`) stays."""
    if not logs.is_dir():
        return
    for path in logs.iterdir():
        if path.name == BUILD_LOG:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def switch(settings: Settings, inventory: Inventory, config: str) -> Cluster:
    """What OpenPAI's `paictl` config push and service restart do: HiveD restarts with the new config, the per-VC
    schedulers follow its VCs, the rest-server restarts (it reads HiveD's config at start)."""
    with exclusive(settings.paths.lock):
        return _switch(settings, inventory, config)


def _switch(settings: Settings, inventory: Inventory, config: str) -> Cluster:
    cluster = read_cluster(settings)
    if cluster is None or not running(settings):
        raise HivedlabError("the rehearsal cluster is not up: run `hivedlab rehearsal up` first")
    if settings.programs is None and cluster.programs:
        settings = replace(settings, programs=Path(cluster.programs))
    stack = Stack(settings, inventory, require(settings.paths, need_programs(settings)))
    plan_layout(config, inventory)
    names = {"rest-server", "hivedscheduler"} | {scheduler_name(vc) for vcs in CONFIG_VCS.values()
                                                   for vc in vcs}
    stop_all(settings.paths.record, only=names)
    stack.sup.started = load_record(settings.paths.record)
    stack.hived(config)
    stack.rest_server()
    changed = Cluster(**{**cluster.__dict__, "config": config})
    write_atomic(settings.paths.cluster, json.dumps(changed.as_dict(), indent=2) + "\n")
    stack.database(Path(cluster.pai_admin_token_file))  # the switch is done; a rest-server without its database is said
    return changed


def database_problem(cluster: Cluster) -> str | None:
    """`status`: None when the rest-server's job list (read from PostgreSQL) answers, else the line naming why not."""
    token = Path(cluster.pai_admin_token_file)
    if not token.is_file():
        return None
    found = rehearsal_stall(cluster.pai_url, token, Path(cluster.programs or "<programs>") / "rest-server")
    return str(found.error()) if found else None


def switcher_for(hived_url: str, environ: Mapping[str, str] | None = None) -> Callable[[str], str | None] | None:
    """`switch` of the rehearsal cluster run from this machine's home (`HIVEDLAB_REHEARSAL_HOME` or the default)
    whose HiveD answers at `hived_url`, for a run that needs another config; None when no such cluster is up here.
    The switch returns what it changed beyond HiveD's config, for the run to say (`dropped_grants`)."""
    try:
        settings = load_settings(environ=environ)
        cluster = read_cluster(settings)
    except (HivedlabError, OSError, ValueError, TypeError):
        return None
    if cluster is None or cluster.hived_url.rstrip("/") != hived_url.rstrip("/") or not running(settings):
        return None
    inventory = load_inventory(cluster.inventory)
    tokens = (environ if environ is not None else os.environ).get(TOKEN_FILE_ENV)

    def switch_to(config: str) -> str | None:
        before = (read_cluster(settings) or cluster).config
        switch(settings, inventory, config)
        return dropped_grants(before, config, AccountsFiles(cluster.inventory, cluster.pai_admin_token_file, tokens))

    return switch_to


def dropped_grants(before: str, after: str, accounts: AccountsFiles) -> str | None:
    """What a switch from `before` to `after` did to the members' accounts: the rest-server, restarted with a config
    without a VC, drops every grant of it, and a later switch back does not restore them (None: nothing dropped)."""
    dropped = sorted(set(CONFIG_VCS.get(before, ())) - set(CONFIG_VCS.get(after, ())))
    if not dropped:
        return None
    shown, command = ", ".join(dropped), accounts.command(CONFIG_VCS[before])
    return (f"the rest-server, restarted with '{after}', dropped the members' grant of VC {shown}: after switching "
            f"back (`hivedlab rehearsal switch {before}`) run `{command}` to grant it again / rest-server 以 '{after}' "
            f"重启后删除了组员对 VC {shown} 的授权：切换回 {before}（`hivedlab rehearsal switch {before}`）后须运行 "
            f"`{command}` 重新授权")


def admin_token_file_for(pai_url: str, environ: Mapping[str, str] | None = None) -> str | None:
    """OpenPAI's admin token file of the rehearsal cluster this machine runs, when `pai_url` is its rest-server."""
    try:
        cluster = read_cluster(load_settings(environ=environ))
    except (HivedlabError, OSError, ValueError, TypeError):
        return None
    if cluster is None or cluster.pai_url.rstrip("/") != pai_url.rstrip("/"):
        return None
    return cluster.pai_admin_token_file


def down(settings: Settings) -> list[str]:
    with exclusive(settings.paths.lock):
        return _down(settings)


def _down(settings: Settings) -> list[str]:
    said = stop_all(settings.paths.record)
    remove_pg_folder(settings)
    if settings.paths.run.exists():
        shutil.rmtree(settings.paths.run, ignore_errors=True)
    return said


def remove_pg_folder(settings: Settings) -> None:
    """PostgreSQL's data folder under the system's temporary folder (as root), once its server has stopped: after
    `down`, and after an `up` that failed (the next `up` starts from an empty `run/` and would not find it)."""
    pg_folder = settings.paths.run / "pg-folder"
    if pg_folder.is_file():
        shutil.rmtree(pg_folder.read_text(encoding="utf-8").strip(), ignore_errors=True)
        pg_folder.unlink()
