"""Per-organization data sources (docs/integrations.md): two organizations, two real Prometheus
instances and two real Alertmanagers; each organization's tools reach only its own."""

from __future__ import annotations

import dataclasses

import httpx
import pytest
from asgiref.sync import sync_to_async

from agents_app.runtime.core import Runtime
from agents_app.tools.binding import organization_tools
from agents_app.toolsets.contract import ToolError
from chat_app import services
from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls
from ops_app.integrations.datasources import save_data_source
from ops_app.models import DataSource
from tests.support.alertmanager import running_alertmanager
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.prometheus import running_self_scraping_prometheus
from tests.support.tools import run_tool

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


@pytest.fixture(scope="module")
def two_prometheus(tmp_path_factory):
    with (
        running_self_scraping_prometheus("acme-prom", "acme", tmp_path_factory.mktemp("pa")) as acme,
        running_self_scraping_prometheus("globex-prom", "globex", tmp_path_factory.mktemp("pb")) as globex,
    ):
        yield acme, globex


@pytest.fixture(scope="module")
def two_alertmanagers(tmp_path_factory):
    with (
        running_alertmanager("http://127.0.0.1:9/unused", tmp_path_factory.mktemp("aa")) as acme,
        running_alertmanager("http://127.0.0.1:9/unused", tmp_path_factory.mktemp("ab")) as globex,
    ):
        yield acme, globex


@pytest.fixture(autouse=True)
def no_environment_fallback(settings):
    settings.CONFIG = dataclasses.replace(
        settings.CONFIG, prometheus_url=None, alertmanager_url=None, loki_url=None, tempo_url=None
    )


def add_source(org, kind: str, name: str, url: str, **extra) -> DataSource:
    return save_data_source(DataSource(organization=org, kind=kind, name=name, url=url, **extra))


def jobs(result: dict) -> set[str]:
    return {series["labels"]["job"] for series in result["series"]}


def test_each_organization_queries_only_its_own_prometheus(org, other_org, two_prometheus):
    acme_url, globex_url = two_prometheus
    add_source(org, "prometheus", "acme-main", acme_url)
    add_source(other_org, "prometheus", "globex-main", globex_url)

    assert jobs(run_tool("query_promql", org, query="up")) == {"acme-prom"}
    assert jobs(run_tool("query_promql", other_org, query="up")) == {"globex-prom"}
    # Naming another organization's data source finds nothing: it does not exist for this one.
    with pytest.raises(ToolError, match=r"no Prometheus data source named 'acme-main'.*globex-main"):
        run_tool("query_promql", other_org, query="up", datasource="acme-main")


def test_a_named_data_source_is_used_and_the_default_otherwise(org, two_prometheus):
    acme_url, globex_url = two_prometheus
    add_source(org, "prometheus", "eu", acme_url)
    add_source(org, "prometheus", "us", globex_url)  # the first one stays the default

    assert jobs(run_tool("query_promql", org, query="up")) == {"acme-prom"}
    assert jobs(run_tool("query_promql", org, query="up", datasource="us")) == {"globex-prom"}
    assert run_tool("query_promql", org, query="up", datasource="us")["datasource"] == "us"

    add_source(org, "prometheus", "ap", globex_url, is_default=True)  # a new default replaces the old
    assert DataSource.objects.get(organization=org, is_default=True, kind="prometheus").name == "ap"
    assert jobs(run_tool("query_promql", org, query="up")) == {"globex-prom"}


def test_an_organization_without_a_data_source_is_told_so(org):
    result = run_tool("query_promql", org, query="up")
    assert result["status"] == "not_configured" and "no Prometheus data source" in result["message"]


def test_silence_lands_in_the_organizations_own_alertmanager(org, other_org, two_alertmanagers):
    acme, globex = two_alertmanagers
    add_source(org, "alertmanager", "acme-am", acme.url)
    add_source(other_org, "alertmanager", "globex-am", globex.url)
    matchers = [{"name": "instance", "value": "web-01:9100"}]

    made = run_tool(
        "create_silence", org, matchers=matchers, duration_minutes=10, reason="maintenance window MW-9"
    )

    assert made["datasource"] == "acme-am"
    acme_ids = {s["id"] for s in httpx.get(f"{acme.url}/api/v2/silences", timeout=5).json()}
    globex_ids = {s["id"] for s in httpx.get(f"{globex.url}/api/v2/silences", timeout=5).json()}
    assert made["silence_id"] in acme_ids and made["silence_id"] not in globex_ids


async def test_tool_descriptions_list_only_the_organizations_data_sources(org, other_org):
    await sync_to_async(add_source)(org, "prometheus", "acme-eu", "http://127.0.0.1:9")
    await sync_to_async(add_source)(org, "prometheus", "acme-us", "http://127.0.0.1:9")
    await sync_to_async(add_source)(other_org, "prometheus", "globex-only", "http://127.0.0.1:9")

    acme = (await organization_tools(org.pk))["query_promql"].description
    globex = (await organization_tools(other_org.pk))["query_promql"].description

    assert "acme-eu (default), acme-us" in acme and "globex-only" not in acme
    assert "globex-only (default)" in globex and "acme" not in globex


async def test_a_turn_queries_the_sessions_organization_prometheus(
    org,
    other_org,
    member,
    outsider,
    agents_llm,
    two_prometheus,
    close_async_db_connections,  # noqa: F811
):
    acme_url, globex_url = two_prometheus
    await sync_to_async(add_source)(org, "prometheus", "acme-main", acme_url)
    await sync_to_async(add_source)(other_org, "prometheus", "globex-main", globex_url)
    answers = {}

    def answer(request):
        answers[len(answers)] = tool_messages(request)[0]["content"]
        return text("done")

    for _ in range(2):
        agents_llm.add("default", tool_calls(call("query_promql", {"query": "up"})), answer)

    for user in (member, outsider):
        chat = await sync_to_async(services.start_chat)(user)
        await sync_to_async(services.begin_turn)(chat.pk, "Which jobs are up?")
        result = await Runtime().run_turn(chat.pk)
        assert result.status == "completed"

    assert "acme-prom" in answers[0] and "globex-prom" not in answers[0]
    assert "globex-prom" in answers[1] and "acme-prom" not in answers[1]
    described = [
        tool
        for request in agents_llm.seen["default"]
        for tool in request.body["tools"]
        if tool["function"]["name"] == "query_promql"  # sent once the coordinator has called it
    ]
    assert "acme-main" in described[0]["function"]["description"]
    assert "globex-main" in described[-1]["function"]["description"]
