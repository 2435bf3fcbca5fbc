"""The policies, each over the same cluster model and placement rules (docs/trace.md#policies)."""
