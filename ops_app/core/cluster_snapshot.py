"""What the cluster change collector saw of one cluster, as plain data: written by
ops_app.integrations.kubernetes_changes (which reads the cluster), read by
ops_app.estate.cluster_changes (which records what is new). Both import it from here because the
estate and the integrations do not import each other (docs/architecture.md, "Inside ops_app")."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Revision:
    """One ReplicaSet revision of a deployment: when it appeared, and what its pod template says."""

    number: int
    uid: str
    created_at: dt.datetime | None
    template: dict


@dataclass(frozen=True)
class DeploymentState:
    namespace: str
    name: str
    uid: str
    manager: str  # who last changed spec.template (managedFields), else DEFAULT_MANAGER
    template_changed_at: dt.datetime | None
    revisions: list[Revision] = field(default_factory=list)  # oldest first


@dataclass(frozen=True)
class ConfigMapState:
    namespace: str
    name: str
    uid: str
    resource_version: str
    manager: str  # who last wrote its data (managedFields), else DEFAULT_MANAGER
    changed_at: dt.datetime | None
    created_at: dt.datetime | None
    content: dict[str, dict] = field(default_factory=dict)  # key -> {"hash", "value" (cut)}


@dataclass(frozen=True)
class ClusterState:
    deployments: list[DeploymentState]
    configmaps: list[ConfigMapState]
