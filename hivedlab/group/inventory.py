"""The group inventory (configs/group.example.yaml): members, their roles, hostnames and IPs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.resources import GROUP_EXAMPLE

ROLES = ("dev-box", "master", "worker")


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


def inventory_from_mapping(data: Any, source: str = "") -> Inventory:
    """Build an Inventory from parsed YAML; raises HivedlabError with one line on a shape error.

    The full rule set (with file:line:col findings) is `hivedlab validate`'s; this only refuses
    what would make the inventory unusable.
    """
    where = source or "inventory"
    if not isinstance(data, dict) or not isinstance(data.get("members"), list) or not data["members"]:
        raise HivedlabError(f"{where}: expected a mapping with a non-empty 'members' list")
    members = []
    for index, raw in enumerate(data["members"]):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"].strip():
            raise HivedlabError(f"{where}: members[{index}] needs a 'name'")
        roles = raw.get("roles") or []
        if isinstance(roles, str):
            roles = [roles]
        gpus = raw.get("gpus", 0)
        members.append(
            Member(
                name=str(raw["name"]),
                user=str(raw.get("user") or raw["name"]).lower(),
                roles=tuple(str(r) for r in roles),
                hostname=str(raw.get("hostname") or ""),
                ip=str(raw.get("ip") or ""),
                gpus=gpus if isinstance(gpus, int) and not isinstance(gpus, bool) else 0,
            )
        )
    return Inventory(group=str(data.get("group") or ""), members=tuple(members), source=source)


def load_inventory(path: str | Path | None = None) -> Inventory:
    """Load a group inventory; the shipped example when no path is given."""
    target = Path(path) if path else GROUP_EXAMPLE
    try:
        text = target.read_text(encoding="utf-8")
    except OSError as exc:
        raise HivedlabError(f"cannot read group inventory {target}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise HivedlabError(f"{target}: not valid YAML: {str(exc).splitlines()[0]}") from None
    return inventory_from_mapping(data, str(target))
