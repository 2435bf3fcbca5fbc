"""Judging: what an evidence log shows (pod facts, timelines), what HiveD guarantees (rules), and the verdict."""
