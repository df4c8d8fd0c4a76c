"""Paging tools as alert sources (docs/alerts.md): one package per kind, each with `inbound.py`
(how its webhook is verified and what its body means: events in the one shape the estate's
ingestion takes) and `api.py` (its REST API, for writing Ongrid's findings back and for the
acknowledge / resolve / snooze a person or an agent asked for through the review gate);
`registry.py` is the table that picks a kind's package."""
