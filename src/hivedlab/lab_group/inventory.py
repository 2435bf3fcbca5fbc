"""The group inventory (configs/group.example.yaml): members, their roles, hostnames and IPs, and its rules.

`inventory_problems` is the one place the inventory's rules live: `hivedlab validate` reports them as findings with
line numbers, every command that loads an inventory refuses its first error with the same sentence, and
`deploy_problems` adds only what OpenPAI's quick-start needs on top of them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.resources import GROUP_EXAMPLE
from hivedlab.basics.text import Text

ROLES = ("dev-box", "master", "worker")
ERROR, WARNING = "error", "warning"
KEYS = ("name", "user", "roles", "hostname", "ip", "gpus")
LAB_CONFIG_GPUS = 2  # both lab configs hold two GPUs: two VCs of one (step 4.1), or one VC of two (step 4.5)
# A Kubernetes node name (RFC 1123, lower case): quick-start requires each hostname to equal its node name.
HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
USER = re.compile(r"^[A-Za-z0-9_]+$")  # OpenPAI user names
NO_WORKER = Text("小组需要至少一个 worker", "the group needs at least one worker")


@dataclass(frozen=True)
class Member:
    name: str
    user: str
    roles: tuple[str, ...]
    hostname: str = ""
    ip: str = ""
    gpus: int = 0


@dataclass(frozen=True)
class Inventory:
    group: str
    members: tuple[Member, ...]
    source: str = field(default="", compare=False)

    @property
    def workers(self) -> tuple[Member, ...]:
        return tuple(m for m in self.members if "worker" in m.roles)

    @property
    def users(self) -> tuple[str, ...]:
        return tuple(m.user for m in self.members)

    @property
    def masters(self) -> tuple[Member, ...]:
        """The members with the master role (quick-start's master.csv), in inventory order."""
        return tuple(m for m in self.members if "master" in m.roles)

    @property
    def master_ip(self) -> str | None:
        """The OpenPAI master's address: the first master's ip, None when no master has one."""
        return next((m.ip for m in self.masters if m.ip), None)


@dataclass(frozen=True)
class Problem:
    """One broken rule: how bad, where (a JSON pointer into the inventory), and what to do, in both languages."""

    severity: str  # error | warning
    pointer: str
    text: Text

    def as_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "pointer": self.pointer, **self.text.as_dict()}


def _roles(member: Mapping[str, Any]) -> list[Any]:
    roles = member.get("roles")
    return [roles] if isinstance(roles, str) else roles if isinstance(roles, list) else []


def _member_problems(i: int, member: Mapping[str, Any]) -> list[Problem]:
    ptr = f"/members/{i}"
    found = [Problem(WARNING, f"{ptr}/{key}", Text(f"未知的键 '{key}'（可用：{', '.join(KEYS)}）",
                                                    f"unknown key '{key}' (known: {', '.join(KEYS)})"))
             for key in member if key not in KEYS]
    name = member.get("name")
    user = member.get("user", name)
    if not isinstance(user, str) or not USER.match(user):
        found.append(Problem(ERROR, f"{ptr}/user", Text(f"用户名 {user!r} 不是合法的 OpenPAI 用户名（字母、数字、_）",
                                                        f"user {user!r} is not a valid OpenPAI user name (letters, "
                                                        "digits, _)")))
    roles = _roles(member)
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
        found.append(Problem(ERROR, ptr, Text("worker 需要主机名：它是 HiveD 配置中的 K8s 节点名",
                                              "a worker needs its hostname: it is the K8s node name in the HiveD "
                                              "config")))
    ip = member.get("ip")
    if ip is not None:
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


def _shape_problems(data: Any) -> list[Problem]:
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
    found = _shape_problems(data)
    members = data.get("members") if isinstance(data, Mapping) else None
    if not isinstance(members, list) or not members:
        return found
    for i, member in enumerate(members):
        if isinstance(member, Mapping):
            found += _member_problems(i, member)
    found += _duplicates(members)
    roles = [role for member in members if isinstance(member, Mapping) for role in _roles(member)]
    if roles.count("master") != 1:
        found.append(Problem(ERROR, "/members", Text(f"小组需要恰好一个 master，实际有 {roles.count('master')} 个",
                                                     f"the group needs exactly one master, found "
                                                     f"{roles.count('master')}")))
    if roles.count("worker") < 1:
        found.append(Problem(ERROR, "/members", NO_WORKER))
    elif roles.count("worker") < 2:
        worker = next(m for m in members if isinstance(m, Mapping) and "worker" in _roles(m))
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


def deploy_problems(inventory: Inventory) -> list[Problem]:
    """What OpenPAI's quick-start needs beyond the inventory's rules: a usable IPv4 address for every cluster
    machine."""
    found = []
    for index, member in enumerate(inventory.members):
        if "master" not in member.roles and "worker" not in member.roles:
            continue
        try:
            address = ipaddress.ip_address(member.ip)
            usable = address.version == 4 and not address.is_loopback and not address.is_unspecified
        except ValueError:
            usable = False
        if not usable:
            found.append(Problem(ERROR, f"/members/{index}/ip", Text(
                f"{member.name} 的 IP {member.ip!r} 不是可用的 IPv4 地址（quick-start 通过它登录该机器）",
                f"{member.name}'s IP {member.ip!r} is not a usable IPv4 address (quick-start logs in to the machine "
                "through it)")))
    return found


def inventory_from_mapping(data: Any, source: str = "", strict: bool = True) -> Inventory:
    """Build an Inventory from parsed YAML; its first broken rule is a one-line HivedlabError.

    `strict=False` reads an inventory a run recorded (for its report or its grade), refusing only a shape no
    Inventory can be made of: what the group did is shown as it was, not judged here.
    """
    problems = inventory_problems(data) if strict else _shape_problems(data)
    errors = [problem for problem in problems if problem.severity == ERROR]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more: run `hivedlab validate {source or 'FILE'}`)" if len(errors) > 1 else ""
        raise HivedlabError(f"{source or 'inventory'}: {first.pointer}: {first.text.en}{more}")
    members = []
    for raw in data["members"]:
        gpus = raw.get("gpus", 0)
        members.append(Member(
            name=str(raw["name"]),
            user=str(raw.get("user") or raw["name"]).lower(),
            roles=tuple(str(role) for role in _roles(raw)),
            hostname=str(raw.get("hostname") or ""),
            ip=str(raw.get("ip") or ""),
            gpus=gpus if isinstance(gpus, int) and not isinstance(gpus, bool) else 0,
        ))
    return Inventory(group=str(data.get("group") or ""), members=tuple(members), source=source)


def find_member(inventory: Inventory, name: str) -> Member:
    """The member called `name` (as in the inventory, or their OpenPAI user; case does not matter); an unknown name
    is a one-line error listing the inventory's members."""
    wanted = name.strip().lower()
    for member in inventory.members:
        if wanted in (member.name.lower(), member.user.lower()):
            return member
    names = ", ".join(member.name for member in inventory.members)
    raise HivedlabError(f"no member {name!r} in the group inventory (its members: {names}) / "
                        f"小组清单中没有组员 {name!r}（组员：{names}）")


def read_inventory(path: str | Path | None = None) -> tuple[Any, str]:
    """The parsed YAML of a group inventory (the shipped example when no path is given) and its name."""
    target = Path(path) if path else GROUP_EXAMPLE
    if not target.exists():
        raise HivedlabError(
            f"no group inventory at {target}: copy the example, `cp configs/group.example.yaml {target}`, and fill in "
            f"your group's members and machines (docs/deployment.md) / 找不到小组清单 {target}：请复制示例 "
            f"`cp configs/group.example.yaml {target}`，再填写本组的组员和机器")
    try:
        text = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HivedlabError(f"cannot read group inventory {target}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise HivedlabError(f"{target}: not valid YAML: {str(exc).splitlines()[0]}") from None
    return data, str(target)


def load_inventory(path: str | Path | None = None) -> Inventory:
    """Load a group inventory, refusing its first broken rule; the shipped example when no path is given."""
    data, source = read_inventory(path)
    return inventory_from_mapping(data, source)
