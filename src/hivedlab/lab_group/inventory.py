"""The group inventory (configs/group.example.yaml): members, their roles, hostnames and IPs, and its rules.

`inventory_problems` is the one place the inventory's rules live: `hivedlab validate` reports them as findings with
line numbers, and every command reads the inventory through `load_group`, which finds it (`--inventory`, else
./group.yaml, else the example), says which it uses, refuses its first error and prints its warnings once, each named
with the file, line and key. A rule that only some commands need (a machine's ip, a worker's hostname) is an error in
those and a warning in the others. `deploy_problems` adds only what OpenPAI's quick-start needs on top of them.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.resources import GROUP_EXAMPLE
from hivedlab.basics.text import Text
from hivedlab.models.openpai.js_yaml import YamlError, parse_yaml

ROLES = ("dev-box", "master", "worker")
ERROR, WARNING = "error", "warning"
KEYS = ("name", "user", "roles", "hostname", "ip", "gpus")
TOP_KEYS = ("group", "members")
GROUP_FILE = "group.yaml"  # the group's own inventory, in the folder a command runs in (the repository root)
# What only some commands cannot work without (`load_group`'s `needs`): an error there, a warning elsewhere.
NEEDS_IP, NEEDS_HOSTNAME = "ip", "hostname"
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


def _roles(member: Mapping[str, Any]) -> list[Any]:
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
    if isinstance(data, Mapping):
        found += [_unknown_key("", str(key), TOP_KEYS) for key in data if key not in TOP_KEYS]
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
    _refuse_errors(problems, source, {})
    return _build(data, source)


def _build(data: Any, source: str) -> Inventory:
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


def _where(pointer: str, source: str, lines: Mapping[str, tuple[int, int]]) -> str:
    """`FILE:LINE: members[1].usr:`, the line of the key or of its nearest ancestor in the file."""
    probe = pointer
    while probe not in lines and probe:
        probe = probe.rsplit("/", 1)[0]
    line = lines.get(probe, (0, 0))[0]
    key = re.sub(r"/(\d+)", r"[\1]", pointer).strip("/").replace("/", ".")
    return f"{source or 'inventory'}{f':{line}' if line else ''}:{f' {key}:' if key else ''}"


def _refuse_errors(problems: Sequence[Problem], source: str, lines: Mapping[str, tuple[int, int]]) -> None:
    errors = [problem for problem in problems if problem.severity == ERROR]
    if errors:
        first = errors[0]
        more = (f" (and {len(errors) - 1} more: run `hivedlab validate {source or 'FILE'}`)"
                if len(errors) > 1 else "")
        raise HivedlabError(f"{_where(first.pointer, source, lines)} {first.text.en} / {first.text.zh}{more}")


def recorded_inventory(path: Path) -> Inventory | None:
    """The inventory a run folder's earlier runs used (its inventory.yaml), None when there is none or it is
    unreadable."""
    if not path.is_file():
        return None
    try:
        return inventory_from_mapping(*read_inventory(path), strict=False)
    except HivedlabError:
        return None


def _who(inventory: Inventory) -> str:
    return f"{inventory.group or '?'} ({', '.join(m.user for m in inventory.members)})"


def group_change(earlier: Inventory, now: Inventory, out: str, simulated: bool) -> str | None:
    """Why a run of `now` may not join a folder of `earlier`'s runs (a folder belongs to one group: its group name,
    members and users), with the fix; None when they are the same group."""
    def key(inventory: Inventory) -> tuple[str, tuple[tuple[str, str], ...]]:
        return inventory.group, tuple((m.name, m.user) for m in inventory.members)

    if key(earlier) == key(now):
        return None
    also_en = f", or pass --replace to move the earlier runs to {out}/replaced/<time>/" if simulated else ""
    also_zh = f"，或加 --replace 把旧的运行移到 {out}/replaced/<时间>/" if simulated else ""
    return (f"{out} holds the runs of group {_who(earlier)}, not of this inventory's group {_who(now)}: a run folder "
            f"holds one group's runs; choose another --out{also_en} / {out} 中是小组 {_who(earlier)} 的运行，"
            f"不是本清单的小组 {_who(now)}：一个运行目录只放一个小组的运行；请换一个 --out 目录{also_zh}")


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
    data, source, _lines = _read(Path(path) if path else GROUP_EXAMPLE)
    return data, source


def _read(target: Path) -> tuple[Any, str, Mapping[str, tuple[int, int]]]:
    """The parsed YAML, its name and each key's (line, column) by JSON pointer (none when the positions cannot be
    told)."""
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
    try:
        lines = parse_yaml(text).positions
    except YamlError:
        lines = {}
    return data, str(target), lines


def load_inventory(path: str | Path | None = None) -> Inventory:
    """Load a group inventory, refusing its first broken rule; the shipped example when no path is given."""
    data, source = read_inventory(path)
    return inventory_from_mapping(data, source)


@dataclass(frozen=True)
class GroupFile:
    """An inventory file as a command found and read it: its problems as that command sees them (`needs`)."""

    path: Path
    shown: str  # how the messages name it: as given, ./group.yaml, or configs/group.example.yaml
    example: bool  # the shipped example, used because neither --inventory nor ./group.yaml was there
    found: bool  # found without --inventory (./group.yaml or the example): `say` names it
    data: Any
    lines: Mapping[str, tuple[int, int]]
    problems: tuple[Problem, ...]

    def located(self, problem: Problem) -> Problem:
        """The problem with the file, line and key in front of its text (both languages)."""
        where = _where(problem.pointer, self.shown, self.lines)
        return Problem(problem.severity, problem.pointer, Text(f"{where} {problem.text.zh}",
                                                               f"{where} {problem.text.en}"), problem.need)

    def inventory(self) -> Inventory:
        """The inventory, refusing the first error (`FILE:LINE: key: en / zh`)."""
        _refuse_errors(self.problems, self.shown, self.lines)
        return _build(self.data, str(self.path))

    def say(self, inventory: Inventory, warnings: bool = True) -> None:
        """On stderr: the group and its file in one line when no --inventory named it, then (unless the command
        lists them itself) each warning once."""
        what = (" — the example: copy it to ./group.yaml and fill in your group's / 示例清单：复制为 ./group.yaml "
                "并填写本组的信息" if self.example else "")
        if self.found:
            print(f"小组 / group: {inventory.group or '?'} ({self.shown}){what}", file=sys.stderr, flush=True)
        said = (f"{_where(p.pointer, self.shown, self.lines)} {p.text.en} / {p.text.zh}"
                for p in self.problems if warnings and p.severity == WARNING)
        for line in dict.fromkeys(said):
            print(f"warning / 注意: {line}", file=sys.stderr, flush=True)


def group_file(option: str | None, here: Path | None = None) -> tuple[Path, str]:
    """The inventory a command uses and how it is shown: `--inventory`, else `group.yaml` in `here` (the current
    folder), else the shipped example (never shown by an absolute path)."""
    if option:
        return Path(option), option
    own = (here if here is not None else Path()) / GROUP_FILE
    if own.is_file():
        return own, shown_path(own)
    return GROUP_EXAMPLE, "configs/group.example.yaml"


def shown_path(path: Path) -> str:
    """A path as the student would type it: relative to the current folder when it is below it."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative if "/" in relative else "./" + relative


def read_group(option: str | None, needs: frozenset[str] = frozenset(), here: Path | None = None) -> GroupFile:
    """The one reader of the inventory for every command: find it (`group_file`), read it, and judge it as a
    command with these `needs` sees it."""
    path, shown = group_file(option, here)
    data, _source, lines = _read(path)
    problems = tuple(problem.for_command(needs) for problem in inventory_problems(data))
    return GroupFile(path, shown, path == GROUP_EXAMPLE and not option, not option, data, lines, problems)


def load_group(option: str | None, needs: frozenset[str] = frozenset(), here: Path | None = None,
               say: bool = True) -> Inventory:
    """`read_group`, refusing its first error, then (`say`) naming the group and printing its warnings once."""
    group = read_group(option, needs, here)
    inventory = group.inventory()
    if say:
        group.say(inventory)
    return inventory
