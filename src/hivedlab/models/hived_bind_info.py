"""HiveD's pod-bind-info annotation as text, as the simulated cluster writes it on a bound pod
(docs/hived-config-and-cells.md#bind-info-and-the-pod-annotations). Reading HiveD's annotations back, as HiveD does, is
test code (`tests/support/hived_annotations.py`): nothing in the toolkit needs it."""

from __future__ import annotations

import yaml

from hivedlab.models.hived import BindInfo


def dump_bind_info(info: BindInfo) -> str:
    """The pod-bind-info annotation: node, leafCellIsolation, cellChain, affinityGroupBindInfo
    (docs/hived-config-and-cells.md#bind-info-and-the-pod-annotations)."""
    return yaml.safe_dump(info.to_dict(), sort_keys=False, default_flow_style=False)
