"""deploy/compose.yaml: valid Compose, the production shape's start order, no secret in the file."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from tests.deploy.tooling import DEPLOY, tool

COMPOSE = DEPLOY / "compose.yaml"
ONGRID = ("migrate", "web", "worker", "beat", "im")
SECRET_NAME = re.compile(r"SECRET|PASSWORD|TOKEN|_KEY", re.IGNORECASE)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def validate(path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_compose_file_is_valid_against_the_compose_specification():
    result = validate(COMPOSE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_rejects_a_misspelt_start_condition(tmp_path):
    """Proves the validator reads the file: a condition Compose does not know is refused."""
    broken = tmp_path / "compose.yaml"
    broken.write_text(COMPOSE.read_text().replace("service_completed_successfully", "service_done", 1))
    assert validate(broken).returncode != 0


def test_every_ongrid_process_starts_only_after_the_migration_succeeded(compose):
    services = compose["services"]
    assert services["migrate"]["command"] == ["migrate"]
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("web", "worker", "beat", "im"):
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        assert depends["postgres"]["condition"] == "service_healthy", name
        assert depends["redis"]["condition"] == "service_healthy", name


def test_databases_web_and_worker_have_health_checks(compose):
    services = compose["services"]
    for name in ("postgres", "redis", "web", "worker"):
        check = services[name]["healthcheck"]
        assert check.get("test") and not check.get("disable"), name
    assert "healthcheck" in services["web"]["healthcheck"]["test"]
    assert "inspect ping" in services["worker"]["healthcheck"]["test"][1]


def test_one_image_runs_every_ongrid_process_by_its_command(compose):
    services = compose["services"]
    images = {services[name]["image"] for name in ONGRID}
    assert len(images) == 1
    entrypoint = (DEPLOY / "entrypoint.sh").read_text()
    for name in ONGRID:
        command = services[name]["command"][0]
        assert re.search(rf"^\s+{command}\)", entrypoint, re.MULTILINE), f"{name}: {command}"


def test_the_im_poller_runs_only_with_its_profile(compose):
    services = compose["services"]
    assert services["im"]["profiles"] == ["im"]
    always = ("postgres", "redis", "migrate", "web", "worker", "beat")
    assert all("profiles" not in services[name] for name in always)


def test_the_production_shape_uses_postgres_and_redis(compose):
    environment = compose["services"]["web"]["environment"]
    assert environment["DATABASE_URL"].startswith("postgres://ongrid:${POSTGRES_PASSWORD:?")
    assert environment["DATABASE_URL"].endswith("@postgres:5432/ongrid")
    assert environment["REDIS_URL"] == "redis://redis:6379/0"


def test_no_secret_is_written_in_the_compose_file(compose):
    for name, service in compose["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if SECRET_NAME.search(key):
                assert re.fullmatch(r"\$\{[A-Z_]+:\?[^}]*\}", str(value)), f"{name}.{key} is inline"
            assert "://" not in str(value) or "@" not in str(value) or "${" in str(value), f"{name}.{key}"
    for name in ONGRID:
        assert compose["services"][name]["env_file"] == "ongrid.env"


def test_the_env_file_example_names_every_variable_compose_needs_and_holds_no_secret():
    example = (DEPLOY / "ongrid.env.example").read_text()
    values = dict(
        line.split("=", 1) for line in example.splitlines() if line.strip() and not line.startswith("#")
    )
    for needed in set(re.findall(r"\$\{([A-Z_]+)", COMPOSE.read_text())) - {"ONGRID_IMAGE"}:
        assert needed in values, needed
    for required in ("SECRET_KEY", "POSTGRES_PASSWORD", "ONGRID_ENCRYPTION_KEYS"):
        assert values[required] == "", f"{required} must be left for the operator to fill in"
    for key, value in values.items():
        if SECRET_NAME.search(key):
            assert value == "", key


def test_the_real_env_file_is_kept_out_of_git_and_out_of_the_image():
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "deploy/ongrid.env"], cwd=DEPLOY.parent, capture_output=True
    )
    assert ignored.returncode == 0, "deploy/ongrid.env must be in .gitignore"
    assert "deploy/*.env" in (DEPLOY.parent / ".dockerignore").read_text().splitlines()
