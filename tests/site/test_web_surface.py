"""The web surface (docs/security.md): websocket origins, the Content-Security-Policy, cookies and
HSTS, `check --deploy`, login lockout and API throttles."""

from __future__ import annotations

import logging
import re
import secrets
import socket

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.core import checks
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from django.test import override_settings
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from ongrid_site import config
from ongrid_site.asgi import application
from ongrid_site.config import BASE_DIR
from ongrid_site.origins import origin_allowed, parse_origin
from ongrid_site.web_security import transport_settings
from ops_app.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)


def scope(origin: str | None, host: str | None = "127.0.0.1:8000", scheme: str = "ws", **extra) -> dict:
    headers = [(name.encode(), value.encode()) for name, value in extra.items()]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if host is not None:
        headers.append((b"host", host.encode()))
    return {"type": "websocket", "scheme": scheme, "headers": headers}


# --- websocket origins ---------------------------------------------------------------------------


def test_origins_are_parsed_with_default_ports():
    assert parse_origin("https://Ongrid.example") == ("https", "ongrid.example", 443)
    assert parse_origin("http://127.0.0.1:8000") == ("http", "127.0.0.1", 8000)
    assert parse_origin("http://[::1]:8000") == ("http", "::1", 8000)
    for junk in ("null", "", "ftp://x", "http://", "http://a:notaport", "http://u@a", "http://a/path"):
        assert parse_origin(junk) is None, junk


def test_only_the_very_same_origin_is_accepted():
    assert origin_allowed(scope("http://127.0.0.1:8000"))
    assert origin_allowed(scope("http://localhost", host="localhost"))
    assert origin_allowed(scope("https://127.0.0.1:8000", scheme="wss"))
    assert not origin_allowed(scope("http://127.0.0.1:9000"))  # another port
    assert not origin_allowed(scope("http://127.0.0.1"))  # port 80 is another origin than 8000
    assert not origin_allowed(scope("https://127.0.0.1:8000"))  # another scheme
    assert not origin_allowed(scope("http://127.0.0.1:8000", scheme="wss"))
    assert not origin_allowed(scope("http://localhost:8000"))  # another host, even if allowed
    assert not origin_allowed(scope(None))
    assert not origin_allowed(scope("null"))


def test_the_host_must_be_an_allowed_host():
    assert not origin_allowed(scope("http://evil.example:8000", host="evil.example:8000"))
    assert not origin_allowed(scope("http://127.0.0.1:8000", host=None))


@override_settings(CSRF_TRUSTED_ORIGINS=["https://chat.example.com", "https://*.corp.example"])
def test_csrf_trusted_origins_are_accepted_exactly():
    assert origin_allowed(scope("https://chat.example.com"))
    assert origin_allowed(scope("https://ops.corp.example"))
    assert not origin_allowed(scope("http://chat.example.com"))  # scheme
    assert not origin_allowed(scope("https://chat.example.com:8443"))  # port
    assert not origin_allowed(scope("https://evilcorp.example"))


def test_behind_a_tls_proxy_its_forwarded_scheme_counts_only_when_trusted():
    forwarded = {"x-forwarded-proto": "https"}
    assert not origin_allowed(scope("https://127.0.0.1:8000", **forwarded))
    with override_settings(SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https")):
        assert origin_allowed(scope("https://127.0.0.1:8000", **forwarded))
        assert not origin_allowed(scope("http://127.0.0.1:8000", **forwarded))


@sync_to_async
def session_cookie(client, user) -> tuple[bytes, bytes]:
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


@pytest.mark.parametrize(
    "origin, accepted",
    [
        ("http://127.0.0.1:8000", True),
        ("http://127.0.0.1:8001", False),
        ("https://127.0.0.1:8000", False),
        ("http://evil.example", False),
    ],
)
async def test_the_asgi_application_checks_the_origin_exactly(client, member, origin, accepted):
    headers = [
        (b"origin", origin.encode()),
        (b"host", b"127.0.0.1:8000"),
        await session_cookie(client, member),
    ]
    socket = WebsocketCommunicator(application, "/ws/events/", headers=headers)
    connected, _ = await socket.connect(timeout=5)
    assert connected is accepted
    await socket.disconnect()


# --- Content-Security-Policy --------------------------------------------------------------------


def test_every_page_carries_a_strict_policy(client):
    response = client.get("/accounts/login/", HTTP_HOST="127.0.0.1:8000")
    policy = dict(
        (part.split()[0], part.split()[1:]) for part in response["Content-Security-Policy"].split("; ")
    )
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["connect-src"] == ["'self'", "ws://127.0.0.1:8000"]
    assert policy["object-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]
    assert "unsafe" not in response["Content-Security-Policy"]
    secure = client.get("/accounts/login/", HTTP_HOST="127.0.0.1:8000", secure=True)
    assert "connect-src 'self' wss://127.0.0.1:8000;" in secure["Content-Security-Policy"]
    assert "unsafe-inline" not in response["Content-Security-Policy"]


def test_only_drfs_browsable_api_may_use_inline_styles(client, member):
    client.force_login(member)
    response = client.get("/api/sessions/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200 and "<html" in response.content.decode()
    policy = response["Content-Security-Policy"]
    assert "style-src 'self' 'unsafe-inline';" in policy and "script-src 'self';" in policy


TEMPLATE_DIRS = [BASE_DIR / "templates", *BASE_DIR.glob("*_app/templates")]
INLINE = {
    "inline script": re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I),
    "event handler attribute": re.compile(r"\son[a-z]+\s*=", re.I),
    "style attribute": re.compile(r"\sstyle\s*=", re.I),
    "style element": re.compile(r"<style\b", re.I),
    "javascript: URL": re.compile(r"javascript:", re.I),
}


def test_no_template_has_inline_script_or_style():
    found = []
    for folder in TEMPLATE_DIRS:
        for path in folder.rglob("*.html"):
            text = path.read_text()
            found += [
                f"{path.relative_to(BASE_DIR)}: {what}" for what, rx in INLINE.items() if rx.search(text)
            ]
    assert found == []


def test_chart_legends_use_classes_not_inline_styles():
    from web_app.charts import chart_for_tool

    series = [{"labels": {"instance": f"web-{i}"}, "points": [[0, "1"], [60, str(i)]]} for i in range(3)]
    html = str(chart_for_tool("query_promql", {"series": series}))
    assert "swatch-2" in html and "style=" not in html


# --- cookies, HSTS, check --deploy --------------------------------------------------------------


def production(**env) -> config.Config:
    return config.load({"SECRET_KEY": secrets.token_urlsafe(50), "ONGRID_DATA_DIR": "/tmp/ongrid", **env})


def test_https_is_the_default_without_debug_and_bin_start_turns_it_off():
    assert production().https is True
    assert config.load({"DEBUG": "1"}).https is False
    assert production(ONGRID_HTTPS="0").https is False
    assert 'export ONGRID_HTTPS="${ONGRID_HTTPS:-0}"' in (BASE_DIR / "bin" / "start").read_text()


def test_transport_settings_follow_https_and_the_tls_proxy():
    plain = transport_settings(production(ONGRID_HTTPS="0"))
    assert not plain["SESSION_COOKIE_SECURE"] and not plain["CSRF_COOKIE_SECURE"]
    assert plain["SECURE_HSTS_SECONDS"] == 0 and not plain["SECURE_SSL_REDIRECT"]
    https = transport_settings(production())
    assert https["SESSION_COOKIE_SECURE"] and https["CSRF_COOKIE_SECURE"]
    assert https["SECURE_HSTS_SECONDS"] == 31536000
    assert https["SECURE_PROXY_SSL_HEADER"] is None
    assert not https["SECURE_SSL_REDIRECT"]  # without the proxy's word, a redirect would loop
    proxied = transport_settings(production(ONGRID_TLS_PROXY="1", ONGRID_HSTS_SECONDS="600"))
    assert proxied["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
    assert proxied["SECURE_SSL_REDIRECT"] and proxied["SECURE_HSTS_SECONDS"] == 600


def deploy_warnings(settings, shape: config.Config) -> set[str]:
    for name, value in transport_settings(shape).items():
        setattr(settings, name, value)
    settings.DEBUG = False
    settings.SECRET_KEY = shape.secret_key
    return {m.id for m in checks.run_checks(include_deployment_checks=True) if m.level >= checks.WARNING}


def test_check_deploy_is_clean_in_the_production_shape(settings):
    assert deploy_warnings(settings, production(ONGRID_TLS_PROXY="1")) == set()


def test_check_deploy_flags_a_plain_http_shape(settings):
    warnings = deploy_warnings(settings, production(ONGRID_HTTPS="0"))
    assert {"security.W004", "security.W012", "security.W016"} <= warnings


def test_behind_the_tls_proxy_http_is_redirected_but_probes_are_not(client, settings):
    for name, value in transport_settings(production(ONGRID_TLS_PROXY="1")).items():
        setattr(settings, name, value)
    plain = client.get("/accounts/login/")
    assert plain.status_code == 301 and plain["Location"].startswith("https://")
    assert client.get("/healthz").status_code == 200
    proxied = client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
    assert proxied.status_code == 200
    assert proxied["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"


def test_secure_cookies_are_set_over_https(client, settings, member):
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    page = client.get("/accounts/login/", secure=True)
    assert page.cookies["csrftoken"]["secure"]
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "alice-pass-123"}, secure=True
    )
    assert response.status_code == 302
    assert response.cookies["sessionid"]["secure"] and response.cookies["sessionid"]["httponly"]


# --- login lockout ------------------------------------------------------------------------------


def test_25_wrong_passwords_lock_the_username_and_the_right_one_is_refused(client, member):
    for _ in range(25):
        client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
    assert "Too many failed log-in attempts" in response.content.decode()
    assert 'id="id_username"' in response.content.decode()  # still the login page


def test_the_lock_is_per_username_and_address(client, member, auditor):
    for _ in range(5):
        client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert (
        client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"}).status_code
        == 429
    )
    other_user = client.post("/accounts/login/", {"username": "audrey", "password": "audrey-pass-123"})
    assert other_user.status_code == 302
    client.logout()
    elsewhere = client.post(
        "/accounts/login/", {"username": "alice", "password": "alice-pass-123"}, REMOTE_ADDR="10.9.8.7"
    )
    assert elsewhere.status_code == 302


def test_fewer_failures_than_the_limit_still_log_in(client, member):
    for _ in range(4):
        assert client.post("/accounts/login/", {"username": "alice", "password": "wrong"}).status_code == 200
    assert (
        client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"}).status_code
        == 302
    )


def test_the_admin_login_is_locked_too(client, member):
    member.is_staff = True
    member.save()
    for _ in range(25):
        client.post("/admin/login/", {"username": "alice", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "alice", "password": "alice-pass-123"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_lockout_limits_are_configurable():
    shape = production(ONGRID_LOGIN_FAILURE_LIMIT="10", ONGRID_LOGIN_LOCKOUT_MINUTES="60")
    assert (shape.login_failure_limit, shape.login_lockout_minutes) == (10, 60.0)
    with pytest.raises(config.ConfigError):
        production(ONGRID_LOGIN_FAILURE_LIMIT="0")


# --- the API's schema and docs ------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/schema/", "/api/schema/?format=json", "/api/schema/?format=yaml"])
def test_anonymous_callers_get_no_schema_but_a_json_error(path):
    response = APIClient().get(path)
    assert response.status_code in (401, 403) and response["Content-Type"].startswith("application/json")
    assert response.json()["error"] == "Authentication credentials were not provided."
    assert b"/api/sessions/" not in response.content


def test_a_bad_token_gets_no_schema_either():
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION="Token ogt_not-a-real-token")
    response = api.get("/api/schema/")
    assert response.status_code in (401, 403) and "error" in response.json()


def test_signed_in_users_get_the_schema_by_session_or_token(client, member):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(member)[1]}")
    client.force_login(member)
    for caller in (api, client):
        response = caller.get("/api/schema/")
        assert response.status_code == 200 and b"/api/sessions/{id}/messages/" in response.content


@pytest.mark.parametrize("path", ["/api/docs/", "/api/docs/?script"])
def test_the_docs_page_sends_anonymous_visitors_to_the_login_page(client, member, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path.replace('?', '%3F')}"
    client.force_login(member)
    assert client.get(path).status_code == 200


# --- API throttles ------------------------------------------------------------------------------


def test_an_api_user_over_the_rate_gets_429_json(member, monkeypatch):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "3/minute", "anon": "1/minute"})
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(member)[1]}")
    assert [api.get("/api/sessions/").status_code for _ in range(3)] == [200, 200, 200]
    throttled = api.get("/api/sessions/")
    assert throttled.status_code == 429
    assert throttled["Content-Type"].startswith("application/json")
    assert "throttled" in throttled.json()["detail"]
    assert int(throttled["Retry-After"]) > 0


def test_while_the_throttle_cache_is_down_the_api_answers_and_says_so_once(member, monkeypatch, caplog):
    """Redis down must not turn every API call into a 500: the throttle lets requests through."""
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "2/minute", "anon": "1/minute"})
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    # The suite gives every test its own in-memory throttle cache (conftest); this one gets Redis
    # on a port nobody listens on, with the timeouts ongrid_site.config sets for it.
    down = RedisCache(f"redis://127.0.0.1:{dead}/0", {"OPTIONS": {"socket_connect_timeout": 0.5}})
    monkeypatch.setattr(SimpleRateThrottle, "cache", down)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(member)[1]}")
    with caplog.at_level(logging.WARNING, logger="ongrid_site.throttles"):
        assert [api.get("/api/sessions/").status_code for _ in range(4)] == [200] * 4
    off = [r for r in caplog.records if "throttling is off" in r.getMessage()]
    assert len(off) == 1 and "ConnectionError" in off[0].getMessage()

    monkeypatch.setattr(SimpleRateThrottle, "cache", LocMemCache(f"back-{dead}", {}))  # Redis is back
    assert [api.get("/api/sessions/").status_code for _ in range(3)] == [200, 200, 429]
    assert any("throttling is back" in r.getMessage() for r in caplog.records)


def test_anonymous_api_callers_have_their_own_rate(monkeypatch):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "3/minute", "anon": "1/minute"})
    api = APIClient()
    assert api.get("/api/schema/").status_code in (401, 403)  # counted, then refused
    throttled = api.get("/api/schema/")
    assert throttled.status_code == 429 and "throttled" in throttled.json()["error"]


def test_throttle_rates_are_configurable_and_checked(settings):
    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] == {"anon": "30/minute", "user": "600/minute"}
    shape = production(ONGRID_API_USER_RATE="100/hour", ONGRID_API_ANON_RATE="off")
    assert (shape.api_user_rate, shape.api_anon_rate) == ("100/hour", None)
    with pytest.raises(config.ConfigError, match="ONGRID_API_USER_RATE"):
        production(ONGRID_API_USER_RATE="lots")
