"""The database full-text engines behind knowledge retrieval: SQLite FTS5 and PostgreSQL.

Each engine only answers "which passages of this organization mention any of these words, best
first" (candidates). The score the user sees is computed afterwards, in Python, by one formula
for both engines (`ops_app.knowledge.vault.rank`), which is what makes a threshold such as 0.6 mean the
same thing on SQLite and on PostgreSQL.

The indexed column, `search_text`, holds terms already folded, stemmed and split into CJK bigrams
by `ops_app.knowledge.languages`, space-separated: SQLite's plain `unicode61` tokenizer (no porter)
and PostgreSQL's language-neutral `simple` configuration therefore index the very same terms, in
any language. Migration 0005 created the structures, 0020 rebuilt them for these terms; changing
the DDL needs a new migration. `ensure_index` (run after every migrate) puts back what a SQLite
table rebuild drops (its triggers), so passages saved after any later migration stay searchable.
"""

from __future__ import annotations

import logging
import math
from typing import Any

log = logging.getLogger(__name__)

PASSAGE_TABLE = "ops_app_knowledgepassage"
FTS_TABLE = "ops_app_knowledgepassage_fts"
PG_INDEX = "knowledge_passage_fts_idx"
PG_CONFIG = "simple"

SQLITE_CREATE = [
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(search_text, content='{PASSAGE_TABLE}', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 0')",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ai AFTER INSERT ON {PASSAGE_TABLE} BEGIN "
    f"INSERT INTO {FTS_TABLE}(rowid, search_text) VALUES (new.id, new.search_text); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ad AFTER DELETE ON {PASSAGE_TABLE} BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, search_text) "
    "VALUES ('delete', old.id, old.search_text); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_au AFTER UPDATE ON {PASSAGE_TABLE} BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, search_text) VALUES ('delete', old.id, old.search_text); "
    f"INSERT INTO {FTS_TABLE}(rowid, search_text) VALUES (new.id, new.search_text); END",
    # Rows that existed before the index (none on a fresh install) are indexed too.
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
]
SQLITE_DROP = [
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_ai",
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_ad",
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_au",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
]
PG_CREATE = [
    f"CREATE INDEX IF NOT EXISTS {PG_INDEX} ON {PASSAGE_TABLE} "
    f"USING GIN (to_tsvector('{PG_CONFIG}', search_text))"
]
PG_DROP = [f"DROP INDEX IF EXISTS {PG_INDEX}"]


def create_fulltext_index(apps, schema_editor) -> None:
    statements = {"sqlite": SQLITE_CREATE, "postgresql": PG_CREATE}.get(schema_editor.connection.vendor, [])
    for statement in statements:
        schema_editor.execute(statement)


def drop_fulltext_index(apps, schema_editor) -> None:
    statements = {"sqlite": SQLITE_DROP, "postgresql": PG_DROP}.get(schema_editor.connection.vendor, [])
    for statement in statements:
        schema_editor.execute(statement)


SQLITE_TRIGGERS = (f"{FTS_TABLE}_ai", f"{FTS_TABLE}_ad", f"{FTS_TABLE}_au")


def create_trigram_extension(apps, schema_editor) -> None:
    """pg_trgm for typo tolerance, when the database role may create it (in a savepoint: a refusal
    must not abort the migration; `most_similar` computes the same similarity in Python then)."""
    if schema_editor.connection.vendor != "postgresql":
        return
    from django.db import DatabaseError, transaction

    try:
        with transaction.atomic(using=schema_editor.connection.alias):
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DatabaseError:
        log.warning("pg_trgm could not be created; knowledge typo tolerance computes trigrams in Python")


def ensure_index(connection: Any) -> bool:
    """Create whatever part of the full-text index is missing (SQLite: the FTS5 table or its
    triggers, then rebuild it from the passages; PostgreSQL: the GIN index). Returns whether
    anything was missing. Cheap when all is in place: one catalog query."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            names = {FTS_TABLE, *SQLITE_TRIGGERS}
            cursor.execute("SELECT name FROM sqlite_master WHERE name IN (%s, %s, %s, %s)", sorted(names))
            if {row[0] for row in cursor.fetchall()} == names:
                return False
            if not _table_exists(cursor, PASSAGE_TABLE, connection):
                return False
            statements = SQLITE_CREATE
        elif connection.vendor == "postgresql":
            cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [PG_INDEX])
            if cursor.fetchone() or not _table_exists(cursor, PASSAGE_TABLE, connection):
                return False
            statements = PG_CREATE
        else:
            return False
        for statement in statements:
            cursor.execute(statement)
    log.info("knowledge full-text index was missing and has been rebuilt")
    return True


def _table_exists(cursor: Any, table: str, connection: Any) -> bool:
    return table in connection.introspection.table_names(cursor)


def ensure_index_after_migrate(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """post_migrate receiver (ops_app's AppConfig.ready)."""
    from django.db import connections

    ensure_index(connections[using])


def trigrams(word: str) -> set[str]:
    """pg_trgm's trigrams of one word: padded with two spaces before and one after."""
    padded = f"  {word} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def similarity(a: str, b: str) -> float:
    """pg_trgm's `similarity()`: shared trigrams over all trigrams of the two words."""
    first, second = trigrams(a), trigrams(b)
    return len(first & second) / (len(first | second) or 1)


def most_similar(connection: Any, word: str, vocabulary: list[str]) -> tuple[str, float] | None:
    """The vocabulary word most similar to `word` by trigrams, with its similarity (ties: the first
    in order). PostgreSQL with pg_trgm computes it in the database, anywhere else in Python; both
    use the same definition, so the same typo is fixed the same way on both engines."""
    if not vocabulary:
        return None
    if connection.vendor == "postgresql" and _has_pg_trgm(connection):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT t, similarity(t, %s) AS s FROM unnest(%s::text[]) WITH ORDINALITY AS v(t, n) "
                "ORDER BY s DESC, n LIMIT 1",
                [word, vocabulary],
            )
            row = cursor.fetchone()
        return (row[0], math.floor(float(row[1]) * 1e6) / 1e6) if row else None
    best, best_score = vocabulary[0], -1.0
    for candidate in vocabulary:
        score = similarity(word, candidate)
        if score > best_score:
            best, best_score = candidate, score
    return best, math.floor(best_score * 1e6) / 1e6


def _has_pg_trgm(connection: Any) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        return cursor.fetchone() is not None


def sqlite_candidates(
    cursor: Any, organization_id: int, words: list[str], limit: int, placeholder: str = "%s"
) -> list[int]:
    """Passage ids matching any term, by FTS5's bm25 (terms are letters and digits only, so quoting
    is safe)."""
    match = " OR ".join(f'"{word}"' for word in words)
    p = placeholder
    cursor.execute(
        f"SELECT p.id FROM {FTS_TABLE} f JOIN {PASSAGE_TABLE} p ON p.id = f.rowid "
        f"WHERE {FTS_TABLE} MATCH {p} AND p.organization_id = {p} ORDER BY bm25({FTS_TABLE}) LIMIT {p}",
        [match, organization_id, limit],
    )
    return [row[0] for row in cursor.fetchall()]


def postgresql_candidates(cursor: Any, organization_id: int, words: list[str], limit: int) -> list[int]:
    """Passage ids matching any word, by ts_rank_cd over the GIN-indexed expression."""
    query = " | ".join(words)
    vector = f"to_tsvector('{PG_CONFIG}', search_text)"
    cursor.execute(
        f"SELECT id FROM {PASSAGE_TABLE} WHERE organization_id = %s "
        f"AND {vector} @@ to_tsquery('{PG_CONFIG}', %s) "
        f"ORDER BY ts_rank_cd({vector}, to_tsquery('{PG_CONFIG}', %s)) DESC, id LIMIT %s",
        [organization_id, query, query, limit],
    )
    return [row[0] for row in cursor.fetchall()]


def candidates(connection: Any, organization_id: int, words: list[str], limit: int) -> list[int]:
    """Dispatch on the Django connection's engine."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            return postgresql_candidates(cursor, organization_id, words, limit)
        if connection.vendor == "sqlite":
            return sqlite_candidates(cursor, organization_id, words, limit)
    raise NotImplementedError(f"knowledge retrieval does not support the {connection.vendor} database")
