"""`hivedlab doctor`: the post-deploy check — is the cluster what the group's inventory and HiveD config say?

Kubernetes nodes Ready; the rest-server's version; the portal answers; HiveD's virtual clusters and cells (cell types,
numbers, node names) equal to the config rendered for the inventory; every member's token valid, allowed in the VCs
and not about to expire; no unfinished job on the cluster. Each failed check says what to do (docs/deployment.md).
Exit status: 0 no errors (warnings allowed), 1 a check failed, 2 unusable input.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
import yaml

from hivedlab.backends.pai import find_kubeconfig
from hivedlab.backends.pai.hived_inspect import hived_url
from hivedlab.backends.pai.tokens import load_tokens
from hivedlab.basics.errors import EXIT_FINDINGS, HivedlabError
from hivedlab.basics.files import read_json
from hivedlab.basics.text import Text
from hivedlab.cli.options import add_format, add_lang, new_parser
from hivedlab.group.inventory import Inventory, load_inventory
from hivedlab.group.layouts import CONFIG_NAMES, plan_layout
from hivedlab.models.openpai.rest import DIRECT_PORT, PaiClient, PaiError, normalize_base_url
from hivedlab.models.openpai.users import get_user, token_expiry, user_vcs

UNFINISHED = ("WAITING", "RUNNING", "STOPPING")
PHYSICAL_PATH = "/v1/inspect/clusterstatus/physicalcluster"
VIRTUAL_PATH = "/v1/inspect/clusterstatus/virtualclusters"
EXPIRY_WARNING = dt.timedelta(days=1)
MAX_CLOCK_SPREAD_MS = 1000.0  # evidence from different nodes is compared to the second

EXAMPLES = """\
  hivedlab doctor --inventory group.yaml                   # after deploying (step 2) and creating accounts (3.1)
  hivedlab doctor --inventory group.yaml --config two-vc   # before experiments 4.2-4.4
  HIVEDLAB_PAI_TOKEN_FILE=~/.pai-tokens KUBECONFIG=~/pai-deploy/kube/config hivedlab doctor --format json
"""


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok | warning | error
    message: Text
    fix: Text | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "message": self.message.as_dict(),
                "fix": self.fix.as_dict() if self.fix else None}


def ok(check: str, zh: str, en: str) -> Finding:
    return Finding(check, "ok", Text(zh, en))


def bad(check: str, zh: str, en: str, fix_zh: str, fix_en: str, status: str = "error") -> Finding:
    return Finding(check, status, Text(zh, en), Text(fix_zh, fix_en))


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(
        prog,
        "Check a deployed cluster against the group's inventory: nodes, rest-server, portal, HiveD's VCs and cells, "
        "the members' tokens, unfinished jobs. / "
        "部署后检查：节点、rest-server、门户、HiveD 的 VC 和 cell、组员 token、未结束的任务。",
        EXAMPLES,
    )
    parser.add_argument("--inventory", metavar="FILE", help="group inventory (default: the shipped example)")
    parser.add_argument("--config", choices=CONFIG_NAMES,
                        help="the HiveD config that should be in force (default: the one HiveD's VCs match)")
    parser.add_argument("--pai-url", metavar="URL", help="the OpenPAI master (default: HIVEDLAB_PAI_URL, else "
                                                          "http://<the inventory's master ip>)")
    parser.add_argument("--hived-url", metavar="URL", help="HiveD's web service (default: HIVEDLAB_HIVED_URL, else "
                                                            "http://<master ip>:30096)")
    parser.add_argument("--token-file", metavar="FILE",
                        help="the members' token file (default: HIVEDLAB_PAI_TOKEN_FILE)")
    parser.add_argument("--kubeconfig", metavar="FILE", help="default: KUBECONFIG, else ~/pai-deploy/kube/config")
    parser.add_argument("--env", metavar="DIR", help="the members' environment records (hivedlab env): compare clocks")
    add_format(parser, ("text", "json"))
    add_lang(parser)
    return parser


# ------------------------------------------------------------------ the expected config (pure)


def expected_cells(config_text: str) -> dict[str, Any]:
    """From a HiveD config: {vcs: {vc: {cellType: number}}, nodes: [...], top: Counter of top physical cell types}."""
    config = yaml.safe_load(config_text)
    physical = config["physicalCluster"]
    types = physical["cellTypes"]
    nodes: list[str] = []

    def walk(cell: dict[str, Any], cell_type: str) -> None:
        spec = types.get(cell_type) or {}
        if spec.get("isNodeLevel"):
            nodes.append(str(cell.get("cellAddress")))
            return
        for child in cell.get("cellChildren") or []:
            walk(child, spec.get("childCellType", ""))

    for cell in physical["physicalCells"]:
        walk(cell, cell["cellType"])
    vcs: dict[str, dict[str, int]] = {}
    for vc, spec in config["virtualClusters"].items():
        cells = vcs.setdefault(str(vc), {})
        for cell in spec["virtualCells"]:
            cell_type = str(cell["cellType"]).split(".")[-1]  # CHAIN.TYPE: cells of TYPE
            cells[cell_type] = cells.get(cell_type, 0) + int(cell["cellNumber"])
    return {"vcs": vcs, "nodes": sorted(nodes), "top": Counter(str(c["cellType"]) for c in physical["physicalCells"])}


def _cells(tree: Any) -> list[dict[str, Any]]:
    """Every cell of a HiveD status tree (lists and cellChildren)."""
    if isinstance(tree, list):
        return [cell for item in tree for cell in _cells(item)]
    if isinstance(tree, dict):
        return [tree, *_cells(tree.get("cellChildren") or [])]
    return []


def observed_cells(physical: Any, virtual: Any) -> dict[str, Any]:
    """The same shape as `expected_cells` from HiveD's inspect API answers."""
    vcs = {}
    for vc, tree in (virtual or {}).items():
        vcs[str(vc)] = dict(Counter(str(cell.get("cellType")).split(".")[-1] for cell in _cells(tree)))
    # HiveD v0.3.4 addresses a node-level cell below a pool cell as `<index>/<node>` (pkg/api/config.go
    # inferPhysicalCellSpec); the node is the address's last part (pkg/algorithm/config.go buildChildCell)
    nodes = sorted(str(c.get("cellAddress")).rsplit("/", 1)[-1] for c in _cells(physical) if c.get("isNodeLevel"))
    top = Counter(str(c.get("cellType")) for c in (physical if isinstance(physical, list) else []))
    return {"vcs": vcs, "nodes": nodes, "top": top}


def compare_cells(name: str, expected: dict[str, Any], seen: dict[str, Any]) -> list[Finding]:
    """HiveD's VCs, cells and nodes against the config `name` rendered for the inventory (pure)."""
    fix_zh = (f"用 `hivedlab scheduler-config {name} --inventory group.yaml` 重新生成并推送配置，"
              "重启 hivedscheduler 和 rest-server（手册 4.1 / 4.5），然后再运行 `hivedlab doctor`")
    fix_en = (f"render and push the config again with `hivedlab scheduler-config {name} --inventory group.yaml`, "
              "restart hivedscheduler and rest-server (manual 4.1 / 4.5), then run `hivedlab doctor` again")
    findings = []
    if sorted(seen["vcs"]) != sorted(expected["vcs"]):
        findings.append(bad("hived-vcs", f"HiveD 的 VC 是 {', '.join(sorted(seen['vcs'])) or '无'}，{name} 应为 "
                            f"{', '.join(sorted(expected['vcs']))}",
                            f"HiveD's VCs are {', '.join(sorted(seen['vcs'])) or 'none'}; {name} has "
                            f"{', '.join(sorted(expected['vcs']))}", fix_zh, fix_en))
    for vc, cells in sorted(expected["vcs"].items()):
        have = seen["vcs"].get(vc)
        if have is None:
            continue
        wrong = {t: (n, have.get(t, 0)) for t, n in cells.items() if have.get(t, 0) != n}
        if wrong:
            zh = "；".join(f"{t} 应有 {n} 个，HiveD 有 {h} 个" for t, (n, h) in wrong.items())
            en = "; ".join(f"{t}: {n} expected, HiveD has {h}" for t, (n, h) in wrong.items())
            findings.append(bad("hived-cells", f"VC {vc} 的 cell 与 {name} 不同：{zh}",
                                f"VC {vc}'s cells differ from {name}: {en}", fix_zh, fix_en))
    if seen["nodes"] != expected["nodes"] or seen["top"] != expected["top"]:
        findings.append(bad(
            "hived-nodes", f"HiveD 的节点 {', '.join(seen['nodes']) or '无'}（顶层 cell {dict(seen['top'])}）"
            f"与 {name} 的 {', '.join(expected['nodes'])}（{dict(expected['top'])}）不同",
            f"HiveD's nodes {', '.join(seen['nodes']) or 'none'} (top cells {dict(seen['top'])}) differ from {name}'s "
            f"{', '.join(expected['nodes'])} ({dict(expected['top'])})", fix_zh, fix_en))
    if not findings:
        summary = ", ".join(f"{vc}: " + " ".join(f"{n}×{t}" for t, n in cells.items())
                            for vc, cells in sorted(expected["vcs"].items()))
        findings.append(ok("hived", f"HiveD 的 VC 和 cell 与 {name} 一致"
                                    f"（{summary}；节点 {', '.join(expected['nodes'])}）",
                           f"HiveD's VCs and cells match {name} ({summary}; nodes {', '.join(expected['nodes'])})"))
    return findings


# ------------------------------------------------------------------ probes


def check_nodes(kubeconfig: str | None, inventory: Inventory) -> list[Finding]:
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


def check_rest_server(url: str) -> Finding:
    probe = PaiClient(url, retries=1, backoff_s=0.5)
    try:
        version = str(probe.info().get("version"))
    except PaiError as exc:
        return bad("rest-server", f"rest-server 无应答：{exc.zh}", f"the rest-server does not answer: {exc.en}",
                   "在 dev-box 中用 `kubectl get pods` 确认 rest-server 在运行", "check that rest-server runs "
                   "(`kubectl get pods` in the dev-box)")
    finally:
        probe.close()
    if not version.startswith("v1.2"):
        return bad("rest-server", f"rest-server 版本为 {version}，实验要求 v1.2.0",
                   f"the rest-server is {version}; the lab needs v1.2.0",
                   "按手册用 v1.2.0 重新部署（deploy-inputs 的 --branch / --docker-image-tag）",
                   "deploy v1.2.0 as the manual says (deploy-inputs' --branch / --docker-image-tag)")
    return ok("rest-server", f"rest-server {version}", f"rest-server {version}")


def portal_url(pai_url: str) -> str:
    """The web portal is pylon's root: http://<master>/ (also when the REST URL is the direct port 9186)."""
    parts = urlsplit(normalize_base_url(pai_url))
    netloc = (parts.hostname or "") if parts.port == DIRECT_PORT else parts.netloc
    return f"{parts.scheme}://{netloc}/"


def check_portal(pai_url: str) -> Finding:
    url = portal_url(pai_url)
    fix = ("在 dev-box 中用 `kubectl get pods` 确认 pylon 和 webportal 在运行，并确认 master 的 80 端口可访问",
           "check that pylon and webportal run (`kubectl get pods` in the dev-box) and that port 80 of the master "
           "is reachable")
    try:
        response = requests.get(url, timeout=10)
    except requests.RequestException as exc:
        return bad("portal", f"门户 {url} 无法访问（{type(exc).__name__}）", f"the portal {url} is not reachable "
                   f"({type(exc).__name__})", *fix)
    if response.status_code != 200 or "html" not in response.headers.get("Content-Type", ""):
        return bad("portal", f"门户 {url} 返回 {response.status_code}", f"the portal {url} answered "
                   f"{response.status_code}", *fix)
    return ok("portal", f"门户 {url} 可以访问", f"the portal {url} answers")


def fetch_hived(base: str) -> tuple[Any, Any]:
    answers = []
    for path in (PHYSICAL_PATH, VIRTUAL_PATH):
        response = requests.get(base.rstrip("/") + path, timeout=10)
        response.raise_for_status()
        answers.append(response.json())
    return answers[0], answers[1]


def check_hived(base: str, inventory: Inventory, config: str | None) -> tuple[list[Finding], list[str]]:
    """HiveD's VCs and cells against the config for the inventory; also the VCs HiveD has."""
    try:
        physical, virtual = fetch_hived(base)
    except (requests.RequestException, ValueError) as exc:
        return [bad("hived", f"HiveD 的 inspect API（{base}）无法访问：{type(exc).__name__}",
                    f"HiveD's inspect API at {base} is not reachable: {type(exc).__name__}",
                    "在 dev-box 中用 `kubectl get pods` 确认 hivedscheduler 在运行"
                    "（配置错误时它会不断重启：看它的日志）",
                    "check that hivedscheduler runs (`kubectl get pods` in the dev-box; a bad config makes it "
                    "restart over and over: read its log)")], []
    seen = observed_cells(physical, virtual)
    name = config or ("two-vc" if "vc1" in seen["vcs"] else "one-vc")
    expected = expected_cells(plan_layout(name, inventory).text)
    return compare_cells(name, expected, seen), sorted(seen["vcs"])


def check_tokens(url: str, inventory: Inventory, tokens: dict[str, str], vcs: list[str],
                 now: dt.datetime) -> list[Finding]:
    """Each member's token: present, accepted, allowed in the cluster's VCs, not expiring within a day."""
    again = ("运行 `hivedlab accounts --inventory group.yaml` 重新登录并写入 token",
             "run `hivedlab accounts --inventory group.yaml` to log in again and write the token")
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
                                f"{', '.join(lacking)}", *again))
        expiry = token_expiry(token)
        if expiry is not None and expiry - now < EXPIRY_WARNING:
            when = expiry.strftime("%Y-%m-%d %H:%M UTC")
            findings.append(bad("tokens", f"{user} 的 token 将于 {when} 过期（登录 token 有效 7 天）",
                                f"{user}'s token expires at {when} (login tokens last 7 days)", *again,
                                status="warning" if expiry > now else "error"))
    return findings or [ok("tokens", f"{len(inventory.members)} 位组员的 token 有效，可使用 VC {', '.join(vcs)}",
                           f"the {len(inventory.members)} members' tokens work and may use VC {', '.join(vcs)}")]


def check_jobs(url: str, token: str) -> Finding:
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


def check_clocks(folder: Path) -> list[Finding]:
    """The members' environment records: every clock synchronized, and their NTP offsets within a second."""
    records = [read_json(path) for path in sorted(folder.glob("*.json"))]
    clocks = {str(r.get("member")): r["clock"] for r in records
              if isinstance(r, dict) and isinstance(r.get("clock"), dict)}
    if not clocks:
        return [bad("clocks", f"{folder} 中没有带时钟信息的环境记录", f"no environment record with a clock in {folder}",
                    "在每台机器上运行 `python3 labs/00_check_env.py --member 姓名 --role …` 并把 env/ 中的记录复制过来",
                    "run `python3 labs/00_check_env.py --member NAME --role …` on each machine "
                    "and copy its env/ record",
                    status="warning")]
    fix = ("在这些机器上执行 `sudo timedatectl set-ntp true`（或安装 chrony），再运行一次 00_check_env.py",
           "run `sudo timedatectl set-ntp true` (or install chrony) on those machines, then 00_check_env.py again")
    findings = []
    unsynced = sorted(m for m, c in clocks.items() if c.get("ntp_synchronized") is False)
    if unsynced:
        findings.append(bad("clocks", f"时钟未同步：{', '.join(unsynced)}", f"clocks not synchronized: "
                            f"{', '.join(unsynced)}", *fix, status="warning"))
    offsets = {m: float(c["offset_ms"]) for m, c in clocks.items() if isinstance(c.get("offset_ms"), int | float)}
    if offsets and max(offsets.values()) - min(offsets.values()) > MAX_CLOCK_SPREAD_MS:
        shown = ", ".join(f"{m} {v:+.0f} ms" for m, v in sorted(offsets.items()))
        findings.append(bad("clocks", f"各机器时钟相差超过 1 秒：{shown}", f"the machines' clocks differ by more than "
                            f"a second: {shown}", *fix, status="warning"))
    return findings or [ok("clocks", f"{len(clocks)} 台机器的时钟已同步", f"the {len(clocks)} machines' clocks agree")]


# ------------------------------------------------------------------ the command


def _master_ip(inventory: Inventory) -> str | None:
    return next((m.ip for m in inventory.members if "master" in m.roles and m.ip), None)


def run(args: argparse.Namespace) -> int:
    inventory = load_inventory(args.inventory)
    master = _master_ip(inventory)
    url = args.pai_url or os.environ.get("HIVEDLAB_PAI_URL") or (f"http://{master}" if master else None)
    hived = args.hived_url or os.environ.get("HIVEDLAB_HIVED_URL") or (hived_url(master) if master else None)
    if not url or not hived:
        raise HivedlabError("no OpenPAI address: give --pai-url and --hived-url, or the master's ip in the inventory")
    tokens = load_tokens(token_file=args.token_file).tokens
    findings = check_nodes(args.kubeconfig, inventory)
    rest = check_rest_server(url)
    findings += [rest, check_portal(url)]
    hived_findings, vcs = check_hived(hived, inventory, args.config)
    findings += hived_findings
    if rest.status == "ok":
        findings += check_tokens(url, inventory, tokens, vcs, dt.datetime.now(dt.timezone.utc))
        findings.append(check_jobs(url, next(iter(tokens.values()))))
    if args.env:
        findings += check_clocks(Path(args.env))
    errors = [f for f in findings if f.status == "error"]
    if args.format == "json":
        print(json.dumps({"ok": not errors, "findings": [f.as_dict() for f in findings]}, ensure_ascii=False,
                         indent=2))
    else:
        marks = {"ok": "OK  ", "warning": "WARN", "error": "FAIL"}
        for f in findings:
            print(f"[{marks[f.status]}] {f.check:<11} {f.message.get(args.lang)}")
            if f.fix and f.status != "ok":
                print(f"       -> {f.fix.get(args.lang)}")
        failed = len(errors)
        print(("结果：" + ("全部通过" if not failed else f"{failed} 项未通过")) if args.lang == "zh" else
              ("result: " + ("all checks passed" if not failed else f"{failed} check(s) failed")))
    return EXIT_FINDINGS if errors else 0
