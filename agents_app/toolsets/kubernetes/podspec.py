"""A pod template's containers as an SRE reads them: images, environment, resources, probes,
configuration references. Shared by k8s_describe and the rollout history's diffs.

A value taken from a Secret is shown as a reference (`from Secret s key k`) and never resolved:
the Secret is not read, so its value cannot reach the model or the audit.
"""

from __future__ import annotations


def env_value(item: dict) -> str:
    """One env entry as `value`, `from Secret s key k`, `from ConfigMap c key k` or a field ref."""
    if "valueFrom" not in item:
        return str(item.get("value", ""))
    source = item.get("valueFrom") or {}
    if source.get("secretKeyRef"):
        ref = source["secretKeyRef"]
        return f"from Secret {ref.get('name')} key {ref.get('key')}"
    if source.get("configMapKeyRef"):
        ref = source["configMapKeyRef"]
        return f"from ConfigMap {ref.get('name')} key {ref.get('key')}"
    if source.get("fieldRef"):
        return f"from field {source['fieldRef'].get('fieldPath')}"
    if source.get("resourceFieldRef"):
        return f"from resource {source['resourceFieldRef'].get('resource')}"
    return "from an unknown source"


def env_map(container: dict) -> dict[str, str]:
    return {item.get("name", ""): env_value(item) for item in container.get("env") or []}


def env_lines(container: dict) -> list[str]:
    """`NAME=value`, or `NAME: from Secret s key k` for a reference."""
    lines = []
    for name, value in env_map(container).items():
        lines.append(f"{name}: {value}" if value.startswith("from ") else f"{name}={value}")
    return lines


def env_from(container: dict) -> list[str]:
    """The whole ConfigMaps and Secrets a container takes its environment from."""
    refs = []
    for item in container.get("envFrom") or []:
        prefix = f" (prefix {item['prefix']})" if item.get("prefix") else ""
        if item.get("configMapRef"):
            refs.append(f"ConfigMap {item['configMapRef'].get('name')}{prefix}")
        if item.get("secretRef"):
            refs.append(f"Secret {item['secretRef'].get('name')}{prefix}")
    return refs


def probe(spec: dict | None) -> str:
    """A probe in one line: "GET :8080/healthz every 10s, fails after 3"."""
    if not spec:
        return ""
    if spec.get("httpGet"):
        action = f"GET :{spec['httpGet'].get('port')}{spec['httpGet'].get('path', '/')}"
    elif spec.get("tcpSocket"):
        action = f"TCP :{spec['tcpSocket'].get('port')}"
    elif spec.get("exec"):
        action = "exec " + " ".join(spec["exec"].get("command") or [])
    elif spec.get("grpc"):
        action = f"gRPC :{spec['grpc'].get('port')}"
    else:
        action = "unknown"
    timing = [f"every {spec.get('periodSeconds', 10)}s", f"fails after {spec.get('failureThreshold', 3)}"]
    if spec.get("initialDelaySeconds"):
        timing.insert(0, f"after {spec['initialDelaySeconds']}s")
    return f"{action} " + ", ".join(timing)


def resources(container: dict) -> dict:
    spec = container.get("resources") or {}
    return {"requests": spec.get("requests") or {}, "limits": spec.get("limits") or {}}


def container_spec(container: dict) -> dict:
    """What a container is told to be: image, command, environment, resources, probes."""
    shown = {"name": container.get("name"), "image": container.get("image")}
    for key in ("command", "args"):
        if container.get(key):
            shown[key] = container[key]
    shown["env"] = env_lines(container)
    refs = env_from(container)
    if refs:
        shown["env_from"] = refs
    shown.update(resources(container))
    for key, name in (
        ("readinessProbe", "readiness"),
        ("livenessProbe", "liveness"),
        ("startupProbe", "startup"),
    ):
        if container.get(key):
            shown[f"{name}_probe"] = probe(container[key])
    return shown


def volume_refs(pod_spec: dict) -> list[str]:
    """The ConfigMaps, Secrets and claims mounted as volumes (names only)."""
    refs = []
    for volume in pod_spec.get("volumes") or []:
        if volume.get("configMap"):
            refs.append(f"{volume.get('name')}: ConfigMap {volume['configMap'].get('name')}")
        elif volume.get("secret"):
            refs.append(f"{volume.get('name')}: Secret {volume['secret'].get('secretName')}")
        elif volume.get("persistentVolumeClaim"):
            refs.append(f"{volume.get('name')}: PVC {volume['persistentVolumeClaim'].get('claimName')}")
        elif volume.get("projected"):
            for source in volume["projected"].get("sources") or []:
                if source.get("configMap"):
                    refs.append(f"{volume.get('name')}: ConfigMap {source['configMap'].get('name')}")
                if source.get("secret"):
                    refs.append(f"{volume.get('name')}: Secret {source['secret'].get('name')}")
    return refs


def config_refs(pod_spec: dict) -> set[str]:
    """Every ConfigMap and Secret the template names (env, envFrom, volumes)."""
    refs = {ref.split(": ", 1)[1] for ref in volume_refs(pod_spec) if "PVC " not in ref}
    for container in pod_spec.get("containers") or []:
        refs |= {ref.split(" (prefix")[0] for ref in env_from(container)}
        for value in env_map(container).values():
            if value.startswith(("from Secret ", "from ConfigMap ")):
                refs.add(" ".join(value.split()[1:3]))
    return refs
