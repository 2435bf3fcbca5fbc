"""Where the cluster's services are: OpenPAI's rest-server (through pylon) and HiveD's web service, from an option,
the environment, or the inventory's master (docs/deployment.md). The one owner of both rules."""

from __future__ import annotations

from collections.abc import Mapping

from hivedlab.backends.pai.hived_inspect import hived_url
from hivedlab.basics.errors import HivedlabError
from hivedlab.lab_group.inventory import Inventory

PAI_URL_ENV = "HIVEDLAB_PAI_URL"
HIVED_URL_ENV = "HIVEDLAB_HIVED_URL"


def pai_address(inventory: Inventory | None, given: str | None, env: Mapping[str, str], option: str = "") -> str:
    """The rest-server's address: `given` (the command's `option`), `HIVEDLAB_PAI_URL`, else `http://<master ip>`."""
    master = inventory.master_ip if inventory is not None else None
    url = given or env.get(PAI_URL_ENV) or (f"http://{master}" if master else None)
    if not url:
        raise HivedlabError(f"no OpenPAI address: {_ways(option, PAI_URL_ENV)}")
    return url


def hived_address(inventory: Inventory | None, given: str | None, env: Mapping[str, str], option: str = "") -> str:
    """HiveD's web service: `given`, `HIVEDLAB_HIVED_URL`, else the master's HiveD NodePort."""
    master = inventory.master_ip if inventory is not None else None
    url = given or env.get(HIVED_URL_ENV) or (hived_url(master) if master else None)
    if not url:
        raise HivedlabError(f"no HiveD address: {_ways(option, HIVED_URL_ENV)}")
    return url


def _ways(option: str, variable: str) -> str:
    give = f"give {option}, " if option else ""
    return f"{give}set {variable}, or give the master's ip in the inventory"
