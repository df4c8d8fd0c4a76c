"""The full-text index survives what a SQLite table rebuild does to it: `ensure_index` (run after
every migrate) puts the FTS5 triggers back, so a passage saved afterwards is found."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection

from ops_app.knowledge import fulltext, vault
from ops_app.models import KnowledgeDocument
from tests.knowledge import corpus


def drop_triggers() -> None:
    with connection.cursor() as cursor:
        for trigger in fulltext.SQLITE_TRIGGERS:
            cursor.execute(f"DROP TRIGGER IF EXISTS {trigger}")


def add_runbook(org, title: str, text: str) -> None:
    vault.ingest(org, kind=KnowledgeDocument.Source.UPLOAD, source=f"{title}.md", title=title, content=text)


@pytest.mark.django_db(transaction=True)
def test_a_passage_saved_after_migrate_is_found(org):
    if connection.vendor == "sqlite":
        drop_triggers()  # what a later AddField's table rebuild does
    call_command("migrate", verbosity=0)  # post_migrate runs ensure_index
    add_runbook(org, "Zookeeper quorum", "The zookeeper ensemble lost quorum; restart the followers.")
    hits = vault.search(org.id, "zookeeper quorum lost", top_k=1)
    assert hits and hits[0].title == "Zookeeper quorum"


@pytest.mark.django_db(transaction=True)
def test_missing_triggers_are_recreated_and_passages_saved_without_them_reindexed(org):
    if connection.vendor != "sqlite":
        pytest.skip("triggers are SQLite's; PostgreSQL indexes an expression and needs no trigger")
    drop_triggers()
    add_runbook(org, "Consul leader", "Consul has no leader; check the raft peers.")
    assert vault.search(org.id, "consul leader raft", top_k=1) == []  # unindexed: the bug it fixes
    assert fulltext.ensure_index(connection) is True
    assert vault.search(org.id, "consul leader raft", top_k=1)[0].title == "Consul leader"
    assert fulltext.ensure_index(connection) is False  # nothing missing any more


@pytest.mark.django_db(transaction=True)
def test_the_postgresql_index_is_recreated_when_missing(org):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's GIN index")
    with connection.cursor() as cursor:
        cursor.execute(fulltext.PG_DROP[0])
    assert fulltext.ensure_index(connection) is True
    corpus.load_corpus(org)
    assert vault.search(org.id, "磁盘满了怎么办", top_k=1)[0].source == "zh-hans/disk-full.md"
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [fulltext.PG_INDEX])
        assert "'simple'" in cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_the_upgrade_migration_reindexes_existing_passages(org):
    """0020 recomputes search_text: a passage indexed the old way (raw text) becomes findable by
    its folded terms after the migration runs."""
    import importlib

    from django.apps import apps

    add_runbook(org, "Réplica atrasada", "La réplica de MySQL está atrasada.")
    document = KnowledgeDocument.objects.get(organization=org)
    document.passages.update(search_text="Réplica atrasada La réplica de MySQL está atrasada.")
    KnowledgeDocument.objects.filter(pk=document.pk).update(language="")
    migration = importlib.import_module("ops_app.migrations.0020_multilingual_fulltext")
    with connection.schema_editor() as editor:
        fulltext.drop_fulltext_index(apps, editor)
        migration.reindex_terms(apps, editor)
        fulltext.create_fulltext_index(apps, editor)
    assert vault.search(org.id, "replica atrasada", top_k=1)[0].title == "Réplica atrasada"
    assert KnowledgeDocument.objects.get(pk=document.pk).language == "es"
