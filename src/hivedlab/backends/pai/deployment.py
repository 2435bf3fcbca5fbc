"""The post-deploy checks of `hivedlab doctor`: is the cluster what the group's inventory and HiveD config say?

Kubernetes nodes Ready; the rest-server's version; the portal answers; HiveD's virtual clusters and cells equal to the
config rendered for the inventory (`hived_cells`); every member's token valid, allowed in the VCs and not about to
expire; no unfinished job on the cluster; the machines' clocks. Each goes through the cluster's one client (the
Kubernetes API client of `backends.watcher`, the REST client, HiveD's inspect client) and says what to do when it
fails (docs/deployment.md).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import requests

from hivedlab.backends.pai.database import database_stall
from hivedlab.backends.pai.doctor_findings import DoctorFinding, bad, ok, skipped
from hivedlab.backends.pai.hived_cells import compare_cells, expected_cells, observed_cells
from hivedlab.backends.pai.hived_inspect import fetch_cluster_status
from hivedlab.backends.pai.kubeconfig import find_kubeconfig
from hivedlab.backends.pai.rest import PaiClient, PaiError, fetch_portal, modelled_version, portal_url
from hivedlab.backends.pai.rest_errors import failure_cause
from hivedlab.backends.pai.users import AccountsFiles, get_user, token_expiry, user_vcs
from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import read_json
from hivedlab.env_record import env_record_from_json
from hivedlab.lab_group.inventory import Inventory
from hivedlab.lab_group.layouts import plan_layout

UNFINISHED = ("WAITING", "RUNNING", "STOPPING")
EXPIRY_WARNING = dt.timedelta(days=1)
MAX_CLOCK_SPREAD_MS = 1000.0  # evidence from different nodes is compared to the second
REHEARSAL_REST_SERVER = ("the rest-server/ folder of OpenPAI's programs (HIVEDLAB_REHEARSAL_PROGRAMS)",
                         "OpenPAI 程序目录（HIVEDLAB_REHEARSAL_PROGRAMS）的 rest-server/")


def check_deployment(pai_url: str, hived_url: str, inventory: Inventory, tokens: dict[str, str], *,
                     kubeconfig: str | None = None, config: str | None = None, env_folder: Path | None = None,
                     now: dt.datetime | None = None, accounts: AccountsFiles | None = None) -> list[DoctorFinding]:
    """Every check, in the order the manual's deployment meets them; the token and job checks only when the
    rest-server answers. `accounts`: the files the fixes' `hivedlab accounts` command names."""
    findings = check_nodes(kubeconfig, inventory)
    rest = check_rest_server(pai_url)
    emulated = _emulated(kubeconfig)
    findings += [rest, check_portal(pai_url) if not emulated else rehearsal_portal(emulated)]
    hived_findings, vcs = check_hived(hived_url, inventory, config)
    findings += hived_findings
    if rest.status == "ok":
        findings += check_tokens(pai_url, inventory, tokens, vcs, now or dt.datetime.now(dt.timezone.utc),
                                 accounts or AccountsFiles())
        findings.append(check_jobs(pai_url, next(iter(tokens.values())), rehearsal=bool(emulated)))
    if env_folder is not None:
        findings += check_clocks(env_folder)
    return findings


def check_nodes(kubeconfig: str | None, inventory: Inventory) -> list[DoctorFinding]:
    """Every Kubernetes node Ready, and every cluster member of the inventory is a node."""
    from kubernetes import client

    from hivedlab.backends.watcher import make_api_client

    fix_zh = ("在 dev-box 容器中运行 `kubectl get nodes`；未就绪的节点上执行 `sudo systemctl restart kubelet`，"
              "或重新运行 quick-start")
    fix_en = ("run `kubectl get nodes` in the dev-box container; on a node that is not Ready run `sudo systemctl "
              "restart kubelet`, or run quick-start again")
    try:
        api = make_api_client(str(find_kubeconfig(kubeconfig, os.environ)))
        try:
            nodes = client.CoreV1Api(api).list_node(_request_timeout=15).items
        finally:
            api.close()
    except HivedlabError as exc:
        return [bad("nodes", f"无法读取 Kubernetes 节点：{exc}", f"cannot read the Kubernetes nodes: {exc}",
                    "设置 KUBECONFIG（quick-start 写在 ~/pai-deploy/kube/config）", "set KUBECONFIG (quick-start "
                    "writes ~/pai-deploy/kube/config)")]
    except Exception as exc:  # the kubernetes client raises urllib3's and its own errors
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return [bad("nodes", f"Kubernetes API 无法访问：{reason}", f"the Kubernetes API is not reachable: {reason}",
                    fix_zh, fix_en)]
    ready = {}
    for node in nodes:
        conditions = {c.type: c.status for c in (node.status.conditions or [])} if node.status else {}
        ready[node.metadata.name] = conditions.get("Ready") == "True"
    missing = [m.hostname for m in inventory.members if set(m.roles) & {"master", "worker"} and m.hostname not in ready]
    not_ready = sorted(name for name, is_ready in ready.items() if not is_ready)
    findings = []
    if not_ready:
        findings.append(bad("nodes", f"节点未就绪：{', '.join(not_ready)}", f"nodes not Ready: {', '.join(not_ready)}",
                            fix_zh, fix_en))
    if missing:
        findings.append(bad("nodes", f"清单中的机器不是 Kubernetes 节点：{', '.join(missing)}",
                            f"machines of the inventory that are not Kubernetes nodes: {', '.join(missing)}",
                            "检查清单中的 hostname 是否与 `kubectl get nodes` 的节点名一致（quick-start 要求一致）",
                            "check that the inventory's hostnames equal the node names of `kubectl get nodes` "
                            "(quick-start needs them equal)"))
    return findings or [ok("nodes", f"{len(ready)} 个节点全部就绪", f"all {len(ready)} nodes Ready")]


def check_rest_server(url: str) -> DoctorFinding:
    probe = PaiClient(url, retries=1, backoff_s=0.5)
    try:
        info = probe.info()
    except PaiError as exc:
        return bad("rest-server", f"rest-server 无应答：{exc.zh}", f"the rest-server does not answer: {exc.en}",
                   "在 dev-box 中用 `kubectl get pods` 确认 rest-server 在运行", "check that rest-server runs "
                   "(`kubectl get pods` in the dev-box)")
    finally:
        probe.close()
    try:
        version = modelled_version(info, url)
    except PaiError as exc:
        return bad("rest-server", exc.zh, exc.en,
                   "按手册用 v1.2.0 重新部署（deploy-inputs 的 --branch / --docker-image-tag）",
                   "deploy v1.2.0 as the manual says (deploy-inputs' --branch / --docker-image-tag)")
    if not version:
        return ok("rest-server", "rest-server 有应答，但没有报告版本（v1.2.0 读不到 pai-version ConfigMap 时如此）",
                  "the rest-server answers but does not say its version (as v1.2.0 does when it cannot read its "
                  "pai-version ConfigMap)")
    return ok("rest-server", f"rest-server {version}", f"rest-server {version}")


def check_portal(pai_url: str) -> DoctorFinding:
    fix = ("在 dev-box 中用 `kubectl get pods` 确认 pylon 和 webportal 在运行，并确认 master 的 80 端口可访问",
           "check that pylon and webportal run (`kubectl get pods` in the dev-box) and that port 80 of the master "
           "is reachable")
    try:
        url, status, content_type = fetch_portal(pai_url)
    except requests.RequestException as exc:
        url = portal_url(pai_url)
        en, zh = failure_cause(exc)
        return bad("portal", f"门户 {url} 无法访问（{zh}）", f"the portal {url} is not reachable ({en})", *fix)
    if status != 200 or "html" not in content_type:
        return bad("portal", f"门户 {url} 返回 {status}", f"the portal {url} answered {status}", *fix)
    return ok("portal", f"门户 {url} 可以访问", f"the portal {url} answers")


def rehearsal_portal(emulated: list[str]) -> DoctorFinding:
    """The rehearsal cluster (its nodes labelled as emulated) has no pylon and no web portal: nothing to check."""
    return skipped("portal", f"演练集群（模拟节点 {', '.join(emulated)}）没有门户，跳过",
                   f"not part of the rehearsal cluster (emulated nodes {', '.join(emulated)}): skipped")


def _emulated(kubeconfig: str | None) -> list[str]:
    from hivedlab.backends.pai import emulated_nodes

    try:
        return emulated_nodes(find_kubeconfig(kubeconfig, os.environ), None)
    except HivedlabError:
        return []


def check_hived(base: str, inventory: Inventory, config: str | None) -> tuple[list[DoctorFinding], list[str]]:
    """HiveD's VCs and cells against the config for the inventory; also the VCs HiveD has."""
    try:
        physical, virtual = fetch_cluster_status(base)
    except (requests.RequestException, ValueError) as exc:
        en, zh = failure_cause(exc)
        return [bad("hived", f"HiveD 的 inspect API（{base}）无法访问：{zh}",
                    f"HiveD's inspect API at {base} is not reachable: {en}",
                    "在 dev-box 中用 `kubectl get pods` 确认 hivedscheduler 在运行"
                    "（配置错误时它会不断重启：看它的日志）",
                    "check that hivedscheduler runs (`kubectl get pods` in the dev-box; a bad config makes it "
                    "restart over and over: read its log)")], []
    seen = observed_cells(physical, virtual)
    name = config or ("two-vc" if "vc1" in seen["vcs"] else "one-vc")
    expected = expected_cells(plan_layout(name, inventory).text)
    return compare_cells(name, expected, seen), sorted(seen["vcs"])


def check_tokens(url: str, inventory: Inventory, tokens: dict[str, str], vcs: list[str],
                 now: dt.datetime, accounts: AccountsFiles) -> list[DoctorFinding]:
    """Each member's token: present, accepted, allowed in the cluster's VCs, not expiring within a day."""
    command = accounts.command(vcs)
    again = (f"运行 `{command}` 重新登录并写入 token（它会询问每位组员的密码，或加 `--passwords 文件`）",
             f"run `{command}` to log in again and write the tokens (it asks each member's password, or add "
             "`--passwords FILE`)")
    findings = []
    for member in inventory.members:
        user, token = member.user, tokens.get(member.user)
        if not token:
            findings.append(bad("tokens", f"{user} 没有 token", f"no token for {user}", *again))
            continue
        session = PaiClient(url, token, retries=1, backoff_s=0.5,
                            token_source=(f"{user}'s token", f"{user} 的 token"))
        try:
            found = get_user(session, user)
        except PaiError as exc:
            findings.append(bad("tokens", f"{user} 的 token 不可用：{exc.zh}",
                                f"{user}'s token does not work: {exc.en}", *again))
            continue
        finally:
            session.close()
        lacking = [vc for vc in vcs if vc not in user_vcs(found or {})]
        if lacking:
            findings.append(bad("tokens", f"{user} 没有 VC {', '.join(lacking)} 的权限", f"{user} may not use VC "
                                f"{', '.join(lacking)}", *regrant(lacking, command)))
        expiry = token_expiry(token)
        if expiry is not None and expiry - now < EXPIRY_WARNING:
            when = expiry.strftime("%Y-%m-%d %H:%M UTC")
            findings.append(bad("tokens", f"{user} 的 token 将于 {when} 过期（登录 token 有效 7 天）",
                                f"{user}'s token expires at {when} (login tokens last 7 days)", *again,
                                status="warning" if expiry > now else "error"))
    return findings or [ok("tokens", f"{len(inventory.members)} 位组员的 token 有效，可使用 VC {', '.join(vcs)}",
                           f"the {len(inventory.members)} members' tokens work and may use VC {', '.join(vcs)}")]


def regrant(lacking: list[str], command: str) -> tuple[str, str]:
    """The fix of a missing VC grant: what dropped it and the command that restores it."""
    shown = ", ".join(lacking)
    return (f"缺少的是 VC {shown} 的授权：rest-server 以没有 {shown} 的 HiveD 配置重启时（`hivedlab rehearsal switch "
            f"one-vc`、paictl 推送配置）会删除该授权，切换回来也不会恢复；运行 `{command}` 恢复（它会询问每位组员的"
            "密码，或加 `--passwords 文件`）",
            f"the grant of VC {shown} is gone: the rest-server drops it when it restarts with a HiveD config without "
            f"{shown} (`hivedlab rehearsal switch one-vc`, paictl's config push), and switching back does not restore "
            f"it; restore it with `{command}` (it asks each member's password, or add `--passwords FILE`)")


def check_jobs(url: str, token: str, *, rehearsal: bool = False) -> DoctorFinding:
    """No unfinished job; first, that the job list answers at all (it reads the rest-server's database)."""
    stall = database_stall(url, token, rest_server_folder=REHEARSAL_REST_SERVER if rehearsal else None)
    if stall is not None:
        return bad("jobs", stall.seen_zh, stall.seen_en, stall.fix_zh, stall.fix_en)
    session = PaiClient(url, token, retries=1, backoff_s=0.5)
    try:
        jobs = session.list_jobs(states=UNFINISHED)
    except PaiError as exc:
        return bad("jobs", f"无法列出任务：{exc.zh}", f"cannot list the jobs: {exc.en}", "检查 token 后重试",
                   "check the token and try again")
    finally:
        session.close()
    running = sorted(f"{j.get('username')}~{j.get('name')} ({j.get('state')})" for j in jobs
                     if j.get("state") in UNFINISHED)
    if running:
        shown = ", ".join(running[:5]) + (f" … (+{len(running) - 5})" if len(running) > 5 else "")
        return bad("jobs", f"集群上有未结束的任务：{shown}", f"unfinished jobs on the cluster: {shown}",
                   "实验假设集群是空的：在门户中停止这些任务或等它们结束", "the experiments assume an empty cluster: "
                   "stop these jobs in the portal or wait until they finish")
    return ok("jobs", "集群上没有未结束的任务", "no unfinished job on the cluster")


def check_clocks(folder: Path) -> list[DoctorFinding]:
    """The members' environment records: every clock synchronized, and their NTP offsets within a second."""
    records = [env_record_from_json(read_json(path)) for path in sorted(folder.glob("*.json"))]
    clocks = {str(r.member): r.clock for r in records if r is not None and r.clock is not None}
    if not clocks:
        return [bad("clocks", f"{folder} 中没有带时钟信息的环境记录", f"no environment record with a clock in {folder}",
                    "在每台机器上运行 `python3 labs/00_check_env.py --member 姓名 --role …` 并把 env/ 中的记录复制过来",
                    "run `python3 labs/00_check_env.py --member NAME --role …` on each machine "
                    "and copy its env/ record",
                    status="warning")]
    fix = ("在这些机器上执行 `sudo timedatectl set-ntp true`（或安装 chrony），再运行一次 00_check_env.py",
           "run `sudo timedatectl set-ntp true` (or install chrony) on those machines, then 00_check_env.py again")
    findings = []
    unsynced = sorted(m for m, c in clocks.items() if c.ntp_synchronized is False)
    if unsynced:
        findings.append(bad("clocks", f"时钟未同步：{', '.join(unsynced)}", f"clocks not synchronized: "
                            f"{', '.join(unsynced)}", *fix, status="warning"))
    offsets = {m: c.offset_ms for m, c in clocks.items() if c.offset_ms is not None}
    if offsets and max(offsets.values()) - min(offsets.values()) > MAX_CLOCK_SPREAD_MS:
        shown = ", ".join(f"{m} {v:+.0f} ms" for m, v in sorted(offsets.items()))
        findings.append(bad("clocks", f"各机器时钟相差超过 1 秒：{shown}", f"the machines' clocks differ by more than "
                            f"a second: {shown}", *fix, status="warning"))
    return findings or [ok("clocks", f"{len(clocks)} 台机器的时钟已同步", f"the {len(clocks)} machines' clocks agree")]
