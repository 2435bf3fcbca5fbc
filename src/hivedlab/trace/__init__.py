"""Replay a multi-tenant GPU trace under several scheduling policies (docs/trace.md): the sharing anomaly that HiveD
was built for, measured on one cluster model. Above `models.hived`, below `cli`; the lab's experiments never use it."""
