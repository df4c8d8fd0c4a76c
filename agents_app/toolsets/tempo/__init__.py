"""TraceQL search and trace fetches against the organization's Tempo data sources (docs/estate.md)."""
