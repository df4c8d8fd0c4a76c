"""Change events from an organization's clusters (docs/kubernetes.md): a deployment's
new ReplicaSet revision (a rollout) and a ConfigMap whose content changed become ChangeEvents of
the organization, so the incident page's "What changed" and the investigator see them beside the
estate's own changes.

The cluster is read by ops_app.integrations.kubernetes_changes; this module decides what is new
against what the previous poll saw (ClusterObjectState rows, one per object and data source) and
words it. Every poll of one data source runs in one transaction holding that source's `cluster`
row locked, so two polls at once queue and the second finds nothing new: a revision, or a
ConfigMap resourceVersion, is recorded once.

First sight of an object (a new cluster, a new namespace allowed, a new deployment) records it as
the baseline, except what changed in the last `FIRST_SIGHT_WINDOW` (two hours, the incident page's
window): a rollout made just before the cluster was connected is still found.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import transaction
from django.utils import timezone

from ops_app.core.cluster_snapshot import ClusterState, ConfigMapState, DeploymentState, Revision
from ops_app.estate.change_events import is_secret_field
from ops_app.models import ChangeEvent, ClusterObjectState, DataSource

log = logging.getLogger(__name__)

FIRST_SIGHT_WINDOW = dt.timedelta(hours=2)
DEPLOYMENT_TYPE = "k8s_deployment"
CONFIGMAP_TYPE = "k8s_configmap"
CLUSTER, DEPLOYMENT, CONFIGMAP = "cluster", "deployment", "configmap"
HIDDEN = "(hidden)"
# A write this close after the creation is the creation itself (the creator's managedFields entry).
SAME_WRITE = dt.timedelta(seconds=5)


def record_cluster_change(
    source: DataSource,
    *,
    resource_type: str,
    uid: str,
    path: str,
    occurred_at: dt.datetime,
    actor: str,
    action: str,
    summary: str,
    before: dict,
    after: dict,
) -> ChangeEvent:
    """One change event of the source's organization; `path` is "<namespace>/<name>", the event
    names "<cluster>/<namespace>/<name>" so the page and the investigator see which cluster."""
    return ChangeEvent.objects.create(
        organization_id=source.organization_id,
        occurred_at=occurred_at,
        actor_name=actor[:150],
        action=action,
        resource_type=resource_type,
        resource_id=(uid or path)[:64],
        resource_name=f"{source.name}/{path}"[:300],
        summary=summary[:500],
        before=before,
        after=after,
    )


def record_cluster_state(
    source: DataSource, seen: ClusterState, now: dt.datetime | None = None
) -> list[ChangeEvent]:
    """Record what is new in `seen` since the previous poll of `source`, and remember `seen`.
    Returns the events recorded (none when nothing changed)."""
    now = now or timezone.now()
    with transaction.atomic():
        _lock(source)
        rows = ClusterObjectState.objects.filter(data_source=source).exclude(kind=CLUSTER)
        known = {(row.kind, row.namespace, row.name): row for row in rows}
        events: list[ChangeEvent] = []
        for deployment in seen.deployments:
            row = known.pop((DEPLOYMENT, deployment.namespace, deployment.name), None)
            events += _deployment(source, deployment, row, now)
        for configmap in seen.configmaps:
            row = known.pop((CONFIGMAP, configmap.namespace, configmap.name), None)
            events += _configmap(source, configmap, row, now)
        # Gone from the cluster (or from the allowed namespaces): forgotten, seen afresh if back.
        ClusterObjectState.objects.filter(pk__in=[row.pk for row in known.values()]).delete()
    return events


def note_reachable(source: DataSource, failure: str = "") -> bool:
    """Remember whether the cluster answered (`failure` empty) or why not. True when this changes
    what was known (a first failure, or the first success after failures), so the caller logs an
    outage once rather than every poll."""
    with transaction.atomic():
        row = _lock(source)
        before = row.content.get("failing", "")
        if before == failure:
            return False
        row.content = {"failing": failure} if failure else {}
        row.save(update_fields=["content", "updated_at"])
    return True


def _lock(source: DataSource) -> ClusterObjectState:
    ClusterObjectState.objects.get_or_create(
        organization_id=source.organization_id, data_source=source, kind=CLUSTER, namespace="", name=""
    )
    return ClusterObjectState.objects.select_for_update().get(data_source=source, kind=CLUSTER)


def _remember(source: DataSource, row, kind: str, namespace: str, name: str, version: str, content: dict):
    if row is None:
        row = ClusterObjectState(
            organization_id=source.organization_id,
            data_source=source,
            kind=kind,
            namespace=namespace,
            name=name,
        )
    row.version, row.content = version, content
    row.save()


# --- rollouts ------------------------------------------------------------------------------------


def _deployment(source: DataSource, deployment: DeploymentState, row, now: dt.datetime) -> list[ChangeEvent]:
    # A deployment deleted and made again under its name starts its revisions anew: a first sight.
    same = row is not None and row.content.get("uid", deployment.uid) == deployment.uid
    last = int(row.version) if same and row.version.isdigit() else None
    if last is None:
        new = [
            r for r in deployment.revisions if now - _when(deployment, r, now, False) <= FIRST_SIGHT_WINDOW
        ]
    else:
        new = [r for r in deployment.revisions if r.number > last]
    events = [_record_rollout(source, deployment, revision, now, last is not None) for revision in new]
    highest = max([r.number for r in deployment.revisions] + [last or 0])
    if not same or str(highest) != row.version:
        content = {"uid": deployment.uid}
        _remember(source, row, DEPLOYMENT, deployment.namespace, deployment.name, str(highest), content)
    return events


def _when(deployment: DeploymentState, revision: Revision, now: dt.datetime, seen: bool) -> dt.datetime:
    """The ReplicaSet's creation; for the current revision a later template write wins. A rollback
    reuses an old ReplicaSet, renumbered: without a later write time, a deployment already seen
    was rolled back since the last poll (now is the best known), one seen first is left old."""
    when = revision.created_at or now
    changed = deployment.template_changed_at
    if _is_current(deployment, revision) and changed is not None and changed > when:
        return changed
    if seen and _reused(deployment, revision):
        return now
    return when


def _previous(deployment: DeploymentState, revision: Revision) -> Revision | None:
    return next((r for r in reversed(deployment.revisions) if r.number < revision.number), None)


def _reused(deployment: DeploymentState, revision: Revision) -> bool:
    """A revision whose ReplicaSet is older than the one before it: an earlier template again."""
    previous = _previous(deployment, revision)
    return bool(
        previous and previous.created_at and revision.created_at and revision.created_at < previous.created_at
    )


def _is_current(deployment: DeploymentState, revision: Revision) -> bool:
    return bool(deployment.revisions) and revision.number == deployment.revisions[-1].number


def _record_rollout(
    source: DataSource, deployment: DeploymentState, revision: Revision, now: dt.datetime, seen: bool
) -> ChangeEvent:
    previous = _previous(deployment, revision)
    # managedFields name who last wrote the template: that is the current revision's author only.
    actor = deployment.manager if _is_current(deployment, revision) else "kubernetes"
    name, number = deployment.name, revision.number
    if previous is None:
        lines, before, after = template_diff({}, revision.template)
        summary = f"{name} created with revision {number}" + (": " + "; ".join(lines) if lines else "")
        action = ChangeEvent.Action.CREATE
    else:
        lines, before, after = template_diff(previous.template, revision.template)
        done = (
            f"rolled back to an earlier template (revision {number})"
            if _reused(deployment, revision)
            else f"rolled out revision {number}"
        )
        summary = f"{name} {done}: " + ("; ".join(lines) or "pod template changed")
        before["revision"] = previous.number
        action = ChangeEvent.Action.UPDATE
    after["revision"] = number
    return record_cluster_change(
        source,
        resource_type=DEPLOYMENT_TYPE,
        uid=deployment.uid,
        path=f"{deployment.namespace}/{name}",
        occurred_at=_when(deployment, revision, now, seen),
        actor=actor,
        action=action,
        summary=summary,
        before=before,
        after=after,
    )


def template_diff(old: dict, new: dict) -> tuple[list[str], dict, dict]:
    """What changed between two pod templates (ops_app.integrations.kubernetes_changes'
    `template_facts`): the phrases of the summary, and the changed values before and after."""
    found: list[tuple[str, object, object]] = []
    old_containers, new_containers = old.get("containers", {}), new.get("containers", {})
    several = len(set(old_containers) | set(new_containers)) > 1
    for container in sorted(set(old_containers) | set(new_containers)):
        prefix = f"{container} " if several else ""
        found += _container_diff(prefix, old_containers.get(container), new_containers.get(container))
    found += _set_diff("mounts", old.get("volumes", []), new.get("volumes", []))
    if old.get("restarted_at") != new.get("restarted_at") and new.get("restarted_at"):
        found.append(("restarted at", old.get("restarted_at"), new["restarted_at"]))
    lines = [_phrase(label, before, after) for label, before, after in found]
    return lines, {k: b for k, b, _ in found}, {k: a for k, _, a in found}


def _container_diff(prefix: str, old: dict | None, new: dict | None) -> list[tuple[str, object, object]]:
    if new is None:
        return [(f"{prefix}container", "present", None)]
    old = old or {}
    found = []
    if old.get("image") != new.get("image"):
        found.append((f"{prefix}image", old.get("image"), new.get("image")))
    for family, label in (("resources", ""), ("env", "env ")):
        before, after = old.get(family, {}), new.get(family, {})
        for key in sorted(set(before) | set(after)):
            if before.get(key) != after.get(key):
                value = (before.get(key), after.get(key))
                if is_secret_field(key) and family == "env":
                    value = tuple(_hide(v) for v in value)
                found.append((f"{prefix}{label}{key}", *value))
    found += _set_diff(f"{prefix}env from", old.get("env_from", []), new.get("env_from", []))
    return found


def _set_diff(label: str, old: list, new: list) -> list[tuple[str, object, object]]:
    added = [(f"{label} {ref}", None, "yes") for ref in new if ref not in old]
    return added + [(f"{label} {ref}", "yes", None) for ref in old if ref not in new]


def _hide(value: object) -> object:
    """A literal value of a secret-looking variable is not kept; a reference (`from Secret x`) is."""
    return value if value is None or str(value).startswith("from ") else HIDDEN


def _phrase(label: str, before: object, after: object) -> str:
    if label.endswith("image") and isinstance(after, str):
        return f"{label} {before} → {_short_image(before, after)}" if before else f"{label} {after}"
    if after == "yes" and before is None:
        return label
    if before == "yes" and after is None:
        return f"no longer {label}"
    if before is None:
        return f"{label} {after}" if str(after).startswith("from ") else f"{label}={after}"
    if after is None:
        return f"{label} removed"
    return f"{label} {before} → {after}"


def _short_image(before: str, after: str) -> str:
    """`payments:v2.4.0 → v2.4.1` when only the tag moved."""
    repository, _, tag = after.rpartition(":")
    if repository and "/" not in tag and before.rpartition(":")[0] == repository:
        return tag
    return after


# --- configmaps ----------------------------------------------------------------------------------


def _configmap(source: DataSource, configmap: ConfigMapState, row, now: dt.datetime) -> list[ChangeEvent]:
    if row is not None and row.version == configmap.resource_version:
        return []
    events = []
    if row is None:
        event = _first_sight(source, configmap, now)
        events = [event] if event else []
    else:
        lines, before, after = content_diff(row.content, configmap.content)
        if lines:
            summary = f"{configmap.name} changed by {configmap.manager}: " + "; ".join(lines)
            events.append(
                _record_configmap(source, configmap, now, ChangeEvent.Action.UPDATE, summary, before, after)
            )
    _remember(
        source,
        row,
        CONFIGMAP,
        configmap.namespace,
        configmap.name,
        configmap.resource_version,
        configmap.content,
    )
    return events


def _first_sight(source: DataSource, configmap: ConfigMapState, now: dt.datetime) -> ChangeEvent | None:
    """A ConfigMap created or written in the last two hours, seen for the first time: recorded
    with its keys (its earlier content is not known)."""
    created, changed = configmap.created_at, configmap.changed_at or configmap.created_at
    if changed is None or now - changed > FIRST_SIGHT_WINDOW:
        return None
    keys = ", ".join(sorted(configmap.content)) or "no keys"
    if created is not None and changed - created <= SAME_WRITE:
        summary = f"{configmap.name} created by {configmap.manager}: {keys}"
        action = ChangeEvent.Action.CREATE
    else:
        unknown = "first seen now, earlier content unknown"
        summary = f"{configmap.name} changed by {configmap.manager} ({unknown}): {keys}"
        action = ChangeEvent.Action.UPDATE
    return _record_configmap(source, configmap, now, action, summary, {}, {})


def _record_configmap(source, configmap: ConfigMapState, now, action, summary, before, after) -> ChangeEvent:
    return record_cluster_change(
        source,
        resource_type=CONFIGMAP_TYPE,
        uid=configmap.uid,
        path=f"{configmap.namespace}/{configmap.name}",
        occurred_at=configmap.changed_at or now,
        actor=configmap.manager,
        action=action,
        summary=summary,
        before=before,
        after=after,
    )


def content_diff(old: dict, new: dict) -> tuple[list[str], dict, dict]:
    """The keys of a ConfigMap whose value changed (by hash, so past the cut too), were added or
    removed: `DB_POOL_SIZE 50 → five`, `added FEATURE_X`, `removed LEGACY`; values (cut) before and
    after, a secret-looking key's hidden."""
    lines, before, after = [], {}, {}
    for key in sorted(set(old) | set(new)):
        was, now = old.get(key), new.get(key)
        if was is not None and now is not None and was.get("hash") == now.get("hash"):
            continue
        old_value = _shown(key, was)
        new_value = _shown(key, now)
        before[key], after[key] = old_value, new_value
        if was is None:
            lines.append(f"added {key}")
        elif now is None:
            lines.append(f"removed {key}")
        else:
            lines.append(f"{key} {old_value} → {new_value}")
    return lines, before, after


def _shown(key: str, entry: dict | None) -> str | None:
    if entry is None:
        return None
    return HIDDEN if is_secret_field(key) else str(entry.get("value", ""))
