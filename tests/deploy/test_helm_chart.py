"""deploy/helm/ongrid rendered by Helm's own engine (pinned) and every manifest checked against
the Kubernetes API schemas (pinned), for the value sets an operator would pick."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.deploy.tooling import DEPLOY, module

CHART = DEPLOY / "helm" / "ongrid"
# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest schemas pinned.
KUBERNETES_VERSIONS = ("1.27.0", "1.37.0")
SECRETS = {"SECRET_KEY": "chart-test-key", "ONGRID_ENCRYPTION_KEYS": "k1", "OPENAI_API_KEY": "sk-test"}
VALUE_SETS = {
    "bundled": {"secrets": SECRETS, "postgresql": {"auth": {"password": "pgpass"}}},
    "external": {
        "secrets": SECRETS,
        "postgresql": {"bundled": False, "externalUrl": "postgres://ongrid:pw@db.internal:5432/ongrid"},
        "redis": {"bundled": False, "externalUrl": "redis://cache.internal:6379/0"},
    },
    "rbac": {
        "secrets": SECRETS,
        "postgresql": {"auth": {"password": "pgpass"}},
        "kubernetesReader": {"enabled": True, "organization": "acme"},
    },
    "ingress-im-fixed-workers": {
        "secrets": {"existingSecret": "ongrid-secrets"},
        "postgresql": {"bundled": False, "externalUrl": "postgres://ongrid:pw@db.internal:5432/ongrid"},
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "hosts": [{"host": "ongrid.example.com"}],
            "tls": [{"secretName": "ongrid-tls", "hosts": ["ongrid.example.com"]}],
        },
        "im": {"enabled": True},
        "worker": {"autoscaling": {"enabled": False}, "replicas": 3},
    },
}
ONGRID_COMPONENTS = ("web", "worker", "beat", "im", "migrate")


def render(values: dict, name: str = "ongrid") -> tuple[list[dict], str]:
    """The manifests (every YAML document) and NOTES.txt, as `helm install` would produce them."""
    helm = module("helm_python")
    with helm.Chart.load(str(CHART)) as chart:
        rendered = chart.render(copy.deepcopy(values), name=name, namespace="ops", is_install=True)
    documents = [
        document
        for path, text in sorted(rendered.items())
        if path.endswith(".yaml")
        for document in yaml.safe_load_all(text)
        if document
    ]
    notes = next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))
    return documents, notes


def by_kind(documents, kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in documents if d["kind"] == kind}


def pod_specs(documents):
    for document in documents:
        if document["kind"] in {"Deployment", "StatefulSet", "Job"}:
            yield document["metadata"]["name"], document["spec"]["template"]["spec"]


@pytest.fixture(scope="module", params=sorted(VALUE_SETS))
def rendered(request):
    return request.param, *render(VALUE_SETS[request.param])


@pytest.mark.parametrize("kubernetes_version", KUBERNETES_VERSIONS)
def test_every_rendered_manifest_is_valid_for_kubernetes(rendered, kubernetes_version):
    validator = module("kubernetes_validate")
    name, documents, _ = rendered
    assert len(documents) >= 10, name
    for document in documents:
        try:
            validator.validate(document, kubernetes_version, strict=True)
        except validator.ValidationError as exc:
            pytest.fail(f"{name}: {document['kind']} {document['metadata']['name']}: {exc.message}")


def test_the_validator_rejects_a_malformed_deployment():
    """Proves the schemas are applied: a misspelt field and a wrong type are refused."""
    validator = module("kubernetes_validate")
    documents, _ = render(VALUE_SETS["bundled"])
    broken = copy.deepcopy(by_kind(documents, "Deployment")["ongrid-web"])
    broken["spec"]["replicas"] = "two"
    with pytest.raises(validator.ValidationError):
        validator.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)
    broken = copy.deepcopy(by_kind(documents, "Deployment")["ongrid-web"])
    broken["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(validator.ValidationError):
        validator.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_helm_lint_reports_no_warning(name):
    helm = module("helm_python")
    report = helm.lint(str(CHART), copy.deepcopy(VALUE_SETS[name]), strict=True, kube_version="v1.27.0")
    problems = [m for m in report["messages"] if m["severity"] >= 2] + report.get("errors", [])
    assert not problems, problems


def test_an_install_without_a_secret_key_is_refused_naming_it():
    helm = module("helm_python")
    with pytest.raises(helm.HelmError, match="SECRET_KEY"):
        render({"postgresql": {"auth": {"password": "pgpass"}}})


def test_the_bundled_database_needs_a_password():
    helm = module("helm_python")
    with pytest.raises(helm.HelmError, match="postgresql.auth.password"):
        render({"secrets": SECRETS})


def test_web_pods_are_probed_on_healthz_with_a_host_django_allows(rendered):
    name, documents, _ = rendered
    web = by_kind(documents, "Deployment")["ongrid-web"]["spec"]["template"]["spec"]["containers"][0]
    allowed = by_kind(documents, "ConfigMap")["ongrid"]["data"]["ALLOWED_HOSTS"].split(",")
    for probe in ("readinessProbe", "livenessProbe"):
        get = web[probe]["httpGet"]
        assert get["path"] == "/healthz" and get["port"] == "http", name
        assert get["httpHeaders"] == [{"name": "Host", "value": allowed[0]}], name
    assert web["livenessProbe"]["failureThreshold"] * web["livenessProbe"]["periodSeconds"] >= 60


def test_every_pod_runs_unprivileged(rendered):
    name, documents, _ = rendered
    for workload, spec in pod_specs(documents):
        assert spec["securityContext"]["runAsNonRoot"] is True, workload
        assert spec["securityContext"]["runAsUser"] != 0, workload
        for container in spec["containers"] + spec.get("initContainers", []):
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, (workload, container["name"])
            assert context["capabilities"]["drop"] == ["ALL"], (workload, container["name"])
            if container["image"].startswith("ongrid:"):
                assert context["readOnlyRootFilesystem"] is True, (workload, container["name"])


def test_the_migration_is_a_hook_that_runs_before_upgrades():
    for name, values in VALUE_SETS.items():
        documents, _ = render(values)
        job = by_kind(documents, "Job")["ongrid-migrate"]
        hooks = job["metadata"]["annotations"]["helm.sh/hook"].split(",")
        bundled = values["postgresql"].get("bundled", True)
        # A bundled PostgreSQL only exists once the install has created it.
        assert hooks == (["post-install", "pre-upgrade"] if bundled else ["pre-install", "pre-upgrade"]), name
        assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]
        config = by_kind(documents, "Secret")["ongrid-migrate"]["metadata"]["annotations"]
        assert config["helm.sh/hook"] == job["metadata"]["annotations"]["helm.sh/hook"]
        assert int(config["helm.sh/hook-weight"]) < int(job["metadata"]["annotations"]["helm.sh/hook-weight"])
        assert "hook-succeeded" in config["helm.sh/hook-delete-policy"]


def test_ongrid_pods_wait_for_the_migration(rendered):
    name, documents, _ = rendered
    for deployment in by_kind(documents, "Deployment").values():
        spec = deployment["spec"]["template"]["spec"]
        assert [c["args"] for c in spec["initContainers"]] == [["wait-for-migrations"]], name


def test_beat_and_the_im_poller_never_run_twice():
    documents, _ = render(VALUE_SETS["ingress-im-fixed-workers"])
    deployments = by_kind(documents, "Deployment")
    for singleton in ("ongrid-beat", "ongrid-im"):
        assert deployments[singleton]["spec"]["replicas"] == 1
        assert deployments[singleton]["spec"]["strategy"] == {"type": "Recreate"}
    assert "ongrid-im" not in by_kind(render(VALUE_SETS["bundled"])[0], "Deployment")


def test_workers_scale_by_cpu_with_one_child_per_requested_core():
    documents, _ = render(VALUE_SETS["bundled"])
    worker = by_kind(documents, "Deployment")["ongrid-worker"]
    assert "replicas" not in worker["spec"], "the HPA owns the replica count"
    hpa = by_kind(documents, "HorizontalPodAutoscaler")["ongrid-worker"]
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ongrid-worker"}
    assert hpa["spec"]["scaleTargetRef"] == target
    container = worker["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["worker"]
    concurrency = {e["name"]: e["value"] for e in container["env"]}["ONGRID_WORKER_CONCURRENCY"]
    assert concurrency == str(container["resources"]["requests"]["cpu"])
    fixed, _ = render(VALUE_SETS["ingress-im-fixed-workers"])
    assert by_kind(fixed, "Deployment")["ongrid-worker"]["spec"]["replicas"] == 3
    assert not by_kind(fixed, "HorizontalPodAutoscaler")


def test_disruption_budgets_cover_the_web_and_worker_pods():
    documents, _ = render(VALUE_SETS["bundled"])
    deployments = by_kind(documents, "Deployment")
    for name, budget in by_kind(documents, "PodDisruptionBudget").items():
        labels = deployments[name]["spec"]["template"]["metadata"]["labels"]
        assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert set(by_kind(documents, "PodDisruptionBudget")) == {"ongrid-web", "ongrid-worker"}


def test_bundled_or_external_databases():
    bundled, _ = render(VALUE_SETS["bundled"])
    assert set(by_kind(bundled, "StatefulSet")) == {"ongrid-postgresql", "ongrid-redis"}
    urls = by_kind(bundled, "Secret")["ongrid"]["stringData"]
    assert urls["DATABASE_URL"] == "postgres://ongrid:pgpass@ongrid-postgresql:5432/ongrid"
    assert urls["REDIS_URL"] == "redis://ongrid-redis:6379/0"
    external, _ = render(VALUE_SETS["external"])
    assert not by_kind(external, "StatefulSet")
    urls = by_kind(external, "Secret")["ongrid"]["stringData"]
    assert urls["DATABASE_URL"] == "postgres://ongrid:pw@db.internal:5432/ongrid"
    assert urls["REDIS_URL"] == "redis://cache.internal:6379/0"


def test_secrets_stay_out_of_the_config_map(rendered):
    name, documents, _ = rendered
    settings = by_kind(documents, "ConfigMap")["ongrid"]["data"]
    for key, value in settings.items():
        assert not any(word in key for word in ("SECRET", "PASSWORD", "TOKEN", "API_KEY", "_URL")) or key in {
            "ONGRID_PUBLIC_URL"
        }, (name, key)
        assert "pgpass" not in value and "sk-test" not in value, (name, key)


def test_an_existing_secret_is_read_after_the_charts_own():
    documents, _ = render(VALUE_SETS["ingress-im-fixed-workers"])
    assert "SECRET_KEY" not in by_kind(documents, "Secret")["ongrid"]["stringData"]
    for deployment in by_kind(documents, "Deployment").values():
        sources = deployment["spec"]["template"]["spec"]["containers"][0]["envFrom"]
        assert sources[-1] == {"secretRef": {"name": "ongrid-secrets"}}
    job = by_kind(documents, "Job")["ongrid-migrate"]["spec"]["template"]["spec"]["containers"][0]
    assert job["envFrom"][-1] == {"secretRef": {"name": "ongrid-secrets"}}


def test_the_kubernetes_reader_role_is_optional_and_read_only():
    plain, _ = render(VALUE_SETS["bundled"])
    assert not by_kind(plain, "ClusterRole") and not by_kind(plain, "ClusterRoleBinding")
    assert all(spec["automountServiceAccountToken"] is False for _, spec in pod_specs(plain))
    documents, _ = render(VALUE_SETS["rbac"])
    role = by_kind(documents, "ClusterRole")["ongrid-reader"]
    for rule in role["rules"]:
        assert set(rule["verbs"]) <= {"get", "list", "watch"}, rule
        assert "secrets" not in rule["resources"], rule
    resources = {resource for rule in role["rules"] for resource in rule["resources"]}
    assert {"pods", "pods/log", "events", "deployments", "replicasets"} <= resources
    binding = by_kind(documents, "ClusterRoleBinding")["ongrid-reader"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "ongrid", "namespace": "ops"}]
    assert by_kind(documents, "ConfigMap")["ongrid"]["data"]["ONGRID_KUBERNETES_IN_CLUSTER"] == "acme"
    web = by_kind(documents, "Deployment")["ongrid-web"]["spec"]["template"]["spec"]
    assert web["automountServiceAccountToken"] is True


def test_the_ingress_sends_pages_and_websockets_to_daphne_with_long_timeouts():
    documents, notes = render(VALUE_SETS["ingress-im-fixed-workers"])
    ingress = by_kind(documents, "Ingress")["ongrid"]
    assert int(ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 600
    (rule,) = ingress["spec"]["rules"]
    (path,) = rule["http"]["paths"]
    assert (path["path"], path["pathType"]) == ("/", "Prefix")  # /ws/... included
    assert path["backend"]["service"] == {"name": "ongrid-web", "port": {"name": "http"}}
    settings = by_kind(documents, "ConfigMap")["ongrid"]["data"]
    assert settings["ALLOWED_HOSTS"] == "ongrid.example.com"
    assert settings["ONGRID_PUBLIC_URL"] == "https://ongrid.example.com"
    assert "https://ongrid.example.com" in notes
    service = by_kind(documents, "Service")["ongrid-web"]
    web = by_kind(documents, "Deployment")["ongrid-web"]["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= web.items()


def test_the_notes_say_how_to_reach_it_and_make_the_first_admin():
    _, notes = render(VALUE_SETS["bundled"])
    assert "port-forward svc/ongrid-web 8000:80" in notes
    assert "entrypoint.sh manage createsuperuser" in notes
    assert "logs -f job/ongrid-migrate" in notes
