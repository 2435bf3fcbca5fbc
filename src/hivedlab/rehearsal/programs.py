"""What the rehearsal cluster runs, and the checks that each part is there at the right version.

The user's folder of OpenPAI's programs (docs/rehearsal.md says where each comes from):

    hivedscheduler/hivedscheduler        HiveD v0.3.4 (VERSION beside it: v0.3.4)
    frameworkcontroller/frameworkcontroller   FrameworkController v0.8.0 (VERSION: v0.8.0)
    rest-server/                         OpenPAI v1.2.0's rest-server with node_modules (package.json version 1.2.0,
                                         as the image's build sets it from PAI.VERSION)
    database-controller/src/             its database-controller with node_modules (package.json paiVersion v1.2.0)
    k8s-job-exit-spec.yaml               OpenPAI v1.2.0's job exit spec (src/k8s-job-exit-spec/config/)

From Debian (`apt-get install etcd-server postgresql nodejs openssl`) and from `hivedlab rehearsal build`
(kube-apiserver, kube-controller-manager, kube-scheduler and kubectl 1.20.2 in the home's bin/).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hivedlab.basics.errors import HivedlabError
from hivedlab.rehearsal.settings import KUBE_PROGRAMS, Paths

HIVED_VERSION = "v0.3.4"
FC_VERSION = "v0.8.0"
PAI_VERSION = "v1.2.0"
KUBE_VERSION = "v1.20.2"
EXIT_SPEC = "k8s-job-exit-spec.yaml"


@dataclass(frozen=True)
class Part:
    """One part of the cluster: its name, where it is, and what is wrong with it (None: ready)."""

    name: str
    path: str
    problem: str | None


@dataclass(frozen=True)
class Programs:
    """The checked paths of everything `up` starts."""

    etcd: str
    postgres_bin: Path
    node: str
    openssl: str
    kube: dict[str, Path]
    hived: Path
    fc: Path
    rest_server: Path
    database_controller: Path
    exit_spec: Path


def version_file(folder: Path, binary: str, version: str) -> str | None:
    """The binary's problem (None: ready): missing, or a VERSION beside it other than `version` (a version ending
    in a dot is a series: `v0.4.` takes any v0.4.x)."""
    exe = folder / binary
    if not exe.is_file():
        return f"{exe} is missing"
    stamp = folder / "VERSION"
    found = stamp.read_text(encoding="utf-8").strip() if stamp.is_file() else None
    series = version.endswith(".")
    if not found:
        return f"{stamp} is missing (write {f'the tag, {version}x,' if series else version} in it)"
    if found != version and not (series and found.startswith(version)):
        return f"{stamp} says {found!r}, want {f'{version}x' if series else repr(version)}"
    return None


def _package(folder: Path, name: str, field: str, version: str) -> str | None:
    manifest = folder / "package.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{manifest} is missing or not JSON"
    if data.get("name") != name:
        return f"{manifest} is {data.get('name')!r}, not {name!r}"
    if str(data.get(field, "")).lstrip("v") != version.lstrip("v"):
        return f"{manifest} {field} is {data.get(field)!r}, want {version!r}"
    if not (folder / "node_modules").is_dir():
        return f"{folder}/node_modules is missing (run `npm install --omit=dev --install-links` there)"
    return None


def _postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    return found[-1].parent if found else None


def check_parts(paths: Paths, programs: Path | None, which: Callable[[str], str | None] = shutil.which) -> list[Part]:
    """Every part, each with its problem (None: ready). Pure apart from looking at the files."""
    parts = [Part(name, str(paths.program(name)), None if paths.program(name).is_file() else
                  f"not built: run `hivedlab rehearsal build` (Kubernetes {KUBE_VERSION} from Debian)")
             for name in KUBE_PROGRAMS]
    for tool, package in (("etcd", "etcd-server"), ("node", "nodejs"), ("openssl", "openssl")):
        found = which(tool)
        parts.append(Part(tool, found or tool, None if found else f"not installed: apt-get install {package}"))
    pg = _postgres_bin()
    parts.append(Part("postgresql", str(pg or "postgres"), None if pg else "not installed: apt-get install postgresql"))
    if programs is None:
        return parts
    parts += [
        Part("hivedscheduler", str(programs / "hivedscheduler"),
             version_file(programs / "hivedscheduler", "hivedscheduler", HIVED_VERSION)),
        Part("frameworkcontroller", str(programs / "frameworkcontroller"),
             version_file(programs / "frameworkcontroller", "frameworkcontroller", FC_VERSION)),
        Part("rest-server", str(programs / "rest-server"),
             _package(programs / "rest-server", "pai-rest-server", "version", PAI_VERSION)),
        Part("database-controller", str(programs / "database-controller" / "src"),
             _package(programs / "database-controller" / "src", "database-controller", "paiVersion", PAI_VERSION)),
        Part(EXIT_SPEC, str(programs / EXIT_SPEC),
             None if (programs / EXIT_SPEC).is_file() else f"{programs / EXIT_SPEC} is missing"),
    ]
    return parts


def require(paths: Paths, programs: Path, which: Callable[[str], str | None] = shutil.which) -> Programs:
    """The programs, or one line naming every missing part."""
    parts = check_parts(paths, programs, which)
    problems = [f"{p.name}: {p.problem}" for p in parts if p.problem]
    if problems:
        raise HivedlabError("the rehearsal cluster cannot start; missing: " + "; ".join(problems)
                            + " (docs/rehearsal.md) / 演练集群缺少以上部件")
    by_name = {p.name: p.path for p in parts}
    return Programs(
        etcd=by_name["etcd"], postgres_bin=Path(by_name["postgresql"]), node=by_name["node"],
        openssl=by_name["openssl"], kube={name: paths.program(name) for name in KUBE_PROGRAMS},
        hived=programs / "hivedscheduler" / "hivedscheduler",
        fc=programs / "frameworkcontroller" / "frameworkcontroller",
        rest_server=programs / "rest-server", database_controller=programs / "database-controller" / "src",
        exit_spec=programs / EXIT_SPEC,
    )
