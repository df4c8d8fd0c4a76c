"""The Celery app. Tasks are discovered in every installed app's `tasks.py`.

Also the database side of a worker's process lifecycle (docs/runtime.md, "Running it"): a
worker process carries many turns at once on its own event loop (agents_app/runtime/turn_host.py),
which borrow pooled PostgreSQL connections from many threads while Celery tasks come and go. So:

- nothing database-related crosses a fork: the prefork parent releases its connections and closes
  its pool before every fork, and a child drops whatever it inherited anyway, without network I/O
  (closing an inherited socket properly would close the parent's session on the server too);
- Celery's Django fixup, which closes the whole pool after every task in a prefork child, is
  replaced by Django's own per-request hygiene (`close_old_connections`) for the task's thread:
  closing the pool under the turns still running on the loop is what failed them with
  `PoolClosed`;
- gevent and eventlet are refused at start: their monkey-patching turns the turn host's loop thread
  into a greenlet, which cannot carry an asyncio loop beside Celery's own.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery, signals
from django.db import close_old_connections, connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ongrid_site.settings")

log = logging.getLogger(__name__)

app = Celery("ongrid")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The agents layer keeps its tasks with the runtime (agents_app/runtime/tasks.py).
app.autodiscover_tasks(["agents_app.runtime"])

SUPPORTED_POOLS = ("prefork", "threads", "solo")
REFUSED_POOLS = ("gevent", "eventlet")

# What a prefork child inherited: kept referenced (never closed, never collected) so that no
# finalizer ever talks to the server over a socket the parent still owns.
_inherited: list[Any] = []
_parent_pid: int | None = None


def pool_name(pool_cls: Any) -> str:
    """The pool's short name ("prefork", "threads", "solo", "gevent"…) from what the CLI passed."""
    if isinstance(pool_cls, str):
        return pool_cls.rsplit(":", 1)[0].rsplit(".", 1)[-1]
    module = getattr(pool_cls, "__module__", "") or ""
    short = module.rsplit(".", 1)[-1]
    return {"thread": "threads"}.get(short, short)


def refusal(pool_cls: Any) -> str | None:
    """The one line a worker with a pool that cannot carry the turn host stops with, else None."""
    name = pool_name(pool_cls)
    if any(refused in name for refused in REFUSED_POOLS):
        choices = ", ".join(f"--pool={supported}" for supported in SUPPORTED_POOLS)
        return (
            f"Ongrid cannot run on the {name} pool (its monkey-patching breaks the worker's event loop "
            f"thread); use one of {choices}."
        )
    return None


@signals.worker_init.connect
def _prepare_worker(sender: Any = None, **kwargs: Any) -> None:
    """Runs in the worker's main process before its pool starts (after Celery's Django fixup)."""
    global _parent_pid
    pool_cls = getattr(sender, "pool_cls", None)
    refused = refusal(pool_cls)
    if refused:
        log.critical(refused)
        raise SystemExit(refused)
    _keep_the_pool_across_tasks()
    if pool_name(pool_cls) != "prefork":
        _watch_agent_files()  # threads / solo: this process runs the tasks (starting twice is a no-op)
    if pool_name(pool_cls) == "prefork" and _parent_pid is None:
        _parent_pid = os.getpid()
        os.register_at_fork(before=_release_database_before_fork)
        # Connected now, after the task modules' own worker_ready receivers (the startup reaper):
        # the parent holds no idle pooled connections for the rest of its life.
        signals.worker_ready.connect(_release_parent_database, weak=False)


def _keep_the_pool_across_tasks() -> None:
    """Swap Celery's Django fixup per-task database handling for `close_old_connections`.

    The fixup closes the PostgreSQL pool after every task in a prefork child (celery 5.5+), but
    the turns a child carries outlive the task that handed them over and keep using the pool."""
    from celery.fixups.django import DjangoFixup

    for fixup in getattr(app, "_fixups", []):
        if isinstance(fixup, DjangoFixup):
            worker_fixup = fixup.worker_fixup
            signals.task_prerun.disconnect(worker_fixup.on_task_prerun)
            signals.task_postrun.disconnect(worker_fixup.on_task_postrun)
    signals.task_prerun.connect(_fresh_connection_for_the_task, weak=False)
    signals.task_postrun.connect(_fresh_connection_for_the_task, weak=False)


def _fresh_connection_for_the_task(sender: Any = None, **kwargs: Any) -> None:
    """The task thread's own connection goes back to the pool if stale or done with; an eager
    task runs inside its caller's request or transaction, whose connection must not be touched."""
    if not getattr(getattr(sender, "request", None), "is_eager", False):
        close_old_connections()


def _release_database_before_fork() -> None:
    """In the prefork parent only (it runs no turns): what the startup reaper used is released,
    so a child the pool (re)starts inherits no open connection and no open pool."""
    if os.getpid() != _parent_pid:
        return
    for conn in connections.all(initialized_only=True):
        try:
            conn.close()
            if getattr(conn, "pool", None) is not None:
                conn.close_pool()
        except Exception:  # noqa: BLE001 - a fork must never fail for a connection that is gone
            log.debug("could not release %s before a fork", conn.alias, exc_info=True)


def _release_parent_database(**kwargs: Any) -> None:
    _release_database_before_fork()


def _watch_agent_files() -> None:
    """Mounted persona and skill files edited on disk go live in this process (docs/personas.md)."""
    from agents_app.api import watch_agent_files

    watch_agent_files()


@signals.worker_process_init.connect
def _drop_inherited_database(**kwargs: Any) -> None:
    """In a prefork child, before anything else runs in it: forget the parent's connections and
    pools without closing them (no I/O on sockets shared with the parent); the child opens its own
    on first use."""
    for conn in connections.all():
        if conn.connection is not None:
            _inherited.append(conn.connection)
            conn.connection = None
        pools = getattr(type(conn), "_connection_pools", None)
        if pools and conn.alias in pools:
            _inherited.append(pools.pop(conn.alias))


@signals.worker_process_init.connect
def _watch_agent_files_in_the_child(**kwargs: Any) -> None:
    """A prefork child runs the turns, so it watches (a thread does not cross the fork); the solo
    pool sends this signal too. Connected after `_drop_inherited_database`, which must run first."""
    _watch_agent_files()
