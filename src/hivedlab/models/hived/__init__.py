"""HiveD v0.3.4's scheduler model (docs/hived-config-and-cells.md): pure Python, standard library only.

`load_config` turns a parsed HiveD config into a `HivedConfig` (or raises `ConfigError`); `HivedScheduler` replays
HiveD's start-up and then answers `schedule` calls with exactly one of `Bind`, `Preempt` or `Wait`.
"""

from hivedlab.models.hived.algorithm import HivedScheduler
from hivedlab.models.hived.cell import InternalError
from hivedlab.models.hived.config import ConfigError, HivedConfig, load_config
from hivedlab.models.hived.types import (
    PHASE_FILTERING,
    PHASE_PREEMPTING,
    Bind,
    BindInfo,
    MemberBindInfo,
    Phase,
    PodPlacement,
    PodRef,
    PodSchedulingSpec,
    Preempt,
    UserError,
    Wait,
    parse_spec,
)

__all__ = [
    "PHASE_FILTERING", "PHASE_PREEMPTING", "Bind", "BindInfo", "ConfigError", "HivedConfig", "HivedScheduler",
    "InternalError", "MemberBindInfo", "Phase", "PodPlacement", "PodRef", "PodSchedulingSpec", "Preempt",
    "UserError", "Wait", "load_config", "parse_spec",
]
