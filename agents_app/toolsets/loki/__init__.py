"""LogQL against the organization's Loki data sources (docs/estate.md)."""
