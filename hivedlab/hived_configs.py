"""The lab's two HiveD configs, rendered for a group from its inventory with Jinja2."""

from __future__ import annotations

import jinja2

from hivedlab.errors import HivedlabError
from hivedlab.inventory import Inventory
from hivedlab.paths import HIVED_CONFIGS

CONFIG_NAMES = ("two-vc", "one-vc")
TEMPLATES = HIVED_CONFIGS / "templates"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_hived_config(name: str, inventory: Inventory) -> str:
    """Render `two-vc` or `one-vc` with the inventory's workers' hostnames (config order = inventory order)."""
    if name not in CONFIG_NAMES:
        raise HivedlabError(f"unknown HiveD config '{name}' (choose one of: {', '.join(CONFIG_NAMES)})")
    workers = inventory.workers
    needed = 2 if name == "two-vc" else 1
    if len(workers) < needed:
        raise HivedlabError(f"the '{name}' config needs {needed} worker(s) in the group inventory, found {len(workers)}")
    missing = [w.name for w in workers if not w.hostname]
    if missing:
        raise HivedlabError(f"worker(s) without a hostname in the group inventory: {', '.join(missing)}")
    return _environment().get_template(f"{name}.yaml.j2").render(workers=workers)
