"""Retrieval over the organization's runbooks and uploaded documents (docs/knowledge.md)."""
