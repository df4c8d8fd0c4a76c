"""Append-only audit rows.

An audit trail is only evidence if nobody can rewrite it afterwards, so the guard lives in the
model layer rather than in each view: a row can be created, never changed, and only the
retention purge may delete. Two writes stay possible because Django performs them on its own:
nulling the session link when a chat session is deleted (the row outlives the session), and the
database-level cascade when a whole organization is removed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import models

_PURGING: ContextVar[bool] = ContextVar("audit_purging", default=False)


class ImmutableAuditRow(Exception):
    """Raised on any attempt to modify or delete an audit row outside the retention purge."""


@contextmanager
def purging() -> Iterator[None]:
    """Allow deletes of audit rows for the duration of the block (retention purge only)."""
    token = _PURGING.set(True)
    try:
        yield
    finally:
        _PURGING.reset(token)


def _refuse(what: str) -> None:
    raise ImmutableAuditRow(f"audit rows are append-only: {what} is not allowed")


class AppendOnlyQuerySet(models.QuerySet):
    def update(self, **kwargs):
        # Deleting a ChatSession nulls the link through this very call (on_delete=SET_NULL).
        if set(kwargs) == {"session"} and kwargs["session"] is None:
            return super().update(**kwargs)
        _refuse("update()")

    def bulk_update(self, objs, fields, batch_size=None):
        _refuse("bulk_update()")

    def delete(self):
        if not _PURGING.get():
            _refuse("delete() outside the retention purge")
        return super().delete()


class AppendOnlyModel(models.Model):
    class Meta:
        abstract = True

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            _refuse(f"changing {type(self).__name__} #{self.pk}")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        if not _PURGING.get():
            _refuse(f"deleting {type(self).__name__} #{self.pk}")
        return super().delete(*args, **kwargs)
