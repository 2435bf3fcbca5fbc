"""The simulated OpenPAI v1.2.0 + HiveD v0.3.4 cluster (`SimCluster`), a `hivedlab.backends.protocol.Backend` on
virtual time.

Knobs (a plan's `sim:` block): see `hivedlab.backends.sim.settings`.
"""

from hivedlab.backends.sim.cluster import SimCluster
from hivedlab.backends.sim.settings import SimSettings, settings_from_mapping

__all__ = ["SimCluster", "SimSettings", "settings_from_mapping"]
