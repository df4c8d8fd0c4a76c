from __future__ import annotations

import dataclasses
import gc
import signal
import warnings

import pytest
from channels.layers import channel_layers
from django.utils import translation

from agents_app.runtime.executors import settle_background
from ops_app.core.egress import AllowList
from ops_app.models import Organization
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_organization, create_user
from tests.support.diagnose import dump_loop_tasks, loop_tasks_dumped_after, running_work
from tests.support.egress import LOOPBACK_ALLOWED

# Fixture plugins for the whole suite, registered once here (not per module) so that pytest can
# rewrite their assertions whichever test imports them first.
pytest_plugins = [
    "tests.support.fake_llm",
    "tests.support.runtime",
    "tests.support.browser",
    "tests.support.asyncdb",
    "tests.support.live_wsgi",
    "tests.support.egress",
    "tests.support.kubernetes",
    "tests.support.gate",
    "tests.support.alert_apis",
    "tests.support.writebacks",
    "tests.support.packs",
    "tests.support.otlp",
]


@pytest.fixture(autouse=True)
def _default_language():
    """Each test starts in the default language: a test client's request leaves the language its
    middleware chose active in the thread, and the next test's gettext would speak it."""
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _local_device_allowed(settings) -> None:
    """Many tests use the Ongrid host as a device (the demo's ongrid-manager, the local transport);
    the operator's ONGRID_ALLOW_LOCAL_DEVICE is on for them. Tests of the refusal turn it off."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, allow_local_device=True)


@pytest.fixture(autouse=True)
def _no_automatic_investigations(settings) -> None:
    """Incidents created by unrelated tests do not start investigations in the background; the
    investigation tests turn it back on (tests/support/investigations.py)."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, auto_investigate=False)


@pytest.fixture(autouse=True)
def _egress_allows_loopback(settings) -> None:
    """The suite's fakes (the LLM, Prometheus, MCP and IM servers, webhook receivers) listen on
    loopback, which the egress policy refuses: the whole suite allows it, as platform staff would
    with ONGRID_EGRESS_ALLOW. The egress tests clear it (tests/support/egress.py)."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, egress_allow=AllowList.parse(LOOPBACK_ALLOWED))


@pytest.fixture
def org(db) -> Organization:
    return create_organization("Acme Corp", "acme")


@pytest.fixture
def other_org(db) -> Organization:
    return create_organization("Globex", "globex")


@pytest.fixture
def member(org):
    return create_user("alice", "alice-pass-123", org, roles.MEMBER)


@pytest.fixture
def auditor(org):
    return create_user("audrey", "audrey-pass-123", org, roles.AUDITOR)


@pytest.fixture
def org_admin(org):
    return create_user("oscar", "oscar-pass-123", org, roles.ORG_ADMIN)


@pytest.fixture
def outsider(other_org):
    return create_user("mallory", "mallory-pass-123", other_org, roles.MEMBER)


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    """Each test gets its own channel layer: the Redis layer's locks and pools belong to the event
    loop that first used them, and every async test runs on a new loop.

    A layer that was used is collected here, at a safe point: its Redis receive task outlives the
    test's closed loop, and if the garbage collector destroyed it later, inside Python 3.11's
    ast.parse (pytest rewriting a module), the traceback it prints would be parsed too and the run
    would end in "SystemError: AST constructor recursion depth mismatch"."""
    yield
    used = bool(channel_layers.backends)
    channel_layers.backends.clear()
    if used:
        gc.collect()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory) -> None:
    """SQLite test databases live in a file rather than in memory, so that a subprocess a test
    starts (a second Django process, a Celery worker) reads what the test committed."""
    from django.conf import settings

    for alias, database in settings.DATABASES.items():
        if database["ENGINE"] == "django.db.backends.sqlite3":
            folder = tmp_path_factory.mktemp("sqlite")
            database.setdefault("TEST", {})["NAME"] = str(folder / f"test_{alias}.sqlite3")


@pytest.fixture(autouse=True)
def fresh_api_throttles(monkeypatch):
    """API throttles count per test: a shared cache (Redis in CI) would carry one test's requests
    into the next test's budget, since user ids repeat from test to test."""
    import uuid

    from django.core.cache.backends.locmem import LocMemCache
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setattr(SimpleRateThrottle, "cache", LocMemCache(f"throttle-{uuid.uuid4().hex}", {}))


# A test (its set-up and teardown included) still running after this long also gets its event
# loop's tasks dumped, just before faulthandler dumps the threads (pyproject.toml: 240 s).
HANG_DUMP_SECONDS = 230.0


def pytest_configure(config) -> None:
    signal.signal(signal.SIGUSR1, dump_loop_tasks)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    with loop_tasks_dumped_after(HANG_DUMP_SECONDS):
        yield


# How long a test's background turns and investigations get to end before its teardown cancels them.
SETTLE_SECONDS = 30.0


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item) -> None:
    """Before any fixture is torn down (the database flushed or dropped): a test that started a
    turn or an investigation and did not wait for it would otherwise leave it writing into the next
    test's tables, or holding a row lock the flush waits on for ever (a hung CI run)."""
    if not settle_background(SETTLE_SECONDS, cancel=False):
        return
    still = running_work()
    cancelled = settle_background(0)
    message = f"{item.nodeid} left {cancelled} background task(s) running; cancelled:\n{still}"
    warnings.warn(message, stacklevel=1)


def pytest_sessionfinish(session) -> None:
    """Whatever the tests left for the garbage collector is destroyed now, before the terminal
    summary imports (and pytest rewrites) modules: see fresh_channel_layer."""
    gc.collect()
