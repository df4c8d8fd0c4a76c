"""Environment for a child process that must use the same (test) database and Redis as the test."""

from __future__ import annotations

import os
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent.parent


def database_url() -> str:
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    if connection.vendor == "postgresql":
        auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
        return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    raise RuntimeError(f"no URL form for {connection.vendor}")


def child_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ongrid_site.settings", "DATABASE_URL": database_url()}
    env.setdefault("SECRET_KEY", "ongrid-test-only-secret-key")
    env.update(extra)
    return env
