"""`hivedlab deploy-inputs`: OpenPAI quick-start inputs (master.csv, worker.csv, config.yaml) from the inventory.

config.yaml holds the Linux user's SSH password, so the three files go to a folder outside any git repository (by
default `~/pai-inputs`), config.yaml with mode 600 (docs/deployment.md).
The files are exactly what `contrib/kubespray/quick-start-*.sh` read (docs/openpai-model.md#quick-start-inputs):
`hostname,ip` rows with no header, no blank line and no spaces; `branch_name` and `docker_image_tag` unquoted, one per
line, since the scripts read them with `grep | tr -d space | cut -d: -f2`. They are checked before anything is written.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

import yaml

from hivedlab.basics.errors import EXIT_FINDINGS, HivedlabError
from hivedlab.basics.files import read_json, write_atomic
from hivedlab.basics.secrets import read_secret, refuse_inside_repository, write_secret
from hivedlab.basics.text import Text
from hivedlab.cli.options import add_format, add_inventory, add_lang, new_parser
from hivedlab.env_record import EnvRecord, env_record_from_json
from hivedlab.lab_group.inventory import Inventory, Member, deploy_problems, read_group
from hivedlab.lab_group.rules import NEEDS_HOSTNAME, NEEDS_IP, Problem

PASSWORD_ENV = "HIVEDLAB_SSH_PASSWORD"
FIXED_BRANCH = "pai-1.2.y"
SAFE_VALUE = re.compile(r"^[A-Za-z0-9._/-]+$")
DEFAULT_OUT = "~/pai-inputs"
# the v1.2.0 generator crashes on a worker with > 50 allocatable CPUs (docs/openpai-model.md#what-quick-start-generates)
MAX_CPUS_V120 = 50

EXAMPLES = (
    "  hivedlab deploy-inputs          # ./group.yaml; asks the password; writes ~/pai-inputs/{master,worker}.csv, "
    "config.yaml\n"
    """\
  hivedlab deploy-inputs --env out/env --out ~/pai-inputs   # also checks workers' GPUs (the members' records)
  hivedlab deploy-inputs --password-file ~/.ssh-password --branch pai-1.2.y
"""
)


def host_csv(members: tuple[Member, ...]) -> str:
    """`hostname,ip` per line, no header, no blank line, no spaces (docs/openpai-model.md#quick-start-inputs)."""
    return "".join(f"{m.hostname.strip()},{m.ip.strip()}\n" for m in members)


def quickstart_config(user: str, password: str, branch: str, image_tag: str) -> str:
    """The quick-start `config.yaml`: the two keys the scripts grep for stay unquoted, one per line
    (docs/openpai-model.md#quick-start-inputs)."""
    # user and password are read as YAML (quoted by PyYAML only when needed, e.g. a password of digits)
    credentials = yaml.safe_dump({"user": user, "password": password}, sort_keys=False, allow_unicode=True, width=1000)
    return (
        credentials + f"branch_name: {branch}\n"
        f"docker_image_tag: {image_tag}\n"
    )


def load_env_records(folder: Path) -> dict[str, EnvRecord]:
    """Environment records (`hivedlab env`) in a folder, keyed by member name and by hostname."""
    records: dict[str, EnvRecord] = {}
    if not folder.is_dir():
        raise HivedlabError(f"environment record folder {folder} does not exist (write them with `hivedlab env`)")
    for path in sorted(folder.glob("*.json")):
        record = env_record_from_json(read_json(path))
        if record is None:
            raise HivedlabError(f"{path}: not an environment record")
        for key in (record.member, record.hostname):
            if key:
                records.setdefault(key, record)
    return records


def _problem(severity: str, zh: str, en: str) -> Problem:
    return Problem(severity, "", Text(zh, en))


def check_env_records(inventory: Inventory, records: Mapping[str, EnvRecord], branch: str) -> list[Problem]:
    """Every worker has a record with a GPU; hostnames and IPs agree with the inventory (pure)."""
    findings: list[Problem] = []
    for worker in inventory.workers:
        record = records.get(worker.name) or records.get(worker.hostname)
        if record is None:
            findings.append(_problem("error", f"没有 worker {worker.name} 的环境记录："
                                              f"在该机器上运行 `hivedlab env --member {worker.name}`",
                                    f"no environment record for worker {worker.name}: run `hivedlab env --member "
                                    f"{worker.name}` on that machine"))
            continue
        if not record.gpu_count:
            findings.append(_problem("error", f"worker {worker.name} 的环境记录中没有 GPU"
                                              "（quick-start 要求每个 worker 至少 1 块 GPU）",
                                    f"worker {worker.name}'s environment record shows no GPU (quick-start needs >= 1 "
                                    "GPU on every worker)"))
        if record.docker_default_runtime not in (None, "nvidia"):
            findings.append(_problem("error", f"worker {worker.name} 的 Docker 默认运行时是 "
                                              f"{record.docker_default_runtime}，应为 nvidia",
                                    f"worker {worker.name}'s Docker default runtime is "
                                    f"{record.docker_default_runtime}, it must be nvidia"))
        for field, reported in (("hostname", record.hostname), ("ip", record.ip)):
            if reported and reported != getattr(worker, field):
                findings.append(_problem("warning", f"{worker.name}：清单中的 {field} 为 {getattr(worker, field)}，"
                                                    f"机器上为 {reported}",
                                        f"{worker.name}: the inventory's {field} is {getattr(worker, field)}, the "
                                        f"machine reports {reported}"))
        cpus = record.vcpus or 0
        if cpus > MAX_CPUS_V120 and branch != FIXED_BRANCH:
            findings.append(_problem(
                "error",
                f"worker {worker.name} 有 {cpus} 个 vCPU：v1.2.0 的配置生成脚本在 > 50 CPU 时崩溃，"
                f"请使用 --branch {FIXED_BRANCH}",
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
    add_inventory(parser)
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help=f"folder outside the repository for the three files (default: {DEFAULT_OUT}); "
                             "config.yaml holds the password")
    parser.add_argument("--env", metavar="DIR",
                        help="folder of environment records (hivedlab env) to check workers' GPUs")
    parser.add_argument("--user", default="openpai", help="the Linux user of manual step 1.4 (default: openpai)")
    parser.add_argument("--password", help=argparse.SUPPRESS)  # kept for scripts: a password here stays in history
    parser.add_argument("--password-file", metavar="FILE",
                        help=f"a file (chmod 600, outside the repository) holding that user's password; without it "
                             f"and {PASSWORD_ENV}, the password is asked without echo")
    parser.add_argument("--branch", default="v1.2.0",
                        help=f"OpenPAI branch/tag to deploy (default: v1.2.0 as in the manual; {FIXED_BRANCH} fixes "
                             "the > 50 CPU generator crash)")
    parser.add_argument("--docker-image-tag", default="v1.2.0", help="OpenPAI image tag (default: v1.2.0)")
    add_format(parser, ("text", "json"))
    add_lang(parser)
    return parser


def ssh_password(given: str | None, file: str | None) -> str:
    """The Linux user's SSH password: --password (kept for scripts), a file, the variable, else typed without echo."""
    if given:
        return given
    if file:
        return read_secret(Path(file).expanduser(), "password file").strip()
    if os.environ.get(PASSWORD_ENV):
        return os.environ[PASSWORD_ENV]
    if sys.stdin.isatty():
        typed = getpass.getpass("SSH password of the Linux user (manual step 1.4) / Linux 用户的 SSH 密码: ")
        if typed:
            return typed
    raise HivedlabError(f"no SSH password: set {PASSWORD_ENV}, give --password-file FILE (chmod 600), or run in a "
                        "terminal to type it (it goes into config.yaml only)")


def run(args: argparse.Namespace) -> int:
    group = read_group(args.inventory, frozenset({NEEDS_HOSTNAME, NEEDS_IP}))  # a missing one is said first
    password = ssh_password(args.password, args.password_file)
    for name, value in (("--user", args.user), ("--branch", args.branch),
                        ("--docker-image-tag", args.docker_image_tag)):
        if not SAFE_VALUE.match(value):
            raise HivedlabError(f"{name} {value!r}: only letters, digits and . _ / - are allowed")
    folder = Path(args.out).expanduser()
    refuse_inside_repository(folder, "config.yaml", f"give a folder outside it with --out (default: {DEFAULT_OUT})")
    findings = [group.located(problem) for problem in group.problems]
    inventory = None
    if not any(problem.severity == "error" for problem in findings):
        inventory = group.inventory()
        group.say(inventory, warnings=False)  # listed below with the other findings
        findings += deploy_problems(inventory)
        if args.env:
            findings += check_env_records(inventory, load_env_records(Path(args.env)), args.branch)
    if args.branch != FIXED_BRANCH and not args.env:  # with the machines' records each worker is checked instead
        findings.append(_problem("warning", "如果某个 worker 超过 50 个 CPU，v1.2.0 的生成脚本会崩溃："
                                            f"请改用 --branch {FIXED_BRANCH}（加 --env 可按各机器的环境记录检查）",
                                f"if a worker has more than 50 CPUs the v1.2.0 generator crashes: use --branch "
                                f"{FIXED_BRANCH} (with --env the machines' records are checked instead)"))
    errors = [f for f in findings if f.severity == "error"]
    if inventory is not None and not errors:
        masters = inventory.masters
        workers = tuple(w for w in inventory.workers if w not in masters)
        write_atomic(folder / "master.csv", host_csv(masters))
        write_atomic(folder / "worker.csv", host_csv(workers))
        write_secret(folder / "config.yaml", quickstart_config(args.user, password, args.branch, args.docker_image_tag))
    commands = deployment_commands(folder, args.branch, args.docker_image_tag)
    if args.format == "json":
        print(json.dumps({"written": not errors, "folder": str(folder.resolve()),
                          "password_file": None if errors else str(folder.resolve() / "config.yaml"),
                          "findings": [f.as_dict() for f in findings],
                          "commands": commands.splitlines() if not errors else []}, ensure_ascii=False, indent=2))
    else:
        _print_text(findings, errors, folder, commands, args.lang)
    return EXIT_FINDINGS if errors else 0


def _print_text(findings: list[Problem], errors: list[Problem], folder: Path, commands: str, lang: str) -> None:
    for finding in findings:
        mark = "错误" if finding.severity == "error" else "注意"
        mark = mark if lang == "zh" else finding.severity
        print(f"{mark}: {finding.text.get(lang)}")
    if errors:
        print("未写入任何文件。" if lang == "zh" else "nothing written.")
        return
    print(("已写入 " if lang == "zh" else "wrote ") + ", ".join(
        str(folder.resolve() / n) for n in ("master.csv", "worker.csv", "config.yaml")))
    secret = folder.resolve() / "config.yaml"
    print(f"{secret} 含有 SSH 密码：权限 600，只有你能读；部署完成后可以删除。" if lang == "zh" else
          f"{secret} holds the SSH password: mode 600, readable by you only; delete it once deployed.")
    print("\n在 dev-box 上执行（实验手册 2.2-2.3）：" if lang == "zh" else "\nOn the dev-box (manual steps 2.2-2.3):")
    print(commands)
