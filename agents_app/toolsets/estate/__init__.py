"""Devices, recorded changes and the service graph of the organization (docs/estate.md)."""
