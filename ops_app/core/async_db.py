"""Running the hot path's database calls from async code without queueing on one thread.

Django's async ORM and a plain `sync_to_async` run every call in one thread-sensitive thread per
process, so hundreds of concurrent turns wait for each other there. On PostgreSQL with the
connection pool (`ongrid_site.config`, `OPTIONS["pool"]`) the `a*` twins built here run on the
loop's thread pool instead: each call borrows a pooled, checked connection and gives it back when
it returns, so no thread keeps a connection the server may since have dropped. SQLite has one
writer: there, and on PostgreSQL without the pool, the twins keep the thread-sensitive thread.
See docs/architecture.md, "Talking to the database from async code".
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections

P = ParamSpec("P")
R = TypeVar("R")


def pooled_database() -> bool:
    """True when database calls may run on any thread: PostgreSQL behind the connection pool."""
    db = connections["default"]
    return db.vendor == "postgresql" and bool(db.settings_dict.get("OPTIONS", {}).get("pool"))


def db_twin(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """The async twin of the synchronous database function `fn` (see the module docstring)."""
    on_orm_thread = sync_to_async(fn)

    def borrowing(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        finally:
            connections["default"].close()  # back to the pool

    on_thread_pool = sync_to_async(borrowing, thread_sensitive=False)

    @functools.wraps(fn)
    async def twin(*args: P.args, **kwargs: P.kwargs) -> R:
        if pooled_database():
            return await on_thread_pool(*args, **kwargs)
        return await on_orm_thread(*args, **kwargs)

    return twin
