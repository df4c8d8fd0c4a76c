"""Helpers every layer uses and that know nothing of tenants or the estate: secrets at rest, the
egress policy and the HTTP clients that apply it, capped JSON bodies, database calls from async
code, times as tools write them, log masking, the viewer's language and the management commands'
base. Nothing here imports the rest of ops_app."""
