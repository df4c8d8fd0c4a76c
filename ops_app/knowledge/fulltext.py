"""The database full-text engines behind knowledge retrieval: SQLite FTS5 and PostgreSQL.

Each engine only answers "which passages of this organization mention any of these words, best
first" (candidates). The score the user sees is computed afterwards, in Python, by one formula
for both engines (`ops_app.knowledge.vault.rank`), which is what makes a threshold such as 0.6 mean the
same thing on SQLite and on PostgreSQL.

Migration 0004 creates the index structures from the DDL below; changing the DDL needs a new
migration.
"""

from __future__ import annotations

from typing import Any

PASSAGE_TABLE = "ops_app_knowledgepassage"
FTS_TABLE = "ops_app_knowledgepassage_fts"
PG_INDEX = "knowledge_passage_fts_idx"
PG_CONFIG = "english"

SQLITE_CREATE = [
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(search_text, content='{PASSAGE_TABLE}', "
    "content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
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


def sqlite_candidates(
    cursor: Any, organization_id: int, words: list[str], limit: int, placeholder: str = "%s"
) -> list[int]:
    """Passage ids matching any word, by FTS5's bm25 (words are [a-z0-9]+, so quoting is safe)."""
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
