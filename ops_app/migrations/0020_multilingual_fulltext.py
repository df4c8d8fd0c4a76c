"""Multilingual full-text: the index now holds terms folded by ops_app.knowledge.languages.

Rebuilds the SQLite FTS5 table (plain unicode61, no porter) or the PostgreSQL GIN index (`simple`
configuration), recomputes every passage's `search_text` and every document's language so an
upgraded vault stays searchable, and creates pg_trgm when permitted (typo tolerance)."""

from django.db import migrations

from ops_app.knowledge import languages
from ops_app.knowledge.fulltext import create_fulltext_index, create_trigram_extension, drop_fulltext_index

BATCH = 500


def reindex_terms(apps, schema_editor) -> None:
    Document = apps.get_model("ops_app", "KnowledgeDocument")
    Passage = apps.get_model("ops_app", "KnowledgePassage")
    alias = schema_editor.connection.alias
    documents = Document.objects.using(alias).only("id", "title", "content", "language")
    changed = []
    for document in documents.iterator(chunk_size=BATCH):
        document.language = languages.detect_language(f"{document.title}\n{document.content[:20000]}")
        changed.append(document)
        if len(changed) >= BATCH:
            Document.objects.using(alias).bulk_update(changed, ["language"])
            changed = []
    Document.objects.using(alias).bulk_update(changed, ["language"])
    passages = (
        Passage.objects.using(alias)
        .select_related("document")
        .only("id", "heading", "text", "search_text", "document__title")
    )
    changed = []
    for passage in passages.iterator(chunk_size=BATCH):
        passage.search_text = languages.search_text(passage.document.title, passage.heading, passage.text)
        changed.append(passage)
        if len(changed) >= BATCH:
            Passage.objects.using(alias).bulk_update(changed, ["search_text"])
            changed = []
    Passage.objects.using(alias).bulk_update(changed, ["search_text"])


class Migration(migrations.Migration):
    dependencies = [("ops_app", "0019_knowledge_languages_vectors_repositories")]

    operations = [
        migrations.RunPython(drop_fulltext_index, create_fulltext_index),
        migrations.RunPython(reindex_terms, migrations.RunPython.noop),
        migrations.RunPython(create_fulltext_index, drop_fulltext_index),
        migrations.RunPython(create_trigram_extension, migrations.RunPython.noop),
    ]
