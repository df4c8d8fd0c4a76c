"""The kinds the read tools know, by every name a model may use for them (kubectl's singular,
plural and short names, any case), and the refusal of Secrets.
"""

from __future__ import annotations

from dataclasses import dataclass

from lightkube.core.resource import GlobalResource
from lightkube.resources import apps_v1, autoscaling_v2, batch_v1, core_v1, networking_v1

from agents_app.toolsets.contract import ToolError

SECRETS_REFUSED = "Secrets are never read by Ongrid (their values would reach the model and the audit)"
SECRET_NAMES = {"secret", "secrets"}


@dataclass(frozen=True)
class Kind:
    """One kind: its name in results, its lightkube resource, and the names that mean it."""

    name: str
    resource: type
    aliases: tuple[str, ...] = ()

    @property
    def namespaced(self) -> bool:
        return not issubclass(self.resource, GlobalResource)


KINDS = (
    Kind("Pod", core_v1.Pod, ("po", "pods")),
    Kind("Deployment", apps_v1.Deployment, ("deploy", "deployments")),
    Kind("ReplicaSet", apps_v1.ReplicaSet, ("rs", "replicasets")),
    Kind("StatefulSet", apps_v1.StatefulSet, ("sts", "statefulsets")),
    Kind("DaemonSet", apps_v1.DaemonSet, ("ds", "daemonsets")),
    Kind("Job", batch_v1.Job, ("jobs",)),
    Kind("CronJob", batch_v1.CronJob, ("cj", "cronjobs")),
    Kind("Service", core_v1.Service, ("svc", "services")),
    Kind("Ingress", networking_v1.Ingress, ("ing", "ingresses")),
    Kind("ConfigMap", core_v1.ConfigMap, ("cm", "configmaps")),
    Kind(
        "HorizontalPodAutoscaler", autoscaling_v2.HorizontalPodAutoscaler, ("hpa", "horizontalpodautoscalers")
    ),
    Kind("PersistentVolumeClaim", core_v1.PersistentVolumeClaim, ("pvc", "persistentvolumeclaims")),
    Kind("Node", core_v1.Node, ("no", "nodes")),
    Kind("Namespace", core_v1.Namespace, ("ns", "namespaces")),
    Kind("Event", core_v1.Event, ("ev", "events")),
)
_BY_NAME = {alias: kind for kind in KINDS for alias in (kind.name.lower(), *kind.aliases)}


def kind_of(word: str) -> Kind:
    """The kind `word` names (`pods`, `po`, `Deployment`, `hpa`...); Secrets and unknown words
    are refused with the reason, the latter listing the kinds."""
    key = (word or "").strip().lower()
    # `kubectl get deployment.apps` and `pods/v1` spellings: the kind is the first part.
    key = key.split(".")[0].split("/")[0]
    if key in SECRET_NAMES:
        raise ToolError(SECRETS_REFUSED)
    if key not in _BY_NAME:
        names = ", ".join(f"{k.name.lower()} ({k.aliases[0]})" for k in KINDS)
        raise ToolError(f"unknown kind {word!r}; the kinds are: {names}")
    return _BY_NAME[key]
