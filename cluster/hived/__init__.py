"""HiveD v0.3.4's scheduler model (spec/hived.md): pure Python, standard library only."""

from cluster.hived.config import ConfigError, HivedConfig, load_config

__all__ = ["ConfigError", "HivedConfig", "load_config"]
