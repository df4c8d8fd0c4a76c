"""The egress policy on every surface that sends a request for an organization (docs/security.md,
"Egress"), each through its real code path against a loopback listener that must see no
connection: the admin refuses the URL with a field error; a row that slipped in anyway (saved
through the ORM, by staff before the policy) is refused when its Test runs, when a tool calls
it, when an MCP server is discovered, when a webhook is delivered and when an IM API is called;
a Test never shows what the remote answered, even where platform staff allow the host."""

from __future__ import annotations

import json
import logging

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse
from django.utils import timezone

from agents_app.api import LLMError, OpenAIProvider
from agents_app.tools.binding import organization_tools
from agents_app.tools.invoke import invoke_tool
from agents_app.toolsets.contract import ToolContext
from fakes.openai_server import call, text, tool_calls
from im_app.models import IMApp
from im_app.platforms.http import PlatformError
from im_app.platforms.slack.client import SlackClient
from incidents_app import notify
from incidents_app.models import Investigation, InvestigationPolicy
from ops_app.core import outbound
from ops_app.core.egress import EgressRefused
from ops_app.integrations.datasources import save_data_source
from ops_app.integrations.mcp_servers import discover_tools
from ops_app.models import DataSource, Incident, LLMEndpoint, McpServer
from schedules_app import runner, scheduler
from schedules_app.models import Schedule, ScheduleRun
from tests.support.egress import INTERNAL_ANSWER, allow, loopback_listener
from tests.support.schedules import make_schedule

pytestmark = pytest.mark.django_db(transaction=True)
REFUSED = "refused by the egress policy: 127.0.0.1 is a loopback address"
FIELD_ERROR = "127.0.0.1 is a loopback address: the egress policy refuses it"
INLINE_FORMS = {"tools-TOTAL_FORMS": "0", "tools-INITIAL_FORMS": "0", "tools-MIN_NUM_FORMS": "0"}


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def field_errors(response) -> dict[str, list[str]]:
    return {
        name: [str(e) for e in errors] for name, errors in response.context["adminform"].form.errors.items()
    }


def action(client, model: str, name: str, row) -> list[str]:
    response = client.post(
        reverse(f"admin:{model}_changelist"), {"action": name, "_selected_action": [row.pk]}, follow=True
    )
    return messages_of(response)


# --- saving a URL in the admin ----------------------------------------------------------------------


def test_the_admin_refuses_each_integrations_url_and_metadata_headers_with_a_field_error(
    client, org_admin, org, egress_enforced, listener
):
    client.force_login(org_admin)
    data_source = {"name": "prod", "kind": "prometheus", "auth": "none", "verify_tls": "on", "timeout": "5"}
    metadata_header = {"auth": "headers", "custom_headers": "Metadata-Flavor: Google"}
    cases = [
        ("ops_app_datasource", {**data_source, "url": listener.url}, "url", FIELD_ERROR),
        ("ops_app_datasource", {**data_source, "url": "http://169.254.169.254/"}, "url", "cloud metadata"),
        ("ops_app_datasource", {**data_source, "url": "ftp://prom.example.com/"}, "url", "not ftp"),
        ("ops_app_datasource", {**data_source, "url": "http://8.8.8.8:9090/x?"}, "url", "no query"),
        (
            "ops_app_datasource",
            {**data_source, "url": "http://8.8.8.8:9090", **metadata_header},
            "custom_headers",
            "the header Metadata-Flavor is only for cloud metadata services",
        ),
        (
            "ops_app_llmendpoint",
            {"name": "vllm", "base_url": listener.url + "/v1", "default_model": "m", "timeout": "30",
             "max_retries": "1"},
            "base_url",
            FIELD_ERROR,
        ),
        (
            "ops_app_mcpserver",
            {"name": "grafana", "transport": "streamable_http", "url": f"http://localhost:{listener.port}/mcp",
             "timeout": "20", "enabled": "on", **INLINE_FORMS},
            "url",
            "localhost names this machine (loopback): the egress policy refuses it",
        ),
        (
            "ops_app_mcpserver",
            {"name": "grafana", "transport": "sse", "url": "https://8.8.8.8/sse", "timeout": "20",
             "headers": "X-aws-ec2-metadata-token: x", **INLINE_FORMS},
            "headers",
            "only for cloud metadata services",
        ),
        (
            "schedules_app_schedule",
            {"name": "disk", "kind": "inspection", "persona": "specialist-disk", "prompt": "Check.",
             "period": "weekly", "cron": "0 7 * * *", "timezone": "UTC", "webhook_url": "http://10.0.0.5/hook"},
            "webhook_url",
            "10.0.0.5 is a private address",
        ),
        (
            "im_app_imapp",
            {"name": "Ops bot", "platform": "slack", "connection_mode": "webhook", "webhook_path": "p-1",
             "api_base_url": f"http://[::1]:{listener.port}/api"},
            "api_base_url",
            "::1 is a loopback address",
        ),
        (
            "incidents_app_investigationpolicy",
            {"min_severity": "critical", "label_matchers": "{}", "services": "[]", "cooldown_minutes": "30",
             "max_concurrent": "3", "daily_max_investigations": "50", "daily_max_tokens": "2000000",
             "webhook_url": "http://127.0.0.1:9/hook"},
            "webhook_url",
            FIELD_ERROR,
        ),
    ]  # fmt: skip
    for model, form, field, expected in cases:
        # An IM app's add form is its platform's (issue 29): `?platform=` chooses it.
        query = f"?platform={form['platform']}" if model == "im_app_imapp" else ""
        response = client.post(reverse(f"admin:{model}_add") + query, form)
        assert response.status_code == 200, (model, form)  # the form again, not a redirect
        assert any(expected in error for error in field_errors(response).get(field, [])), (
            model,
            field_errors(response),
        )
    assert not DataSource.objects.exists() and not McpServer.objects.exists() and not IMApp.objects.exists()
    assert not LLMEndpoint.objects.exists() and not Schedule.objects.exists()
    assert listener.connections == 0  # saving an MCP server did not connect to it either


def test_a_name_that_resolves_to_a_private_address_is_refused_when_saved(client, org_admin, fake_dns):
    fake_dns["prometheus.corp.example"] = ["10.20.30.40"]
    client.force_login(org_admin)
    form = {"name": "prod", "kind": "prometheus", "auth": "none", "timeout": "5"}
    response = client.post(
        reverse("admin:ops_app_datasource_add"), {**form, "url": "http://prometheus.corp.example:9090"}
    )
    assert "prometheus.corp.example (10.20.30.40) is a private address" in field_errors(response)["url"][0]


# --- the admin's Test actions ---------------------------------------------------------------------


def test_data_source_test_of_a_row_that_slipped_in_is_refused_and_shows_no_answer(
    client, org_admin, org, egress_enforced, listener
):
    source = save_data_source(
        DataSource(organization=org, kind="prometheus", name="prom", url=listener.url + "?")
    )
    client.force_login(org_admin)
    shown = action(client, "ops_app_datasource", "test_connection", source)
    assert shown == [f"prom (Prometheus) FAILED: {listener.url}: {REFUSED}"]
    assert listener.connections == 0


def test_a_dns_answer_that_changes_after_saving_is_refused_by_the_test(
    client, org_admin, org, egress_enforced, listener, fake_dns
):
    fake_dns["prom.example"] = ["93.184.216.34"]
    client.force_login(org_admin)
    form = {"name": "prom", "kind": "prometheus", "auth": "none", "timeout": "5"}
    url = f"http://prom.example:{listener.port}"
    assert client.post(reverse("admin:ops_app_datasource_add"), {**form, "url": url}).status_code == 302
    fake_dns["prom.example"] = ["127.0.0.1"]
    shown = action(client, "ops_app_datasource", "test_connection", DataSource.objects.get())[-1:]
    refused = "refused by the egress policy: prom.example (127.0.0.1) is a loopback address"
    assert shown == [f"prom (Prometheus) FAILED: {url}: {refused}"]
    assert listener.connections == 0


def test_where_staff_allow_the_host_the_test_reaches_it_and_still_shows_no_answer(
    client, org_admin, org, settings, listener
):
    allow(settings, f"127.0.0.1:{listener.port}")
    source = save_data_source(DataSource(organization=org, kind="prometheus", name="prom", url=listener.url))
    client.force_login(org_admin)
    shown = action(client, "ops_app_datasource", "test_connection", source)
    assert shown == [
        "prom (Prometheus) FAILED: GET /-/ready: HTTP 200 | GET /api/v1/status/buildinfo: HTTP 200, "
        "but not the Prometheus API"
    ]
    assert listener.connections >= 1 and listener.paths == ["/-/ready", "/api/v1/status/buildinfo"]


def test_llm_endpoint_test_is_refused_or_says_why_without_the_answer(
    client, org_admin, org, settings, listener
):
    endpoint = LLMEndpoint.objects.create(
        organization=org, name="vllm", base_url=listener.url + "/v1", default_model="m"
    )
    client.force_login(org_admin)
    allow(settings)
    assert action(client, "ops_app_llmendpoint", "test_endpoint", endpoint) == [f"vllm FAILED: {REFUSED}"]
    assert listener.connections == 0
    allow(settings, f"127.0.0.1:{listener.port}")
    shown = action(client, "ops_app_llmendpoint", "test_endpoint", endpoint)
    assert shown == ["vllm FAILED: the answer is not an OpenAI-compatible list of models"], shown
    assert listener.connections == 1


def test_im_test_connection_and_api_calls_are_refused(client, org_admin, org, egress_enforced, listener):
    app = IMApp.objects.create(
        organization=org,
        platform="slack",
        name="Ops bot",
        api_base_url=listener.url + "/api",
        bot_token="xoxb-1",
    )
    client.force_login(org_admin)
    assert action(client, "im_app_imapp", "check_connection", app) == [
        f"Ops bot: failed: auth.test: {REFUSED}"
    ]
    with pytest.raises(PlatformError, match=f"chat.postMessage: {REFUSED}"):
        async_to_sync(SlackClient(app).post_message)("C1", "hello", thread_ts=None)
    with pytest.raises(EgressRefused, match="loopback"):  # the Socket Mode URL a base would answer
        async_to_sync(outbound.websocket_address)(f"ws://127.0.0.1:{listener.port}/link")
    assert listener.connections == 0 and IMApp.objects.get().bot_identity == ""


def test_im_test_connection_to_an_allowed_host_shows_no_answer(client, org_admin, org, settings, listener):
    allow(settings, f"127.0.0.1:{listener.port}")
    app = IMApp.objects.create(
        organization=org, platform="slack", name="Ops bot", api_base_url=listener.url, bot_token="x"
    )
    client.force_login(org_admin)
    assert action(client, "im_app_imapp", "check_connection", app) == ["Ops bot: failed: auth.test: HTTP 200"]
    assert listener.connections == 1


def test_im_test_connection_shows_an_identity_as_plain_words_only(client, org_admin, org, settings):
    answer = {"ok": True, "user": "<img src=x onerror=alert(1)>", "bot_id": "B1", "team": '{"secret": 1}'}
    with loopback_listener(body=json.dumps(answer)) as slack:
        allow(settings, f"127.0.0.1:{slack.port}")
        app = IMApp.objects.create(
            organization=org, platform="slack", name="Ops bot", api_base_url=slack.url, bot_token="x"
        )
        client.force_login(org_admin)
        shown = action(client, "im_app_imapp", "check_connection", app)
    assert shown == ["Ops bot: connected as ?img src?x onerror?alert(1)? (bot B1) in ??secret?: 1?"], shown


@pytest.mark.parametrize("transport", ["streamable_http", "sse"])
def test_mcp_discovery_is_refused_and_stored_without_the_answer(org, settings, listener, transport):
    server = McpServer.objects.create(
        organization=org, name="grafana", transport=transport, url=listener.url + "/mcp"
    )
    allow(settings)
    found = discover_tools(server)
    assert not found.ok and REFUSED in found.error
    server.refresh_from_db()
    assert REFUSED in server.discovery_error and listener.connections == 0
    allow(settings, f"127.0.0.1:{listener.port}")  # allowed, but not an MCP server
    found = discover_tools(server)
    assert not found.ok and listener.connections >= 1 and INTERNAL_ANSWER not in found.error


@pytest.mark.parametrize("transport", ["streamable_http", "sse"])
def test_mcp_connect_to_a_name_that_resolves_to_loopback_is_refused_by_the_sdks_client(
    org, egress_enforced, listener, fake_dns, transport
):
    fake_dns["mcp.internal.example"] = ["127.0.0.1"]
    url = f"http://mcp.internal.example:{listener.port}/mcp"
    server = McpServer.objects.create(organization=org, name="grafana", transport=transport, url=url)
    found = discover_tools(server)
    assert not found.ok and "mcp.internal.example (127.0.0.1) is a loopback address" in found.error, (
        found.error
    )
    assert listener.connections == 0


# --- calls at run time ----------------------------------------------------------------------------


def test_a_telemetry_tool_call_to_a_refused_address_is_a_tool_error(org, egress_enforced, listener):
    save_data_source(DataSource(organization=org, kind="prometheus", name="prom", url=listener.url))
    tool = async_to_sync(organization_tools)(org.pk)["query_promql"]
    outcome = async_to_sync(invoke_tool)(tool, ToolContext(organization_id=org.pk), '{"query": "up"}')
    assert outcome.status == "error"
    assert f"Prometheus at {listener.url} is {REFUSED}" in outcome.content
    assert listener.connections == 0


def test_an_mcp_tool_call_to_a_refused_address_is_a_tool_error(org, settings, listener):
    server = McpServer.objects.create(organization=org, name="grafana", url=listener.url + "/mcp")
    server.tools.create(organization=org, name="search", input_schema={"type": "object"}, tool_class="read")
    allow(settings)
    tool = async_to_sync(organization_tools)(org.pk)["mcp__grafana__search"]
    outcome = async_to_sync(invoke_tool)(tool, ToolContext(organization_id=org.pk), "{}")
    assert outcome.status == "error" and REFUSED in outcome.content
    assert listener.connections == 0


def test_an_llm_endpoint_at_a_refused_address_fails_the_call_at_once(egress_enforced, listener):
    provider = OpenAIProvider(api_key="k", base_url=listener.url + "/v1", max_retries=3, backoff_base=30)

    async def ask():
        async for _event in provider.stream_chat([{"role": "user", "content": "hi"}], []):
            pass

    with pytest.raises(LLMError, match=f"is {REFUSED}") as failed:
        async_to_sync(ask)()
    assert not failed.value.retryable and listener.connections == 0


def test_a_schedules_webhook_delivery_is_refused_and_the_run_says_so(
    org, agents_llm, egress_enforced, listener
):
    schedule = make_schedule(org, webhook_url=listener.url + "/hook")
    agents_llm.add(
        "specialist-disk",
        tool_calls(call("submit_finding", {"status": "ok", "summary": "Disks fine.", "findings": []})),
        text("Reported."),
    )
    run = scheduler.create_manual_run(schedule)
    runner.execute_run(run.pk)
    run = ScheduleRun.objects.get(pk=run.pk)
    assert run.deliveries["webhook"] == f"failed: webhook {REFUSED}"
    assert listener.connections == 0


def test_the_investigation_webhook_is_refused_and_logged(org, egress_enforced, listener, caplog):
    InvestigationPolicy.objects.create(organization=org, webhook_url=listener.url + "/hook")
    incident = Incident.objects.create(
        organization=org, title="5xx", severity="critical", started_at=timezone.now()
    )
    investigation = Investigation.objects.create(organization=org, incident=incident, trigger="manual")
    with caplog.at_level(logging.WARNING, logger="incidents_app.notify"):
        notify.post_webhook(sender=Investigation, investigation=investigation)
    assert f"investigation {investigation.pk}: webhook {REFUSED}" in caplog.text
    assert listener.connections == 0
