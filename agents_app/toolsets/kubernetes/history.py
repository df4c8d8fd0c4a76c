"""A deployment's revisions from its ReplicaSets, and what changed from one pod template to the
next, in the words of a change review: "container app: image a → b", "env LOG_LEVEL changed".

Environment values from Secrets are compared as references (the Secret is never read); a
literal value is shown, as the pod template itself shows it to anyone who may read the deployment.
"""

from __future__ import annotations

from agents_app.toolsets.kubernetes import podspec, shaping

VALUE_CHARS = 120


def revision_of(obj: dict) -> int:
    try:
        return int((shaping.meta(obj).get("annotations") or {}).get(shaping.REVISION, 0))
    except (TypeError, ValueError):
        return 0


def owned_by(replicaset: dict, deployment: dict) -> bool:
    """Whether the ReplicaSet belongs to the deployment (its controller reference)."""
    uid = shaping.meta(deployment).get("uid")
    name = shaping.meta(deployment).get("name")
    for owner in shaping.meta(replicaset).get("ownerReferences") or []:
        if owner.get("kind") == "Deployment" and (
            owner.get("uid") == uid if uid else owner.get("name") == name
        ):
            return True
    return False


def template_of(replicaset: dict) -> dict:
    return ((replicaset.get("spec") or {}).get("template") or {}).get("spec") or {}


def revisions(deployment: dict, replicasets: list[dict]) -> list[dict]:
    """The deployment's revisions, newest first, each with its changes from the one before."""
    mine = sorted((rs for rs in replicasets if owned_by(rs, deployment)), key=revision_of)
    shown, before = [], None
    for replicaset in mine:
        template = template_of(replicaset)
        status = replicaset.get("status") or {}
        shown.append(
            {
                "revision": revision_of(replicaset),
                "replicaset": shaping.meta(replicaset).get("name"),
                "created": shaping.meta(replicaset).get("creationTimestamp"),
                "images": shaping.images(template),
                "replicas": status.get("replicas", (replicaset.get("spec") or {}).get("replicas", 0)),
                "changes": changes(before, template) if before is not None else ["first revision"],
            }
        )
        before = template
    return list(reversed(shown))


def _short(value: str) -> str:
    return value if len(value) <= VALUE_CHARS else value[: VALUE_CHARS - 1] + "…"


def changes(before: dict, after: dict) -> list[str]:
    """What changed between two pod templates (empty: identical in what this compares)."""
    found = []
    old = {c.get("name"): c for c in before.get("containers") or []}
    new = {c.get("name"): c for c in after.get("containers") or []}
    found += [f"container {name} added ({new[name].get('image')})" for name in new if name not in old]
    found += [f"container {name} removed" for name in old if name not in new]
    for name in (n for n in new if n in old):
        found += [f"container {name}: {line}" for line in _container_changes(old[name], new[name])]
    removed = podspec.config_refs(before) - podspec.config_refs(after)
    added = podspec.config_refs(after) - podspec.config_refs(before)
    found += [f"config reference removed: {ref}" for ref in sorted(removed)]
    found += [f"config reference added: {ref}" for ref in sorted(added)]
    return found or ["no change to the pod template's containers (e.g. a rollout restart or a label)"]


def _container_changes(old: dict, new: dict) -> list[str]:
    lines = []
    if old.get("image") != new.get("image"):
        lines.append(f"image {old.get('image')} → {new.get('image')}")
    lines += _env_changes(podspec.env_map(old), podspec.env_map(new))
    old_from, new_from = set(podspec.env_from(old)), set(podspec.env_from(new))
    lines += [f"envFrom removed: {ref}" for ref in sorted(old_from - new_from)]
    lines += [f"envFrom added: {ref}" for ref in sorted(new_from - old_from)]
    for part in ("requests", "limits"):
        was, now = podspec.resources(old)[part], podspec.resources(new)[part]
        for key in sorted(set(was) | set(now)):
            if was.get(key) != now.get(key):
                lines.append(f"{part}.{key} {was.get(key, 'unset')} → {now.get(key, 'unset')}")
    for key, name in (
        ("readinessProbe", "readiness"),
        ("livenessProbe", "liveness"),
        ("startupProbe", "startup"),
    ):
        was, now = podspec.probe(old.get(key)), podspec.probe(new.get(key))
        if was != now:
            lines.append(f"{name} probe {was or 'none'} → {now or 'none'}")
    for key in ("command", "args"):
        if (old.get(key) or []) != (new.get(key) or []):
            lines.append(
                f"{key} {' '.join(old.get(key) or []) or 'unset'} → {' '.join(new.get(key) or []) or 'unset'}"
            )
    return lines


def _env_changes(old: dict[str, str], new: dict[str, str]) -> list[str]:
    lines = [f"env {name} added ({_short(new[name])})" for name in new if name not in old]
    lines += [f"env {name} removed (was {_short(old[name])})" for name in old if name not in new]
    lines += [
        f"env {name} changed: {_short(old[name])} → {_short(new[name])}"
        for name in new
        if name in old and old[name] != new[name]
    ]
    return lines
