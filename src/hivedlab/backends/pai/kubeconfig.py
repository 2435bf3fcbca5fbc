"""The kubeconfig a real run watches the cluster with: --kubeconfig, KUBECONFIG, else where quick-start writes it."""

from __future__ import annotations

import os
from pathlib import Path

from hivedlab.basics.errors import HivedlabError

DEFAULT_KUBECONFIG = "~/pai-deploy/kube/config"


def find_kubeconfig(kubeconfig: str | None, environ: dict[str, str] | os._Environ[str]) -> Path:
    raw = kubeconfig or environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
    path = Path(raw.split(os.pathsep)[0]).expanduser()
    if not path.is_file():
        raise HivedlabError(
            f"no kubeconfig at {path}: copy ~/pai-deploy/kube/config from the dev-box machine or set KUBECONFIG / "
            f"找不到 kubeconfig {path}：请从 dev-box 机器复制 ~/pai-deploy/kube/config 或设置 KUBECONFIG")
    return path
