"""`hivedlab deploy-inputs`: OpenPAI quick-start inputs (master.csv, worker.csv, config.yaml) from the inventory.

The files are exactly what `contrib/kubespray/quick-start-*.sh` read (spec/openpai.md §5.3): `hostname,ip` rows with
no header, no blank line and no spaces; `branch_name` and `docker_image_tag` unquoted, one per line, since the scripts
read them with `grep | tr -d space | cut -d: -f2`. They are checked before anything is written.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hivedlab.basics.errors import EXIT_FINDINGS, HivedlabError
from hivedlab.basics.files import write_atomic
from hivedlab.cli.options import add_format, add_lang, new_parser
from hivedlab.group.inventory import Inventory, Member, load_inventory

PASSWORD_ENV = "HIVEDLAB_SSH_PASSWORD"
FIXED_BRANCH = "pai-1.2.y"
# RFC 1123 label, lower case: quick-start requires hostnames equal to the k8s node names (§5.3)
HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
SAFE_VALUE = re.compile(r"^[A-Za-z0-9._/-]+$")
MAX_CPUS_V120 = 50  # §5.2: the v1.2.0 generator crashes on a worker with > 50 allocatable CPUs

EXAMPLES = """\
  hivedlab deploy-inputs --inventory group.yaml --password paiopen      # writes deploy/{master,worker}.csv, config.yaml
  hivedlab deploy-inputs --inventory group.yaml --env out/env --out ~/pai-inputs   # also checks workers' GPUs
  HIVEDLAB_SSH_PASSWORD=paiopen hivedlab deploy-inputs --inventory group.yaml --branch pai-1.2.y
"""


@dataclass(frozen=True)
class Finding:
    severity: str  # error | warning
    zh: str
    en: str

    def as_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "zh": self.zh, "en": self.en}


def host_csv(members: tuple[Member, ...]) -> str:
    """`hostname,ip` per line, no header, no blank line, no spaces (§5.3)."""
    return "".join(f"{m.hostname.strip()},{m.ip.strip()}\n" for m in members)


def quickstart_config(user: str, password: str, branch: str, image_tag: str) -> str:
    """The quick-start `config.yaml`: the two keys the scripts grep for stay unquoted, one per line (§5.3)."""
    # user and password are read as YAML (quoted by PyYAML only when needed, e.g. a password of digits)
    credentials = yaml.safe_dump({"user": user, "password": password}, sort_keys=False, allow_unicode=True, width=1000)
    return (
        credentials + f"branch_name: {branch}\n"
        f"docker_image_tag: {image_tag}\n"
    )


def check_inventory(inventory: Inventory) -> list[Finding]:
    """Roles, hostnames and IPs as quick-start needs them (pure)."""
    findings: list[Finding] = []
    masters = [m for m in inventory.members if "master" in m.roles]
    workers = list(inventory.workers)
    if not masters:
        findings.append(Finding("error", "清单中没有 master 角色的成员", "no member has the master role"))
    if not workers:
        findings.append(Finding("error", "清单中没有 worker 角色的成员（quick-start 不支持没有 GPU worker 的集群）",
                                "no member has the worker role (quick-start needs GPU workers)"))
    cluster = masters + [w for w in workers if w not in masters]
    for member in cluster:
        if not member.hostname or not HOSTNAME.match(member.hostname):
            findings.append(Finding(
                "error",
                f"{member.name} 的主机名 {member.hostname!r} 无效：必须是小写字母、数字和 '-'，且等于 k8s 节点名（在该机器上执行 `hostname`）",
                f"{member.name}'s hostname {member.hostname!r} is not valid: lower-case letters, digits and '-', equal "
                "to the k8s node name (run `hostname` on that machine)"))
        try:
            address = ipaddress.ip_address(member.ip)
            if address.version != 4 or address.is_loopback or address.is_unspecified:
                raise ValueError
        except ValueError:
            findings.append(Finding("error", f"{member.name} 的 IP {member.ip!r} 不是可用的 IPv4 地址",
                                    f"{member.name}'s IP {member.ip!r} is not a usable IPv4 address"))
    for field in ("hostname", "ip"):
        seen: dict[str, str] = {}
        for member in cluster:
            value = getattr(member, field)
            if value and value in seen:
                findings.append(Finding("error", f"{member.name} 与 {seen[value]} 的 {field} 相同：{value}",
                                        f"{member.name} and {seen[value]} share the {field} {value}"))
            seen.setdefault(value, member.name)
    for dev in (m for m in inventory.members if "dev-box" in m.roles):
        if any(dev.hostname and dev.hostname == m.hostname for m in cluster if m is not dev) or (
            "master" in dev.roles or "worker" in dev.roles
        ):
            findings.append(Finding("error", f"dev-box（{dev.name}）必须是集群之外的另一台机器",
                                    f"the dev-box ({dev.name}) must be a machine outside the cluster"))
    if len(masters) > 1:
        findings.append(Finding("warning", f"有 {len(masters)} 个 master，第一个（{masters[0].name}）是 k8s 和 PAI 的 master",
                                f"{len(masters)} masters: the first ({masters[0].name}) is the k8s and PAI master"))
    return findings


def load_env_records(folder: Path) -> dict[str, dict[str, Any]]:
    """Environment records (`hivedlab env`) in a folder, keyed by member name and by hostname."""
    records: dict[str, dict[str, Any]] = {}
    if not folder.is_dir():
        raise HivedlabError(f"environment record folder {folder} does not exist (write them with `hivedlab env`)")
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise HivedlabError(f"{path}: not a readable JSON environment record") from None
        if not isinstance(record, dict):
            raise HivedlabError(f"{path}: not an environment record")
        for key in (record.get("member"), record.get("hostname")):
            if isinstance(key, str) and key:
                records.setdefault(key, record)
    return records


def check_env_records(inventory: Inventory, records: dict[str, dict[str, Any]], branch: str) -> list[Finding]:
    """Every worker has a record with a GPU; hostnames and IPs agree with the inventory (pure)."""
    findings: list[Finding] = []
    for worker in inventory.workers:
        record = records.get(worker.name) or records.get(worker.hostname)
        if record is None:
            findings.append(Finding("error", f"没有 worker {worker.name} 的环境记录：在该机器上运行 `hivedlab env --member {worker.name}`",
                                    f"no environment record for worker {worker.name}: run `hivedlab env --member "
                                    f"{worker.name}` on that machine"))
            continue
        count = (record.get("gpus") or {}).get("count") or 0
        if not count:
            findings.append(Finding("error", f"worker {worker.name} 的环境记录中没有 GPU（quick-start 要求每个 worker 至少 1 块 GPU）",
                                    f"worker {worker.name}'s environment record shows no GPU (quick-start needs >= 1 "
                                    "GPU on every worker)"))
        if record.get("docker_default_runtime") not in (None, "nvidia"):
            findings.append(Finding("error", f"worker {worker.name} 的 Docker 默认运行时是 {record.get('docker_default_runtime')}，应为 nvidia",
                                    f"worker {worker.name}'s Docker default runtime is "
                                    f"{record.get('docker_default_runtime')}, it must be nvidia"))
        for field in ("hostname", "ip"):
            if record.get(field) and record[field] != getattr(worker, field):
                findings.append(Finding("warning", f"{worker.name}：清单中的 {field} 为 {getattr(worker, field)}，机器上为 {record[field]}",
                                        f"{worker.name}: the inventory's {field} is {getattr(worker, field)}, the "
                                        f"machine reports {record[field]}"))
        cpus = record.get("vcpus") or 0
        if cpus > MAX_CPUS_V120 and branch != FIXED_BRANCH:
            findings.append(Finding(
                "error",
                f"worker {worker.name} 有 {cpus} 个 vCPU：v1.2.0 的配置生成脚本在 > 50 CPU 时崩溃，请使用 --branch {FIXED_BRANCH}",
                f"worker {worker.name} has {cpus} vCPUs: the v1.2.0 config generator crashes above 50 CPUs, use "
                f"--branch {FIXED_BRANCH}"))
    return findings


def deployment_commands(folder: Path, branch: str, image_tag: str) -> str:
    """The manual's step 2.2-2.3 commands with the absolute paths filled in (the scripts need absolute paths)."""
    m, w, c = (str((folder / name).resolve()) for name in ("master.csv", "worker.csv", "config.yaml"))
    return "\n".join([
        f"git clone -b {branch} https://github.com/microsoft/pai.git",
        "cd pai/contrib/kubespray",
        f"bash quick-start-kubespray.sh -m {m} -w {w} -c {c}",
        f"bash quick-start-service.sh -m {m} -w {w} -c {c}",
        "sudo docker run -itd \\",
        "    -v /var/run/docker.sock:/var/run/docker.sock \\",
        "    -v ${HOME}/pai-deploy/cluster-cfg:/cluster-configuration \\",
        "    -v ${HOME}/pai-deploy/kube:/root/.kube \\",
        "    --privileged=true --name=dev-box \\",
        f"    openpai/dev-box:{image_tag}",
        "sudo docker exec -it dev-box bash   # then: kubectl get nodes; cd /pai && python paictl.py config get-id",
    ])


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = new_parser(
        prog,
        "Write OpenPAI quick-start inputs (master.csv, worker.csv, config.yaml) from the group inventory, check them "
        "and print the manual's deployment commands. / 从小组清单生成 OpenPAI quick-start 的部署输入并检查。",
        EXAMPLES,
    )
    parser.add_argument("--inventory", metavar="FILE", help="group inventory (default: the shipped example)")
    parser.add_argument("--out", default="deploy", metavar="DIR", help="folder to write the three files (default: deploy)")
    parser.add_argument("--env", metavar="DIR", help="folder of environment records (hivedlab env) to check workers' GPUs")
    parser.add_argument("--user", default="openpai", help="the Linux user of manual step 1.4 (default: openpai)")
    parser.add_argument("--password", help=f"that user's password (or set {PASSWORD_ENV}); never printed")
    parser.add_argument("--branch", default="v1.2.0",
                        help=f"OpenPAI branch/tag to deploy (default: v1.2.0 as in the manual; {FIXED_BRANCH} fixes "
                             "the > 50 CPU generator crash)")
    parser.add_argument("--docker-image-tag", default="v1.2.0", help="OpenPAI image tag (default: v1.2.0)")
    add_format(parser, ("text", "json"))
    add_lang(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    password = args.password or os.environ.get(PASSWORD_ENV, "")
    if not password:
        raise HivedlabError(f"give the Linux user's password with --password or {PASSWORD_ENV} (it goes into "
                            "config.yaml only)")
    for name, value in (("--user", args.user), ("--branch", args.branch), ("--docker-image-tag", args.docker_image_tag)):
        if not SAFE_VALUE.match(value):
            raise HivedlabError(f"{name} {value!r}: only letters, digits and . _ / - are allowed")
    inventory = load_inventory(args.inventory)
    findings = check_inventory(inventory)
    if args.env:
        findings += check_env_records(inventory, load_env_records(Path(args.env)), args.branch)
    if args.branch != FIXED_BRANCH:
        findings.append(Finding("warning", f"如果某个 worker 超过 50 个 CPU，v1.2.0 的生成脚本会崩溃：请改用 --branch {FIXED_BRANCH}",
                                f"if a worker has more than 50 CPUs the v1.2.0 generator crashes: use --branch "
                                f"{FIXED_BRANCH}"))
    errors = [f for f in findings if f.severity == "error"]
    folder = Path(args.out).expanduser()
    if not errors:
        masters = tuple(m for m in inventory.members if "master" in m.roles)
        workers = tuple(w for w in inventory.workers if w not in masters)
        write_atomic(folder / "master.csv", host_csv(masters))
        write_atomic(folder / "worker.csv", host_csv(workers))
        write_atomic(folder / "config.yaml", quickstart_config(args.user, password, args.branch, args.docker_image_tag))
        (folder / "config.yaml").chmod(0o600)
    commands = deployment_commands(folder, args.branch, args.docker_image_tag)
    if args.format == "json":
        print(json.dumps({"written": not errors, "folder": str(folder.resolve()),
                          "findings": [f.as_dict() for f in findings],
                          "commands": commands.splitlines() if not errors else []}, ensure_ascii=False, indent=2))
    else:
        _print_text(findings, errors, folder, commands, args.lang)
    return EXIT_FINDINGS if errors else 0


def _print_text(findings: list[Finding], errors: list[Finding], folder: Path, commands: str, lang: str) -> None:
    for finding in findings:
        mark = "错误" if finding.severity == "error" else "注意"
        mark = mark if lang == "zh" else finding.severity
        print(f"{mark}: {finding.zh if lang == 'zh' else finding.en}")
    if errors:
        print("未写入任何文件。" if lang == "zh" else "nothing written.")
        return
    print(("已写入 " if lang == "zh" else "wrote ") + ", ".join(
        str(folder.resolve() / n) for n in ("master.csv", "worker.csv", "config.yaml")))
    print("\n在 dev-box 上执行（实验手册 2.2-2.3）：" if lang == "zh" else "\nOn the dev-box (manual steps 2.2-2.3):")
    print(commands)
