"""The simulated OpenPAI v1.2.0 + HiveD v0.3.4 cluster (`SimCluster`), a `hivedlab.cluster.backend.Backend` on virtual time.

Knobs (a plan's `sim:` block): see `hivedlab.cluster.sim.settings`.
"""

from hivedlab.cluster.sim.cluster import SimCluster
from hivedlab.cluster.sim.settings import SimSettings, settings_from_mapping

__all__ = ["SimCluster", "SimSettings", "settings_from_mapping"]
