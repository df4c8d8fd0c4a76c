"""Silences in the organization's Alertmanager data sources (API v2; docs/review-gate.md)."""
