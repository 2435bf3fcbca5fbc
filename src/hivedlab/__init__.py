"""hivedlab: the toolkit for the OpenPAI v1.2.0 + HiveD v0.3.4 scheduling lab."""

__version__ = "0.1.0"
