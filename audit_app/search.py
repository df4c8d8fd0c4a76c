"""Full-text search over session titles and message contents, for the audit session list.

`icontains` would scan every message of every session (a sequential LIKE '%x%' per query), which
does not hold at 100 000 sessions. Each database gets its own real word index instead:

* PostgreSQL: GIN expression indexes on `to_tsvector('simple', ...)`, queried with
  `websearch_to_tsquery` (quoted phrases, `or`, `-word`). The `simple` configuration does no
  stemming, so Spanish, French and English text, host names and paths are all matched as written.
* SQLite: FTS5 external-content tables kept in step with triggers; every word must appear.

Both are created by `ensure_fulltext()` after each `migrate` rather than by a migration, because
Django's SQLite schema editor rebuilds a table (and silently drops its triggers) whenever a later
migration alters it; running after every migrate puts missing pieces back and reindexes.
"""

from __future__ import annotations

import logging

from django.db import connections
from django.db.models import BooleanField, Exists, OuterRef, Q
from django.db.models.expressions import RawSQL

from chat_app.models import ChatMessage

logger = logging.getLogger(__name__)

_POSTGRES_INDEXES = {
    "chat_messages_fts_idx": "CREATE INDEX IF NOT EXISTS chat_messages_fts_idx ON chat_messages "
    "USING gin (to_tsvector('simple', content))",
    "chat_sessions_title_fts_idx": "CREATE INDEX IF NOT EXISTS chat_sessions_title_fts_idx ON chat_sessions "
    "USING gin (to_tsvector('simple', title))",
}

# (fts table, source table, indexed column)
_SQLITE_TABLES = (
    ("chat_messages_fts", "chat_messages", "content"),
    ("chat_sessions_fts", "chat_sessions", "title"),
)


def _sqlite_statements(fts: str, source: str, column: str) -> list[str]:
    return [
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} "
        f"USING fts5({column}, content='{source}', content_rowid='id')",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_ai AFTER INSERT ON {source} BEGIN "
        f"INSERT INTO {fts}(rowid, {column}) VALUES (new.id, new.{column}); END",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_ad AFTER DELETE ON {source} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {column}) VALUES ('delete', old.id, old.{column}); END",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_au AFTER UPDATE OF {column} ON {source} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {column}) VALUES ('delete', old.id, old.{column}); "
        f"INSERT INTO {fts}(rowid, {column}) VALUES (new.id, new.{column}); END",
    ]


def ensure_fulltext(using: str = "default") -> None:
    """Create whatever part of the word index is missing (idempotent; cheap when all exist)."""
    connection = connections[using]
    tables = connection.introspection.table_names()
    if "chat_messages" not in tables or "chat_sessions" not in tables:
        return
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for statement in _POSTGRES_INDEXES.values():
                cursor.execute(statement)
        elif connection.vendor == "sqlite":
            for fts, source, column in _SQLITE_TABLES:
                names = [fts, f"{fts}_ai", f"{fts}_ad", f"{fts}_au"]
                cursor.execute("SELECT count(*) FROM sqlite_master WHERE name IN (%s, %s, %s, %s)", names)
                complete = cursor.fetchone()[0] == len(names)
                if complete:
                    continue
                for statement in _sqlite_statements(fts, source, column):
                    cursor.execute(statement)
                cursor.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")
                logger.info("rebuilt the full-text index %s", fts)


def ensure_fulltext_after_migrate(sender=None, using: str = "default", **kwargs) -> None:
    ensure_fulltext(using)


def _fts5_query(text: str) -> str:
    """Every word as a quoted FTS5 phrase: user input can never be read as FTS5 syntax."""
    return " ".join('"' + word.replace('"', '""') + '"' for word in text.split())


def _postgres_match(text: str) -> Q:
    """EXISTS for messages, IN for titles: measured on 100 000 sessions / 300 000 messages, this
    shape lets the planner either walk the newest sessions and probe their few messages (common
    words: under a millisecond) or read the GIN index and hash the hits (rare words: ~30 ms).
    An IN over messages forces the hash even for words found in every message (~1.5 s)."""
    # Unqualified `content` resolves to the subquery's chat_messages (chat_sessions has no such column).
    words = RawSQL(
        "to_tsvector('simple', content) @@ websearch_to_tsquery('simple', %s)", [text], BooleanField()
    )
    messages = ChatMessage.objects.filter(words, session=OuterRef("pk"))
    titles = RawSQL(
        "SELECT id FROM chat_sessions "
        "WHERE to_tsvector('simple', title) @@ websearch_to_tsquery('simple', %s)",
        [text],
    )
    return Q(Exists(messages)) | Q(pk__in=titles)


def matching_sessions(text: str, using: str = "default") -> Q:
    """A filter on ChatSession: the title or any of its messages contains the words of `text`."""
    vendor = connections[using].vendor
    if vendor == "postgresql":
        return _postgres_match(text)
    if vendor == "sqlite":
        query = _fts5_query(text)
        messages = RawSQL(
            "SELECT session_id FROM chat_messages WHERE id IN "
            "(SELECT rowid FROM chat_messages_fts WHERE chat_messages_fts MATCH %s)",
            [query],
        )
        titles = RawSQL("SELECT rowid FROM chat_sessions_fts WHERE chat_sessions_fts MATCH %s", [query])
        return Q(pk__in=messages) | Q(pk__in=titles)
    # another backend: correct, if slow
    return Q(title__icontains=text) | Q(
        pk__in=ChatMessage.objects.filter(content__icontains=text).values("session")
    )
