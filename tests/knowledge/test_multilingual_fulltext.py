"""Full-text retrieval in any language, measured on a multilingual corpus (en/es/fr/zh-hans):
recall@3 and MRR per kind of question, on whichever engine the test database is (run the file with
DATABASE_URL=postgres://… for PostgreSQL), and the same passages with the same scores on both."""

from __future__ import annotations

import re
import sqlite3

import pytest
from django.db import connection

from ops_app.knowledge import fulltext, vault
from ops_app.models import KnowledgeDocument, KnowledgePassage
from tests.knowledge import corpus
from tests.support.required import require


@pytest.fixture
def corpus_org(org):
    corpus.load_corpus(org)
    return org


def sources_for(org_id: int):
    return lambda question: [hit.source for hit in vault.search(org_id, question, top_k=5)]


def test_full_text_finds_the_right_runbook_for_every_full_text_kind(corpus_org):
    results = corpus.measure(sources_for(corpus_org.id), corpus.FULLTEXT_KINDS)
    assert set(results) == set(corpus.FULLTEXT_KINDS)
    for kind, measured in results.items():
        assert measured.recall_at_3 >= 0.9, (kind, measured.misses)
        assert measured.mrr >= 0.8, (kind, measured.mrr, measured.misses)


def test_semantic_kinds_are_in_the_question_set_for_the_hybrid_ranking():
    """Cross-language and paraphrase questions exist (semantic search is measured on them)."""
    for kind in corpus.SEMANTIC_KINDS:
        assert len(corpus.questions([kind])) >= 10


def test_the_old_ascii_tokenizer_cuts_accented_words_and_drops_chinese():
    def old(text: str) -> list[str]:
        return re.findall(r"[a-z0-9]+", text.lower())

    assert old("réplica") == ["r", "plica"]
    assert old("磁盘满了怎么办") == []
    assert vault.words_of("réplica") == vault.words_of("REPLICA") == vault.words_of("replica")
    assert "磁盘" in vault.query_words("磁盘满了怎么办")


def test_accents_case_and_plurals_match_while_the_passage_keeps_the_original_text(corpus_org):
    for question in ("memoire redis", "MÉMOIRE REDIS", "mémoires redis"):
        best = vault.search(corpus_org.id, question, top_k=1)[0]
        assert best.source == "fr/redis-memoire.md"
    assert "Mémoire Redis" in best.title
    assert "écritures échouent" in best.passage or "évincées" in best.passage or "é" in best.passage


def test_a_one_character_chinese_question_finds_passages(corpus_org):
    hits = vault.search(corpus_org.id, "盘", top_k=3)
    assert hits and hits[0].source == "zh-hans/disk-full.md"


def test_each_document_language_is_detected_and_stored(corpus_org):
    languages = dict(
        KnowledgeDocument.objects.filter(organization=corpus_org).values_list("source", "language")
    )
    assert {source: languages[source] for source in languages} == {
        source: source.split("/")[0] for source in languages
    }
    hit = vault.search(corpus_org.id, "磁盘满了怎么办", top_k=1)[0]
    assert hit.language == "zh-hans"


def test_a_typo_is_fixed_from_the_organization_titles_only(corpus_org, other_org):
    assert vault.search(corpus_org.id, "kafak", top_k=1)[0].source == "es/kafka-retraso-consumidores.md"
    corpus.load_corpus(other_org)
    KnowledgeDocument.objects.filter(organization=other_org, source__startswith="es/").delete()
    assert vault.search(other_org.id, "kafak", top_k=3) == []


def test_every_index_is_per_organization(corpus_org, other_org):
    assert vault.search(other_org.id, "磁盘满了怎么办") == []
    assert vault.search(other_org.id, "memoire redis") == []
    corpus.load_corpus(other_org)
    mine = vault.search(corpus_org.id, "nginx 502", top_k=3)
    theirs = vault.search(other_org.id, "nginx 502", top_k=3)
    assert [h.source for h in mine] == [h.source for h in theirs]
    assert not {h.passage_id for h in mine} & {h.passage_id for h in theirs}


def test_sqlite_and_postgresql_return_the_same_passages_with_the_same_scores(corpus_org):
    require(
        connection.vendor == "postgresql", "PostgreSQL as the test database (DATABASE_URL=postgres://...)"
    )
    passages = list(KnowledgePassage.objects.filter(organization=corpus_org).select_related("document"))
    lite = sqlite3.connect(":memory:")
    lite.execute(
        f"CREATE TABLE {fulltext.PASSAGE_TABLE} (id INTEGER PRIMARY KEY, organization_id INTEGER, "
        "search_text TEXT)"
    )
    for statement in fulltext.SQLITE_CREATE:
        lite.execute(statement)
    lite.executemany(
        f"INSERT INTO {fulltext.PASSAGE_TABLE} VALUES (?, ?, ?)",
        [(p.id, p.organization_id, p.search_text) for p in passages],
    )
    views = {view.id: view for view in vault.passage_views(corpus_org.id, [p.id for p in passages])}
    for question in corpus.questions(corpus.FULLTEXT_KINDS):
        words = vault.fix_typos(corpus_org.id, vault.query_words(question.q))
        ids = fulltext.sqlite_candidates(lite.cursor(), corpus_org.id, words, vault.CANDIDATE_LIMIT, "?")
        on_sqlite = [
            (h.passage_id, h.score) for h in vault.rank(words, [views[i] for i in ids], len(passages))
        ]
        on_postgresql = [(h.passage_id, h.score) for h in vault.search(corpus_org.id, question.q, top_k=100)]
        assert on_sqlite == on_postgresql, question.q
