"""Group-inventory checks (configs/group.example.yaml, read by hivedlab.group.inventory)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from hivedlab.checker.validate.findings import ERROR, WARNING, Finding, locate
from hivedlab.group.inventory import ROLES

_HOSTNAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_USER = re.compile(r"^[A-Za-z0-9_]+$")  # OpenPAI user names
_KNOWN = ("name", "user", "roles", "hostname", "ip", "gpus")


def check_inventory(data: Mapping[str, Any], positions: Mapping[str, tuple[int, int]], file: str) -> list[Finding]:
    findings: list[Finding] = []

    def add(severity: str, pointer: str, message: str) -> None:
        line, col = locate(positions, pointer)
        findings.append(Finding("inventory", severity, file, line, col, pointer, message))

    members = data.get("members")
    if not isinstance(members, list) or not members:
        add(ERROR, "/members", "members must be a non-empty list of the group's members")
        return findings
    seen: dict[str, dict[str, int]] = {"name": {}, "user": {}, "hostname": {}, "ip": {}}
    roles_count = dict.fromkeys(ROLES, 0)
    for i, member in enumerate(members):
        ptr = f"/members/{i}"
        if not isinstance(member, Mapping):
            add(ERROR, ptr, "each member must be a mapping with name, user, roles, hostname, ip")
            continue
        for key in member:
            if key not in _KNOWN:
                add(WARNING, f"{ptr}/{key}", f"unknown key '{key}' (known: {', '.join(_KNOWN)})")
        name = member.get("name")
        if not isinstance(name, str) or not name.strip():
            add(ERROR, ptr, "member needs a 'name'")
        user = member.get("user", name)
        if not isinstance(user, str) or not _USER.match(user):
            add(ERROR, f"{ptr}/user", f"user {user!r} is not a valid OpenPAI user name (letters, digits, _)")
        roles = member.get("roles")
        roles = [roles] if isinstance(roles, str) else roles
        if not isinstance(roles, list) or not roles:
            add(ERROR, f"{ptr}/roles", f"roles must list one or more of {', '.join(ROLES)}")
            roles = []
        for role in roles:
            if role not in ROLES:
                add(ERROR, f"{ptr}/roles", f"unknown role {role!r}; use {', '.join(ROLES)}")
            else:
                roles_count[role] += 1
        hostname = member.get("hostname")
        if hostname is not None and (not isinstance(hostname, str) or not _HOSTNAME.match(hostname)):
            add(ERROR, f"{ptr}/hostname", f"hostname {hostname!r} is not a valid Kubernetes node name (lower-case "
                "letters, digits, '-' and '.')")
        elif hostname is None and "worker" in roles:
            add(ERROR, ptr, "a worker needs its hostname: it is the K8s node name in the HiveD config")
        ip = member.get("ip")
        if ip is not None:
            try:
                ipaddress.ip_address(str(ip))
            except ValueError:
                add(ERROR, f"{ptr}/ip", f"ip {ip!r} is not an IP address")
        gpus = member.get("gpus", 0)
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
            add(ERROR, f"{ptr}/gpus", f"gpus must be a whole number 0 or more, not {gpus!r}")
        elif "worker" in roles and gpus == 0:
            add(WARNING, f"{ptr}/gpus", "a worker with gpus: 0 gives the lab's GPU jobs nothing to run on")
        for key, value in (("name", name), ("user", user), ("hostname", hostname), ("ip", ip)):
            if isinstance(value, str | int) and value is not None:
                text = str(value).lower() if key != "ip" else str(value)
                if text in seen[key]:
                    add(ERROR, f"{ptr}/{key}", f"{key} {value!r} is also used by members[{seen[key][text]}]")
                seen[key].setdefault(text, i)
    if roles_count["master"] != 1:
        add(ERROR, "/members", f"the group needs exactly one master, found {roles_count['master']}")
    if roles_count["worker"] < 1:
        add(ERROR, "/members", "the group needs at least one worker")
    elif roles_count["worker"] < 2:
        add(WARNING, "/members", "the two-VC config needs two workers; with one worker only the one-VC config renders")
    return findings
