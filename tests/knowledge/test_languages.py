"""The one tokenizer of knowledge retrieval and the one language detector."""

from __future__ import annotations

import pytest

from agents_app.llm import offline
from ops_app.knowledge import languages


def test_accented_words_are_kept_whole_and_fold_to_one_term():
    assert languages.terms("réplica") == languages.terms("REPLICA") == languages.terms("Replica")
    assert languages.terms("nœud") == languages.terms("noeud")
    assert len(languages.terms("sécurité")) == 1


def test_plural_and_feminine_endings_of_spanish_and_french_share_a_stem():
    assert languages.stem("replicas") == languages.stem("replica")
    assert languages.terms("conexiones") == languages.terms("conexión")
    assert languages.terms("saturée") == languages.terms("saturé")
    assert languages.terms("journaux") == languages.terms("journal")
    assert languages.terms("llena") == languages.terms("lleno")


def test_chinese_runs_become_bigrams_and_particles_split_them():
    assert languages.query_terms("磁盘满了怎么办") == ["磁盘", "盘满"]
    assert languages.query_terms("盘") == ["盘"]
    indexed = languages.terms("磁盘空间")
    assert {"磁盘", "盘空", "空间", "磁"} <= set(indexed)
    stems = [languages.stem(w) for w in ("space", "left")]
    assert languages.query_terms("No space left 写入失败") == [*stems, "写入", "入失", "失败"]


def test_question_words_and_articles_are_not_searched_in_any_language():
    stemmed = languages.stem
    assert languages.query_terms("What is the disk usage?") == [stemmed("disk"), stemmed("usage")]
    assert languages.query_terms("¿Cómo está el disco?") == [stemmed("disco")]
    assert languages.query_terms("Pourquoi le nœud est-il NotReady ?") == ["noeud", stemmed("notready")]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("The replica is lagging behind the primary", "en"),
        ("La réplica de PostgreSQL está atrasada y no responde", "es"),
        ("Le nœud Kubernetes est en état NotReady depuis une heure", "fr"),
        ("磁盘空间已满，写入失败", "zh-hans"),
        ("磁盘满了 on web-01", "zh-hans"),
        ("", ""),
        ("kubectl get pods", ""),
    ],
)
def test_detect_language(text, language):
    assert languages.detect_language(text) == language


def test_the_offline_model_uses_the_same_detector_with_english_as_fallback():
    assert offline.detect_language("kubectl get pods") == "en"
    assert offline.detect_language("¿Por qué el servidor está lleno?") == "es"
