"""Incidents and alerting rules of the organization, and the two incident writes (docs/estate.md)."""
