"""The large recorded YAML fixtures, parsed once per test process.

`hived-cases.yaml` and `openpai-protocol-cases.yaml` are hundreds of kilobytes; PyYAML's pure-Python loader takes
seconds over them, and several test modules read them while pytest collects. libyaml's C loader (which PyYAML ships
with its wheels) reads the same YAML in a fraction of the time. The parsed data is shared: callers read it, and copy
what they change.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def fixture_yaml(path: Path) -> Any:
    """The parsed document of a YAML fixture file (one shared object per path and process)."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
