"""PromQL against the organization's Prometheus data sources (docs/estate.md)."""
