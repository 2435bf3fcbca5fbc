"""Where the rehearsal cluster keeps its state, and the loopback ports its programs listen on.

Two folders, both outside any repository:
- the home (`--home`, else `HIVEDLAB_REHEARSAL_HOME`, else `~/.cache/hivedlab/rehearsal`): the Debian build of
  Kubernetes (`bin/`), and while the cluster runs its state (`run/`: certificates, tokens, configs, etcd's and
  PostgreSQL's data, the record of started processes) and its logs (`logs/`);
- the programs (`--programs`, else `HIVEDLAB_REHEARSAL_PROGRAMS`): the user's folder of OpenPAI's programs
  (`hivedlab.rehearsal.programs`).

Two clusters live side by side on one machine when each has its own home and its own port offset (`--port-offset`,
else `HIVEDLAB_REHEARSAL_PORT_OFFSET`, else the one a running cluster of that home was started with), added to every
loopback port below.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.secrets import refuse_inside_repository

ENV_HOME = "HIVEDLAB_REHEARSAL_HOME"
ENV_PROGRAMS = "HIVEDLAB_REHEARSAL_PROGRAMS"
ENV_PORT_OFFSET = "HIVEDLAB_REHEARSAL_PORT_OFFSET"
DEFAULT_HOME = "~/.cache/hivedlab/rehearsal"
KUBE_PROGRAMS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")


@dataclass(frozen=True)
class Ports:
    """Loopback ports, chosen away from the ones a real master uses so that both can live on one machine."""

    etcd: int = 23790
    etcd_peer: int = 23800
    apiserver: int = 26443
    controller_manager: int = 26257
    scheduler_base: int = 26259  # the i-th VC's kube-scheduler serves its health on scheduler_base + i
    hived: int = 29096
    rest_server: int = 9186  # OpenPAI's own port: hivedlab's client then asks it directly, without pylon's /rest-server
    write_merger: int = 29187
    postgres: int = 25432
    default_scheduler: int = 26249  # with --kubeflow: Kubernetes' default scheduler (health on this + 50)
    kube_batch: int = 28080  # with --kubeflow: kube-batch's metrics

    def shifted(self, offset: int) -> Ports:
        return Ports(**{name: port + offset for name, port in asdict(self).items()})


@dataclass(frozen=True)
class Paths:
    """Every file the rehearsal cluster reads or writes, derived from the home folder."""

    home: Path

    @property
    def bin(self) -> Path:
        return self.home / "bin"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def run(self) -> Path:
        return self.home / "run"

    @property
    def record(self) -> Path:
        return self.run / "processes.json"

    @property
    def lock(self) -> Path:
        """Held while `up`, `switch` or `down` runs (`hivedlab.rehearsal.supervisor.exclusive`)."""
        return self.home / "lock"

    @property
    def cluster(self) -> Path:
        """What `up` started (`hivedlab.rehearsal.stack.Cluster`), while the cluster is up."""
        return self.run / "cluster.json"

    @property
    def kubeconfig(self) -> Path:
        return self.run / "kubeconfig"

    @property
    def admin_token(self) -> Path:
        return self.run / "admin-token"

    @property
    def faults(self) -> Path:
        return self.run / "kubelet-faults.json"

    def program(self, name: str) -> Path:
        return self.bin / name


@dataclass(frozen=True)
class Settings:
    paths: Paths
    programs: Path | None
    ports: Ports = Ports()


def resolve_home(option: str | None, environ: Mapping[str, str]) -> Path:
    """The home folder: the option, the variable, or the default; refused inside a git work tree (it holds tokens)."""
    home = Path(option or environ.get(ENV_HOME) or DEFAULT_HOME).expanduser().absolute()
    refuse_inside_repository(home, "the rehearsal cluster's folder",
                             f"choose another with --home or {ENV_HOME} (default {DEFAULT_HOME})")
    return home


def resolve_folder(option: str | None, environ: Mapping[str, str], variable: str) -> Path | None:
    """A folder the user names: the option, else the variable (OpenPAI's programs, the Kubeflow programs)."""
    value = option or environ.get(variable)
    return Path(value).expanduser().absolute() if value else None


def recorded_offset(paths: Paths) -> int:
    """The port offset of the cluster that runs from this home (0 when none runs, or the record is unreadable)."""
    try:
        value = json.loads(paths.cluster.read_text(encoding="utf-8")).get("port_offset", 0)
    except (OSError, ValueError, AttributeError):
        return 0
    return value if isinstance(value, int) else 0


def resolve_ports(option: int | None, environ: Mapping[str, str], recorded: int = 0) -> Ports:
    """The default ports moved by the offset (the option, else the variable, else the running cluster's)."""
    text = str(option) if option is not None else environ.get(ENV_PORT_OFFSET, str(recorded))
    try:
        offset = int(text)
    except ValueError:
        raise HivedlabError(f"{ENV_PORT_OFFSET} must be an integer, not {text!r}") from None
    ports = Ports().shifted(offset)
    if offset < 0 or max(asdict(ports).values()) > 65535 - 100:
        raise HivedlabError(f"port offset {offset} is out of range: 0 to {65535 - 100 - max(asdict(Ports()).values())}")
    return ports


def load_settings(home: str | None = None, programs: str | None = None,
                  environ: Mapping[str, str] | None = None, port_offset: int | None = None) -> Settings:
    env = os.environ if environ is None else environ
    paths = Paths(resolve_home(home, env))
    return Settings(paths, resolve_folder(programs, env, ENV_PROGRAMS),
                    resolve_ports(port_offset, env, recorded_offset(paths)))


def port_offset(settings: Settings) -> int:
    return settings.ports.apiserver - Ports().apiserver


def need_programs(settings: Settings) -> Path:
    if settings.programs is None:
        raise HivedlabError(f"no folder of OpenPAI's programs: name it with --programs or {ENV_PROGRAMS} "
                            "(docs/rehearsal.md) / 未指定 OpenPAI 程序所在目录：请用 --programs 或 "
                            f"{ENV_PROGRAMS} 指定")
    return settings.programs
