"""The audit API: the same filters as the pages, full-text search, keyset pages, constant queries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from chat_app.models import ChatSession
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support import audit_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(auditor) -> APIClient:
    client = APIClient()
    client.force_authenticate(auditor)
    return client


@pytest.fixture
def estate(org, member, auditor):
    """A small, varied organization: each session is the only answer to one filter."""
    bob = create_user("bob", "bob-pass-12345", org, roles.MEMBER)
    old = datetime.now(UTC) - timedelta(days=10)
    disk = audit_rows.session(org, member, title="Disk full on web-01")
    audit_rows.message(disk, "user", "The partition /var is at 99 percent on web-01")
    audit_rows.message(disk, "assistant", "Rotated nginx logs take 38G; compress them.")
    disk_worker = audit_rows.session(org, member, parent=disk, agent_id="specialist-disk", title="Check /var")
    audit_rows.tool_call(disk_worker, "host_du_summary")
    audit_rows.gated_write(disk_worker, "w-approved", approve=True)
    latency = audit_rows.session(org, bob, title="Checkout latency", channel="slack", status="running")
    audit_rows.message(latency, "user", "p99 latency of the checkout service doubled since the deploy")
    investigation = audit_rows.session(
        org, bob, agent_id="incident-investigator", kind="investigation", status="failed", title="INC-7"
    )
    cpu_worker = audit_rows.session(org, bob, parent=latency, agent_id="specialist-compute", title="CPU")
    audit_rows.gated_write(cpu_worker, "w-rejected", approve=False)
    ChatSession.objects.filter(pk=investigation.pk).update(created_at=old)
    return {
        "disk": disk,
        "disk_worker": disk_worker,
        "latency": latency,
        "investigation": investigation,
        "cpu_worker": cpu_worker,
    }


def ids(response) -> set[int]:
    assert response.status_code == 200, response.content
    return {row["id"] for row in response.json()["results"]}


def sessions(api, **params):
    return api.get(reverse("api-audit-sessions"), params)


def test_each_filter_returns_exactly_the_right_sessions(api, estate, member):
    e = {name: row.pk for name, row in estate.items()}
    assert ids(sessions(api, user="bob", top="on")) == {e["latency"], e["investigation"]}
    assert ids(sessions(api, persona="specialist-disk")) == {e["disk_worker"]}
    assert ids(sessions(api, kind="investigation")) == {e["investigation"]}
    assert ids(sessions(api, status="running")) == {e["latency"]}
    assert ids(sessions(api, channel="slack")) == {e["latency"]}
    # a tool used by a worker counts for its coordinator too
    assert ids(sessions(api, tool="host_du_summary")) == {e["disk"], e["disk_worker"]}
    assert ids(sessions(api, rejected="true", top="on")) == {e["latency"]}
    since = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    assert e["investigation"] not in ids(sessions(api, since=since))
    assert ids(sessions(api, until=since)) == {e["investigation"]}


def test_search_covers_titles_and_message_contents(api, estate):
    e = {name: row.pk for name, row in estate.items()}
    assert ids(sessions(api, q="checkout latency", top="on")) == {e["latency"]}  # title
    assert ids(sessions(api, q="deploy doubled")) == {e["latency"]}  # words of one message, any order
    assert ids(sessions(api, q="nginx compress")) == {e["disk"]}
    assert ids(sessions(api, q="web-01 partition")) == {e["disk"]}
    assert ids(sessions(api, q="nginx payroll")) == set()  # every word must match
    assert ids(sessions(api, q='"; DROP TABLE chat_sessions; --')) == set()  # input is never syntax
    reviewer = ChatSession.objects.get(agent_id="reviewer", spawned_by_call="w-approved")
    assert ids(sessions(api, q="decision approve")) == {reviewer.pk}


def test_search_runs_on_the_database_word_index(estate):
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT count(*) FROM chat_messages_fts")
        else:
            cursor.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'chat_messages_fts_idx'")
        assert cursor.fetchone()[0] >= 1


def test_tree_endpoint_and_tool_calls_with_filters(api, estate):
    tree = api.get(reverse("api-audit-tree", args=[estate["cpu_worker"].pk])).json()
    assert tree["tree"]["id"] == estate["latency"].pk
    worker = tree["tree"]["children"][0]
    gated = next(entry for entry in worker["timeline"] if entry.get("tool") == "host_restart_service")
    assert gated["status"] == "rejected" and gated["reviews"][0]["persona"] == "reviewer"
    assert "blast radius too large" in gated["reviews"][0]["result"]

    calls = api.get(reverse("api-audit-calls"), {"status": "rejected"}).json()["results"]
    assert [c["tool_call_id"] for c in calls] == ["w-rejected"]
    calls = api.get(reverse("api-audit-calls"), {"session": estate["disk_worker"].pk}).json()["results"]
    assert {c["tool"] for c in calls} == {"host_du_summary", "host_restart_service"}
    detail = api.get(reverse("api-audit-call", args=[gated["id"]])).json()
    assert detail["arguments"] == '{"device": "web-01", "service": "nginx"}'
    assert detail["result_size"] == 15 and detail["reviews"][0]["status"] == "completed"


def test_keyset_pages_walk_every_session_once(api, org, member):
    made = {audit_rows.session(org, member, title=f"s{n}").pk for n in range(12)}
    seen: list[int] = []
    url, params = reverse("api-audit-sessions"), {"limit": 5}
    while url:
        body = api.get(url, params).json()
        seen += [row["id"] for row in body["results"]]
        url, params = body["next"], None
    assert sorted(seen) == sorted(made) and len(seen) == len(set(seen))


def test_bad_input_gets_a_clear_error(api, estate):
    response = sessions(api, status="exploded", since="yesterday-ish")
    assert response.status_code == 400
    assert set(response.json()) == {"error", "status", "since"}  # per-field errors plus the summary
    response = sessions(api, cursor="not-a-cursor")
    assert response.status_code == 400 and "not valid" in response.json()["cursor"][0]
    response = api.get(reverse("api-audit-calls"), {"session": "abc"})
    assert response.status_code == 400


@pytest.mark.parametrize("size", [10, 80])
def test_the_session_list_costs_a_fixed_number_of_queries(
    client, api, org, member, auditor, size, django_assert_max_num_queries
):
    for n in range(size):
        chat = audit_rows.session(org, member, title=f"chat {n}", usage={"prompt_tokens": 5})
        worker = audit_rows.session(org, member, parent=chat, agent_id="specialist-disk")
        audit_rows.tool_call(worker, "host_du_summary")
        audit_rows.llm_call(worker, endpoint=f"endpoint-{n % 3}")
        audit_rows.llm_call(chat)
    client.force_login(auditor)
    # session, user, role, membership, organization; the page; its call counts; its LLM usage
    # (per endpoint and model, one query); the offline banner's look for an organization endpoint
    with django_assert_max_num_queries(9):
        page = client.get(reverse("audit-sessions"), {"limit": 200, "tool": "host_du_summary"})
    assert page.content.count(b'class="session-row"') == 2 * size
    with django_assert_max_num_queries(5):
        body = api.get(reverse("api-audit-sessions"), {"limit": 200}).json()
    assert len(body["results"]) == 2 * size
    assert {row["endpoints"][0]["endpoint"] for row in body["results"]} == {
        "",
        "endpoint-0",
        "endpoint-1",
        "endpoint-2",
    }


@pytest.mark.parametrize("size", [3, 30])
def test_a_tree_costs_a_fixed_number_of_queries(
    client, org, member, auditor, size, django_assert_max_num_queries
):
    chat = audit_rows.session(org, member, title="big tree")
    for n in range(size):
        worker = audit_rows.session(org, member, parent=chat, agent_id="specialist-disk", title=f"w{n}")
        audit_rows.message(worker, "user", f"brief {n}")
        audit_rows.tool_call(chat, "AgentTool", tool_call_id=f"d{n}")
        audit_rows.tool_call(worker, "host_du_summary")
        audit_rows.gated_write(worker, f"w{n}")
        audit_rows.llm_call(worker, endpoint=f"endpoint-{n % 3}")
    client.force_login(auditor)
    # session, user, role, membership, organization, the root; sessions, calls, messages, LLM usage
    # (per session, endpoint and model: the totals per endpoint come from it); and the gate's
    # proposals once its model is installed; the offline banner's look for an organization endpoint;
    # the organization's device names (linked to their pages in the rendered text); the chat's
    # history summaries (docs/chat.md, "Long chats")
    with django_assert_max_num_queries(14):
        page = client.get(reverse("audit-session", args=[chat.pk]))
    assert page.content.count(b'<strong class="persona">reviewer</strong>') == size
    # the reviewers' calls on the deployment's endpoint, and the workers' on up to three others
    assert page.content.count(b'class="endpoint-usage"') == 1 + min(size, 3)


def test_model_prices_come_from_the_environment_and_bad_tables_stop_startup():
    from ongrid_site import config

    env = {"SECRET_KEY": "x", "ONGRID_MODEL_PRICES": '{"llama-3": {"input": 0, "output": 0.5}}'}
    assert config.load(env).model_prices == {"llama-3": {"input": 0.0, "output": 0.5}}
    assert "gpt-4o-mini" in config.load({"SECRET_KEY": "x"}).model_prices
    assert config.load({"SECRET_KEY": "x", "ONGRID_AUDIT_RETENTION_DAYS": "90"}).audit_retention_days == 90
    for bad in (
        '{"m": 3}',
        '{"m": {"input": -1, "output": 1}}',
        "[1]",
        "{not json",
        '{"m": {"input": true}}',
    ):
        with pytest.raises(config.ConfigError, match="ONGRID_MODEL_PRICES"):
            config.load({"SECRET_KEY": "x", "ONGRID_MODEL_PRICES": bad})
    with pytest.raises(config.ConfigError, match="ONGRID_AUDIT_RETENTION_DAYS"):
        config.load({"SECRET_KEY": "x", "ONGRID_AUDIT_RETENTION_DAYS": "-3"})


def test_cost_estimate_prices_families_and_names_unpriced_models(settings):
    import dataclasses

    from audit_app.costs import estimate_cost

    prices = {"gpt-4o": {"input": 2.5, "output": 10.0}, "gpt-4o-mini": {"input": 0.15, "output": 0.6}}
    settings.CONFIG = dataclasses.replace(settings.CONFIG, model_prices=prices, model="gpt-4o")
    used = {"prompt": 1_000_000, "completion": 100_000}
    assert estimate_cost({"gpt-4o-mini-2024-07-18": used}) == {"usd": 0.21, "unpriced": []}
    assert estimate_cost({"": used}) == {"usd": 3.5, "unpriced": []}  # the default model
    assert estimate_cost({"mystery": used}) == {"usd": None, "unpriced": ["mystery"]}
    assert estimate_cost({"mystery": used, "gpt-4o": used}) == {"usd": 3.5, "unpriced": ["mystery"]}
    assert estimate_cost({}) == {"usd": 0.0, "unpriced": []}
