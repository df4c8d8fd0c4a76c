"""One package per IM platform (its client, inbound payloads, thread, markup, webhook views) and
the registry that names them (`registry.py`, with the recipe for adding one)."""
