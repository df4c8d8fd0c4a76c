"""Celery tasks of ops_app. Without Redis they run eagerly in the caller (embedded default)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from celery import shared_task
from django.conf import settings

from ops_app import cluster_collector
from ops_app.knowledge import background, git_sync, vault
from ops_app.models import VaultRepository


@shared_task(name="ops_app.index_knowledge_document")
def index_knowledge_document(document_id: int) -> int:
    """Chunk and index one saved document (uploads from the API and the admin)."""
    return vault.index_document(document_id)


@shared_task(name="ops_app.sync_knowledge_vault")
def sync_knowledge_vault(organization_id: int, directory: str | None = None) -> dict:
    """Mirror a vault directory (default ONGRID_VAULT_DIR) into the organization's documents."""
    path = Path(directory) if directory else settings.CONFIG.vault_dir
    return asdict(vault.sync_vault(organization_id, path))


@shared_task(name="ops_app.collect_cluster_changes")
def collect_cluster_changes() -> int:
    """Poll every organization's clusters for rollouts and ConfigMap changes; celery beat runs it
    every ONGRID_K8S_CHANGES_INTERVAL seconds (docs/kubernetes.md). Returns the events recorded."""
    return cluster_collector.collect_all()


@shared_task(name="ops_app.sync_vault_repositories")
def sync_vault_repositories() -> int:
    """Pull every due vault repository (docs/knowledge.md, "Git sync"); celery beat runs it every
    minute, each repository's own interval decides. Returns how many were synced."""
    return git_sync.sync_due()


@shared_task(name="ops_app.sync_vault_repository")
def sync_vault_repository(repository_id: int) -> dict:
    """Pull one vault repository now (the admin's "Sync now"); its report."""
    repo = VaultRepository.objects.filter(pk=repository_id).first()
    return git_sync.sync_repository(repo) if repo is not None else {"status": "gone"}


@shared_task(name="ops_app.embed_knowledge")
def embed_knowledge(organization_id: int) -> int:
    """Embed the organization's passages whose vector is missing or stale (ops_app.knowledge.background)."""
    return background.embed_pending(organization_id)
