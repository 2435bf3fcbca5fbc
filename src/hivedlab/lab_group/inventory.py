"""The group inventory (configs/group.example.yaml): members, their roles, hostnames and IPs.

Every command reads it through `load_group`, which finds it (`--inventory`, else ./group.yaml, else the example), says
which it uses, refuses its first error and prints its warnings once, each named with the file, line and key; the rules
themselves are `hivedlab.lab_group.rules`, which `hivedlab validate` reports with line numbers too.
`deploy_problems` adds only what OpenPAI's quick-start needs on top of them.
"""

from __future__ import annotations

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
from hivedlab.lab_group.rules import ERROR, WARNING, Problem, inventory_problems, roles_of, shape_problems
from hivedlab.models.openpai.js_yaml import YamlError, parse_yaml

GROUP_FILE = "group.yaml"  # the group's own inventory, in the folder a command runs in (the repository root)


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
    problems = inventory_problems(data) if strict else shape_problems(data)
    _refuse_errors(problems, source, {})
    return _build(data, source)


def _build(data: Any, source: str) -> Inventory:
    members = []
    for raw in data["members"]:
        gpus = raw.get("gpus", 0)
        members.append(Member(
            name=str(raw["name"]),
            user=str(raw.get("user") or raw["name"]).lower(),
            roles=tuple(str(role) for role in roles_of(raw)),
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
        if self.found:
            print(group_line(inventory.group, self.shown, self.example), file=sys.stderr, flush=True)
        said = (f"{_where(p.pointer, self.shown, self.lines)} {p.text.en} / {p.text.zh}"
                for p in self.problems if warnings and p.severity == WARNING)
        for line in dict.fromkeys(said):
            print(f"warning / 注意: {line}", file=sys.stderr, flush=True)


def group_line(group: str, shown: str, example: bool = False) -> str:
    """The one line that says which inventory a command found by itself."""
    what = (" — the example: copy it to ./group.yaml and fill in your group's / 示例清单：复制为 ./group.yaml "
            "并填写本组的信息" if example else "")
    return f"小组 / group: {group or '?'} ({shown}){what}"


def group_file(option: str | None) -> tuple[Path, str]:
    """The inventory a command uses and how it is shown: `--inventory`, else `group.yaml` in the current folder, else
    the shipped example (never shown by an absolute path)."""
    if option:
        return Path(option), option
    own = Path(GROUP_FILE)
    if own.is_file():
        return own, shown_path(own)
    return GROUP_EXAMPLE, "configs/group.example.yaml"


def shown_path(path: Path) -> str:
    """A path as the student would type it: relative to the current folder when it is below it."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative if "/" in relative else "./" + relative


def read_group(option: str | None, needs: frozenset[str] = frozenset()) -> GroupFile:
    """The one reader of the inventory for every command: find it (`group_file`), read it, and judge it as a
    command with these `needs` sees it."""
    path, shown = group_file(option)
    data, _source, lines = _read(path)
    problems = tuple(problem.for_command(needs) for problem in inventory_problems(data))
    return GroupFile(path, shown, path == GROUP_EXAMPLE and not option, not option, data, lines, problems)


def load_group(option: str | None, needs: frozenset[str] = frozenset(), say: bool = True) -> Inventory:
    """`read_group`, refusing its first error, then (`say`) naming the group and printing its warnings once."""
    group = read_group(option, needs)
    inventory = group.inventory()
    if say:
        group.say(inventory)
    return inventory
