"""Running the hot path's database calls from async code without queueing on one thread.

Django's async ORM and a plain `sync_to_async` run every call in one thread-sensitive thread per
process, so hundreds of concurrent turns wait for each other there. On PostgreSQL with the
connection pool (`ongrid_site.config`, `OPTIONS["pool"]`) the `a*` twins built here run on the
loop's thread pool instead: each call borrows a pooled, checked connection and gives it back when
it returns, so no thread keeps a connection the server may since have dropped. SQLite has one
writer: there, and on PostgreSQL without the pool, the twins keep the thread-sensitive thread.
See docs/architecture.md, "Talking to the database from async code".

`release_connection` is for the other side: a synchronous request that is about to wait (for a
turn, a signature) gives its thread's connection back first, so waiting never holds one.
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


def release_connection() -> None:
    """Give this thread's database connection back before a long wait (to the pool on PostgreSQL).

    A request thread keeps its connection until the request ends; one that then waits minutes for
    a turn would hold it all that time while the turn itself needs connections to finish, and
    enough such requests exhaust the pool. The next query borrows again. Inside a transaction the
    connection is the transaction, so it is kept (closing it would roll the work back).
    """
    connection = connections["default"]
    if not connection.in_atomic_block:
        connection.close()


def pool_exhausted(exc: BaseException) -> bool:
    """True when `exc` (or what caused it) is the connection pool's "no connection in time": the
    database is saturated, a condition to answer 503 and retry, not a bug to answer 500 for."""
    try:
        from psycopg_pool import PoolTimeout
    except ImportError:  # no PostgreSQL driver: there is no pool to exhaust
        return False
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, PoolTimeout):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
