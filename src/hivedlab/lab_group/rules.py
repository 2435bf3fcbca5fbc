"""The group inventory's rules, on its parsed YAML (pure): what `hivedlab validate` reports with line numbers and what
every command refuses or warns about through `hivedlab.lab_group.inventory.load_group`. A rule only some commands need
(a machine's ip, a worker's hostname) names that need (`Problem.need`): an error there, a warning elsewhere.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hivedlab.basics.text import Text

ROLES = ("dev-box", "master", "worker")
ERROR, WARNING = "error", "warning"
KEYS = ("name", "user", "roles", "hostname", "ip", "gpus")
TOP_KEYS = ("group", "members")
# What only some commands cannot work without (`load_group`'s `needs`): an error there, a warning elsewhere.
NEEDS_IP, NEEDS_HOSTNAME = "ip", "hostname"
LAB_CONFIG_GPUS = 2  # both lab configs hold two GPUs: two VCs of one (step 4.1), or one VC of two (step 4.5)
# A Kubernetes node name (RFC 1123, lower case): quick-start requires each hostname to equal its node name.
HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
USER = re.compile(r"^[A-Za-z0-9_]+$")  # OpenPAI user names
NO_WORKER = Text("小组需要至少一个 worker", "the group needs at least one worker")


@dataclass(frozen=True)
class Problem:
    """One broken rule: how bad, where (a JSON pointer into the inventory), and what to do, in both languages."""

    severity: str  # error | warning: as `hivedlab validate` reports it
    pointer: str
    text: Text
    need: str = ""  # NEEDS_IP | NEEDS_HOSTNAME: an error for a command that needs it, a warning for the others

    def as_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "pointer": self.pointer, **self.text.as_dict()}

    def for_command(self, needs: frozenset[str]) -> Problem:
        """The problem as a command with these needs sees it."""
        if not self.need:
            return self
        return Problem(ERROR if self.need in needs else WARNING, self.pointer, self.text, self.need)


def _unknown_key(pointer: str, key: str, known: tuple[str, ...]) -> Problem:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint_zh, hint_en = (f"是不是 '{close[0]}'？", f"did you mean '{close[0]}'?") if close else ("", "")
    return Problem(WARNING, f"{pointer}/{key}", Text(
        f"未知的键 '{key}'：{hint_zh or '已忽略'}（可用：{', '.join(known)}）",
        f"unknown key '{key}': {hint_en or 'ignored'} (known: {', '.join(known)})"))


def _typo_of(member: Mapping[str, Any], key: str) -> tuple[str, str]:
    """A missing key's likely misspelling among the member's unknown keys, as a clause in zh and en ("" if none)."""
    unknown = [str(k) for k in member if k not in KEYS]
    close = difflib.get_close_matches(key, unknown, n=1, cutoff=0.6)
    return ((f"（'{close[0]}' 是不是 '{key}' 的拼写错误？）", f" ('{close[0]}' here: did you mean '{key}'?)")
            if close else ("", ""))


def roles_of(member: Mapping[str, Any]) -> list[Any]:
    roles = member.get("roles")
    return [roles] if isinstance(roles, str) else roles if isinstance(roles, list) else []


def _member_problems(i: int, member: Mapping[str, Any]) -> list[Problem]:
    ptr = f"/members/{i}"
    found = [_unknown_key(ptr, str(key), KEYS) for key in member if key not in KEYS]
    name = member.get("name")
    user = member.get("user", name)
    if not isinstance(user, str) or not USER.match(user):
        found.append(Problem(ERROR, f"{ptr}/user", Text(f"用户名 {user!r} 不是合法的 OpenPAI 用户名（字母、数字、_）",
                                                        f"user {user!r} is not a valid OpenPAI user name (letters, "
                                                        "digits, _)")))
    roles = roles_of(member)
    if not roles:
        found.append(Problem(ERROR, f"{ptr}/roles", Text(f"roles 必须列出 {', '.join(ROLES)} 中的一个或多个",
                                                         f"roles must list one or more of {', '.join(ROLES)}")))
    for role in roles:
        if role not in ROLES:
            found.append(Problem(ERROR, f"{ptr}/roles", Text(f"未知的角色 {role!r}；可用 {', '.join(ROLES)}",
                                                             f"unknown role {role!r}; use {', '.join(ROLES)}")))
    hostname = member.get("hostname")
    if hostname is not None and (not isinstance(hostname, str) or not HOSTNAME.match(hostname)):
        found.append(Problem(ERROR, f"{ptr}/hostname", Text(
            f"主机名 {hostname!r} 不是合法的 Kubernetes 节点名"
            "（小写字母、数字、'-' 和 '.'，与该机器上 `hostname` 的输出相同）",
            f"hostname {hostname!r} is not a valid Kubernetes node name (lower-case letters, digits, '-' and '.', "
            "equal to what `hostname` prints on that machine)")))
    elif hostname is None and "worker" in roles:
        typo_zh, typo_en = _typo_of(member, "hostname")
        found.append(Problem(ERROR, f"{ptr}/hostname", Text(
            f"{name} 是 worker，需要 hostname：它是 HiveD 配置中的 K8s 节点名{typo_zh}",
            f"{name} is a worker and needs its hostname: it is the K8s node name in the HiveD config{typo_en}"),
            need=NEEDS_HOSTNAME))
    ip = member.get("ip")
    if ip is None and ("master" in roles or "worker" in roles):
        typo_zh, typo_en = _typo_of(member, "ip")
        found.append(Problem(WARNING, f"{ptr}/ip", Text(
            f"{name} 是集群中的机器，需要 ip：部署（deploy-inputs）和检查（doctor）通过它访问该机器{typo_zh}",
            f"{name} is a cluster machine and needs its ip: deploying (deploy-inputs) and checking (doctor) reach "
            f"the machine through it{typo_en}"), need=NEEDS_IP))
    elif ip is not None:
        try:
            ipaddress.ip_address(str(ip))
        except ValueError:
            found.append(Problem(ERROR, f"{ptr}/ip", Text(f"ip {ip!r} 不是 IP 地址",
                                                          f"ip {ip!r} is not an IP address")))
    gpus = member.get("gpus", 0)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        found.append(Problem(ERROR, f"{ptr}/gpus", Text(f"gpus 必须是 0 或更大的整数，而不是 {gpus!r}",
                                                        f"gpus must be a whole number 0 or more, not {gpus!r}")))
    elif "worker" in roles and gpus == 0:
        found.append(Problem(WARNING, f"{ptr}/gpus", Text("gpus: 0 的 worker 上没有可运行实验 GPU 任务的资源",
                                                          "a worker with gpus: 0 gives the lab's GPU jobs nothing "
                                                          "to run on")))
    if "dev-box" in roles and ("master" in roles or "worker" in roles):
        found.append(Problem(ERROR, f"{ptr}/roles", Text(f"dev-box（{name}）必须是集群之外的另一台机器",
                                                         f"the dev-box ({name}) must be a machine outside the "
                                                         "cluster")))
    return found


def _duplicates(members: list[Any]) -> list[Problem]:
    found: list[Problem] = []
    seen: dict[str, dict[str, int]] = {key: {} for key in ("name", "user", "hostname", "ip")}
    for i, member in enumerate(members):
        if not isinstance(member, Mapping):
            continue
        for key in seen:
            value = member.get(key, member.get("name")) if key == "user" else member.get(key)
            if not isinstance(value, str | int) or isinstance(value, bool):
                continue
            text = str(value) if key == "ip" else str(value).lower()
            if text in seen[key]:
                other = seen[key][text]
                found.append(Problem(ERROR, f"/members/{i}/{key}", Text(f"{key} {value!r} 已被 members[{other}] 使用",
                                                                        f"{key} {value!r} is also used by "
                                                                        f"members[{other}]")))
            seen[key].setdefault(text, i)
    return found


def shape_problems(data: Any) -> list[Problem]:
    """What no Inventory can be made without: a non-empty list of members, each a mapping with a name."""
    members = data.get("members") if isinstance(data, Mapping) else None
    if not isinstance(members, list) or not members:
        return [Problem(ERROR, "/members", Text("members 必须是小组成员的非空列表",
                                                "members must be a non-empty list of the group's members"))]
    found = []
    for i, member in enumerate(members):
        if not isinstance(member, Mapping):
            found.append(Problem(ERROR, f"/members/{i}", Text(
                "每个成员都必须是包含 name、user、roles、hostname、ip 的映射",
                "each member must be a mapping with name, user, roles, hostname, ip")))
        elif not isinstance(member.get("name"), str) or not member["name"].strip():
            found.append(Problem(ERROR, f"/members/{i}", Text("成员需要 'name'", "member needs a 'name'")))
    return found


def inventory_problems(data: Any) -> list[Problem]:
    """Every rule a group inventory must follow, on its parsed YAML (pure)."""
    found = shape_problems(data)
    if isinstance(data, Mapping):
        found += [_unknown_key("", str(key), TOP_KEYS) for key in data if key not in TOP_KEYS]
    members = data.get("members") if isinstance(data, Mapping) else None
    if not isinstance(members, list) or not members:
        return found
    for i, member in enumerate(members):
        if isinstance(member, Mapping):
            found += _member_problems(i, member)
    found += _duplicates(members)
    roles = [role for member in members if isinstance(member, Mapping) for role in roles_of(member)]
    if roles.count("master") != 1:
        found.append(Problem(ERROR, "/members", Text(f"小组需要恰好一个 master，实际有 {roles.count('master')} 个",
                                                     f"the group needs exactly one master, found "
                                                     f"{roles.count('master')}")))
    if roles.count("worker") < 1:
        found.append(Problem(ERROR, "/members", NO_WORKER))
    elif roles.count("worker") < 2:
        worker = next(m for m in members if isinstance(m, Mapping) and "worker" in roles_of(m))
        gpus = worker.get("gpus", 0)
        gpus = gpus if isinstance(gpus, int) and not isinstance(gpus, bool) and gpus > 0 else 1
        if gpus < LAB_CONFIG_GPUS:  # with 2 GPUs or more one worker holds both configs (lab_group.layouts)
            found.append(Problem(WARNING, "/members", Text(
                f"本组只有一台 worker（{gpus} 块 GPU），放不下实验的 HiveD 配置（需要 {LAB_CONFIG_GPUS} 块）："
                "hivedlab run 会在模拟集群上按实验手册的硬件运行这些实验，并在报告中说明",
                f"the group's single worker has {gpus} GPU, too few for the lab's HiveD configs ({LAB_CONFIG_GPUS} "
                "needed): hivedlab run runs the experiments on the simulated cluster on the manual's hardware and "
                "says so in the report")))
    return found
