"""Keeping the passages' vectors current, in the background.

A passage is (re)embedded when its `embedding_hash` is not the hash of its text or its
`embedding_model` is not the endpoint's current model, so an unchanged passage is embedded once,
an edited section re-embeds only that passage, and a model change re-embeds everything.

`schedule(organization_id)` runs after a document is indexed and when the endpoint's embedding
model changes (on commit): a Celery task when Redis is configured, otherwise a daemon thread of
this process (the embedded default). The network is called with no transaction open; each batch
is written in its own short transaction. Threads close their DB connection; `join()` waits for
the ones this process started (tests, the management command).
"""

from __future__ import annotations

import hashlib
import logging
import threading

from celery import current_app
from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Q

from ops_app.knowledge import embeddings, vectors
from ops_app.knowledge.embeddings import BATCH_SIZE, EmbeddingFailure
from ops_app.models import KnowledgePassage

logger = logging.getLogger(__name__)

_THREADS: list[threading.Thread] = []
_LOCK = threading.Lock()
_RUNNING: set[int] = set()  # organizations with an embedding thread
_AGAIN: set[int] = set()  # ... asked to run again (a document was indexed meanwhile)


def text_hash(passage_text: str) -> str:
    return hashlib.sha256(passage_text.encode()).hexdigest()


def embed_text_of(passage: KnowledgePassage) -> str:
    """What is embedded for a passage: its document's title, its heading and its text as written
    (not `search_text`, which holds the folded terms the full-text engines index)."""
    return "\n".join(part for part in (passage.document.title, passage.heading, passage.text) if part)


def vectors_by_hash(document) -> dict[str, tuple[bytes, str]]:
    """The document's current vectors by the hash of the text they were made from, so that
    re-indexing (which rebuilds the passages) keeps the vectors of the unchanged ones."""
    rows = document.passages.exclude(embedding=None).values_list(
        "embedding_hash", "embedding", "embedding_model"
    )
    return {digest: (bytes(data), model) for digest, data, model in rows if digest}


def with_kept_vector(passage: KnowledgePassage, kept: dict[str, tuple[bytes, str]]) -> KnowledgePassage:
    digest = text_hash(embed_text_of(passage))
    if digest in kept:
        passage.embedding, passage.embedding_model = kept[digest]
        passage.embedding_hash = digest
    return passage


def progress(organization_id: int, model: str) -> tuple[int, int]:
    """(passages embedded with `model`, passages) of the organization: the admin's "N of M"."""
    passages = KnowledgePassage.objects.filter(organization_id=organization_id)
    return passages.filter(embedding_model=model).exclude(embedding=None).count(), passages.count()


def embed_pending(organization_id: int) -> int:
    """Embed every passage of the organization whose vector is missing or stale. Returns how many
    were embedded; a failure stops the run and is saved on the endpoint."""
    embedder = embeddings.embedder_for(organization_id)
    if embedder is None:
        return 0
    done = 0
    skipped: set[int] = set()
    while True:
        batch = _stale(organization_id, embedder.model, skipped)
        if not batch:
            break
        try:
            made = embedder.embed(
                [embed_text_of(p) for p in batch], vectors.stored_dimension(organization_id, embedder.model)
            )
        except EmbeddingFailure as failure:
            embeddings.record_outcome(embedder.endpoint, failure.reason)
            logger.warning(
                "embedding the knowledge of organization %s failed: %s", organization_id, failure.reason
            )
            return done
        done += _store(batch, made, embedder.model, skipped)
    embeddings.record_outcome(embedder.endpoint, "")
    return done


def _stale(organization_id: int, model: str, skipped: set[int]) -> list[KnowledgePassage]:
    # A passage's text never changes in place (re-indexing recreates the rows), so "no vector of
    # this model" finds every stale one in SQL; the hash check is a safeguard.
    rows = (
        KnowledgePassage.objects.filter(organization_id=organization_id)
        .filter(Q(embedding__isnull=True) | ~Q(embedding_model=model))
        .exclude(pk__in=skipped)
        .select_related("document")
        .only("id", "heading", "text", "embedding_model", "embedding_hash", "document__title")
        .order_by("id")
    )
    stale: list[KnowledgePassage] = []
    for passage in rows.iterator(chunk_size=500):
        if passage.embedding_model != model or passage.embedding_hash != text_hash(embed_text_of(passage)):
            stale.append(passage)
            if len(stale) == BATCH_SIZE:
                break
    return stale


def _store(batch: list[KnowledgePassage], vectors: list, model: str, skipped: set[int]) -> int:
    """Write the vectors of passages whose text did not change meanwhile (a re-index during the
    call deletes and recreates passages: those are picked up by the next round)."""
    stored = 0
    with transaction.atomic():
        for passage, vector in zip(batch, vectors, strict=True):
            digest = text_hash(embed_text_of(passage))
            updated = KnowledgePassage.objects.filter(
                pk=passage.pk, heading=passage.heading, text=passage.text
            ).update(embedding=embeddings.to_bytes(vector), embedding_model=model, embedding_hash=digest)
            stored += updated
            skipped.add(passage.pk)  # gone or written: never asked twice in one run
    return stored


def endpoint_saved(sender, instance, **kwargs) -> None:
    """post_save of an LLM endpoint: a default endpoint with an embedding model embeds what it has
    not embedded yet (everything, when the model is new or changed; nothing, quickly, otherwise)."""
    if instance.is_default and instance.embedding_model and not kwargs.get("raw"):
        schedule(instance.organization_id)


def schedule(organization_id: int) -> None:
    """Embed the organization's stale passages after the current transaction commits (nothing
    when semantic search is off for it)."""
    if embeddings.embedder_for(organization_id) is None:
        return
    transaction.on_commit(lambda: start(organization_id))


def start(organization_id: int) -> None:
    """Now: a Celery task with Redis, else a daemon thread of this process."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        # By name: the task module (above the knowledge package) imports this one.
        current_app.send_task("ops_app.embed_knowledge", args=[organization_id])
        return
    with _LOCK:
        _THREADS[:] = [t for t in _THREADS if t.is_alive()]
        if organization_id in _RUNNING:  # one thread per organization: it runs once more
            _AGAIN.add(organization_id)
            return
        _RUNNING.add(organization_id)
        thread = threading.Thread(
            target=_run_in_thread,
            args=(organization_id,),
            name=f"embed-knowledge-{organization_id}",
            daemon=True,
        )
        _THREADS.append(thread)
    thread.start()


def _run_in_thread(organization_id: int) -> None:
    try:
        close_old_connections()
        while True:
            embed_pending(organization_id)
            with _LOCK:
                if organization_id not in _AGAIN:
                    _RUNNING.discard(organization_id)
                    return
                _AGAIN.discard(organization_id)
    except Exception:  # a background thread must not die silently
        logger.exception("embedding the knowledge of organization %s failed", organization_id)
        with _LOCK:
            _RUNNING.discard(organization_id)
            _AGAIN.discard(organization_id)
    finally:
        connection.close()


def join(timeout: float = 60.0) -> None:
    """Wait for the embedding threads this process started."""
    with _LOCK:
        threads = list(_THREADS)
    for thread in threads:
        thread.join(timeout)
    with _LOCK:
        _THREADS[:] = [t for t in _THREADS if t.is_alive()]
