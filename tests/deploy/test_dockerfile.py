"""The Dockerfile, its entrypoint and its health check, as a person running the image meets them."""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import re
import stat
import subprocess
import threading

import pytest

from tests.deploy.tooling import DEPLOY, ROOT, tool

DOCKERFILE = ROOT / "Dockerfile"
ENTRYPOINT = DEPLOY / "entrypoint.sh"


def stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuation lines joined), one list per FROM."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            found.append([])
        if found:
            found[-1].append(line)
    return found


def hadolint(path) -> list[dict]:
    result = subprocess.run(
        [tool("hadolint"), "--no-color", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return json.loads(result.stdout or "[]")


def test_hadolint_finds_nothing_in_the_dockerfile():
    assert hadolint(DOCKERFILE) == []


def test_hadolint_flags_a_careless_install(tmp_path):
    """Proves the linter really runs: the usual mistakes are reported by rule."""
    careless = tmp_path / "Dockerfile"
    careless.write_text("FROM debian:bookworm\nRUN apt-get update && apt-get install -y curl\n")
    assert {"DL3008", "DL3015"} <= {finding["code"] for finding in hadolint(careless)}


def test_build_tools_and_gettext_stay_in_the_build_stage():
    build, final = stages()
    assert any("gettext" in line and "gcc" in line for line in build)
    assert not any("apt-get install" in line for line in final)
    assert any(line.startswith("COPY --from=build /opt/venv") for line in final)


def test_catalogs_and_static_files_are_baked_outside_the_data_volume():
    build, final = stages()
    baked = next(line for line in build if "collectstatic" in line)
    assert "compilemessages" in baked and "ONGRID_STATIC_ROOT=/opt/ongrid/staticfiles" in baked
    environment = " ".join(line for line in final if line.startswith("ENV "))
    assert "ONGRID_STATIC_ROOT=/opt/ongrid/staticfiles" in environment
    assert "ONGRID_DATA_DIR=/var/lib/ongrid" in environment
    assert 'VOLUME ["/var/lib/ongrid"]' in final


def test_the_image_runs_as_an_unprivileged_user_with_a_health_check_and_labels():
    _, final = stages()
    users = [line.split()[1] for line in final if line.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in {"0", "root"}
    health = next(line for line in final if line.startswith("HEALTHCHECK"))
    assert '"/opt/ongrid/deploy/entrypoint.sh", "healthcheck"' in health
    labels = " ".join(line for line in final if line.startswith("LABEL"))
    for key in ("title", "version", "revision", "created", "description"):
        assert f"org.opencontainers.image.{key}=" in labels
    assert 'ENTRYPOINT ["/opt/ongrid/deploy/entrypoint.sh"]' in final
    assert 'CMD ["web"]' in final


def test_the_build_context_leaves_out_local_state_and_secrets():
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    for entry in (".git", ".venv", "var", "deploy/*.env", "tests"):
        assert entry in ignored


@pytest.fixture
def fake_bin(tmp_path):
    """daphne, celery, python and nproc that print the arguments they were exec'd with."""
    for name in ("daphne", "celery", "python"):
        script = tmp_path / name
        script.write_text(f'#!/bin/sh\necho {name} "$@"\n')
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    nproc = tmp_path / "nproc"
    nproc.write_text("#!/bin/sh\necho 6\n")
    nproc.chmod(0o755)
    return tmp_path


def entrypoint(fake_bin, *args, **env) -> subprocess.CompletedProcess:
    environment = {"PATH": f"{fake_bin}:/usr/bin:/bin", **env}
    return subprocess.run(
        ["sh", str(ENTRYPOINT), *args], capture_output=True, text=True, env=environment, timeout=30
    )


def test_each_command_becomes_its_process(fake_bin):
    assert entrypoint(fake_bin).stdout.split() == [
        "daphne", "-b", "0.0.0.0", "-p", "8000", "ongrid_site.asgi:application",
    ]
    assert entrypoint(fake_bin, "beat").stdout.startswith("celery -A ongrid_site beat")
    assert entrypoint(fake_bin, "im").stdout.strip() == "python manage.py ongrid_im"
    assert entrypoint(fake_bin, "migrate").stdout.strip() == "python manage.py migrate --noinput"
    manage = entrypoint(fake_bin, "manage", "createsuperuser").stdout.strip()
    assert manage == "python manage.py createsuperuser"


def test_the_worker_is_prefork_with_one_child_per_core_unless_told(fake_bin):
    assert "--pool=prefork --concurrency=6" in entrypoint(fake_bin, "worker").stdout
    told = entrypoint(fake_bin, "worker", ONGRID_WORKER_CONCURRENCY="2").stdout
    assert "--pool=prefork --concurrency=2" in told


def test_proxy_headers_are_trusted_only_behind_a_tls_proxy(fake_bin):
    assert "--proxy-headers" in entrypoint(fake_bin, "web", ONGRID_TLS_PROXY="on").stdout
    assert "--proxy-headers" not in entrypoint(fake_bin, "web", ONGRID_TLS_PROXY="0").stdout
    assert "-p 9000" in entrypoint(fake_bin, "web", ONGRID_PORT="9000").stdout


def test_waiting_for_migrations_returns_once_migrate_check_passes(fake_bin, tmp_path):
    """The Helm chart's init containers hold a pod until the migration Job has run."""
    state = tmp_path / "checks"
    (fake_bin / "python").write_text(
        f'#!/bin/sh\necho x >> {state}\n[ "$(wc -l < {state})" -ge 3 ]\n'
    )
    result = entrypoint(fake_bin, "wait-for-migrations", ONGRID_MIGRATION_POLL_SECONDS="0")
    assert result.returncode == 0
    assert result.stdout.count("waiting for the database to be migrated") == 2


def test_an_unknown_command_is_refused_with_the_usage(fake_bin):
    result = entrypoint(fake_bin, "serve")
    assert result.returncode == 64
    assert "unknown command 'serve'" in result.stderr and "web|worker|beat|im|migrate" in result.stderr


@pytest.fixture
def healthcheck(monkeypatch):
    spec = importlib.util.spec_from_file_location("ongrid_healthcheck", DEPLOY / "healthcheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "serves_http", lambda: True)
    return module


@pytest.fixture
def healthz_server(monkeypatch):
    """A stand-in /healthz that answers with `answer["status"]` and records the Host it got."""
    answer = {"status": 200, "hosts": []}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            answer["hosts"].append(self.headers["Host"])
            body = json.dumps({"failed": [] if answer["status"] == 200 else ["database"]}).encode()
            self.send_response(answer["status"])
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("ONGRID_PORT", str(server.server_port))
    yield answer
    server.shutdown()


def test_the_health_check_passes_on_200_and_fails_naming_the_check(healthcheck, healthz_server, capsys):
    assert healthcheck.main() == 0
    healthz_server["status"] = 503
    assert healthcheck.main() == 1
    assert "503" in capsys.readouterr().out


def test_the_health_check_asks_with_an_allowed_host_name(healthcheck, healthz_server, monkeypatch):
    """Django answers 400 to a Host outside ALLOWED_HOSTS, so 127.0.0.1 would fail in production."""
    monkeypatch.setenv("ALLOWED_HOSTS", ".ongrid.example.com,localhost")
    assert healthcheck.main() == 0
    assert healthz_server["hosts"] == ["ongrid.example.com"]


def test_the_health_check_fails_when_nothing_listens(healthcheck, monkeypatch):
    monkeypatch.setenv("ONGRID_PORT", "1")
    assert healthcheck.main() == 1


def test_containers_without_a_web_server_pass_the_image_health_check():
    result = subprocess.run(
        ["python3", str(DEPLOY / "healthcheck.py")], capture_output=True, text=True, timeout=30,
        env={**os.environ, "ONGRID_PORT": "1"},
    )
    # The test runner is PID 1's descendant, not daphne: a worker container sees the same.
    assert result.returncode == 0 and "runs no web server" in result.stdout
