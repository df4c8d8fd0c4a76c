"""The offline model: deterministic routing, tool use and summaries with no network.

Built-in personas arrive with the registry work; these tests build their own personas and catalog
in the registry's exact format.
"""

from __future__ import annotations

import json

import pytest

from agents_app.kernel.events import ListSink
from agents_app.kernel.loop import run_agent
from agents_app.kernel.prompt import compose_system_prompt
from agents_app.llm.offline import LABEL, OfflineProvider, best_specialist, parse_catalog
from agents_app.tools.cancel import CancelToken
from agents_app.toolsets.contract import ToolContext
from audit_app.models import AuditLog
from tests.support.agents import context, make_tool, persona
from tests.support.catalog import catalog_of

SPECIALISTS = [
    persona(
        "specialist-compute",
        description="CPU, memory and load on hosts",
        when_to_use="High load, OOM kills, runaway processes",
    ),
    persona(
        "specialist-disk",
        description="Disk space, inodes and I/O on hosts",
        when_to_use="A filesystem is full or filling up; slow disks",
    ),
    persona(
        "specialist-network",
        description="Connectivity, DNS and TLS between services",
        when_to_use="Timeouts, refused connections, name resolution failures",
    ),
    persona(
        "incident-investigator",
        description="Root cause of an incident down to patient zero",
        when_to_use="An incident is open and its cause is unknown",
    ),
]
CATALOG = catalog_of(SPECIALISTS)
COORDINATOR = persona("default", body="You are the coordinator.")


def test_catalog_is_parsed_from_the_system_prompt():
    entries = parse_catalog(compose_system_prompt("", COORDINATOR, [], CATALOG))
    assert [e.name for e in entries] == [p.name for p in SPECIALISTS]
    assert entries[1].when_to_use == "A filesystem is full or filling up; slow disks"


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("disk is full on web-01", "specialist-disk"),
        ("web-01 has very high load and OOM kills", "specialist-compute"),
        ("api-03 gets timeouts and DNS name resolution failures", "specialist-network"),
        ("incident 42 is open, find the root cause", "incident-investigator"),
    ],
)
def test_routes_the_users_words_to_the_best_specialist(request_text, expected):
    assert best_specialist(request_text, parse_catalog(CATALOG)).name == expected


def test_ties_go_to_the_first_name_alphabetically():
    twins = parse_catalog(
        catalog_of([persona("zz-storage", description="disk"), persona("aa-storage", description="disk")])
    )
    assert best_specialist("disk", twins).name == "aa-storage"
    assert best_specialist("quantum entanglement", twins) is None


@pytest.mark.django_db(transaction=True)
async def test_coordinator_dispatches_disk_specialist_and_relays_its_answer(org):
    dispatched = []

    async def agent_tool(ctx: ToolContext, description: str, subagent_type: str, prompt: str) -> str:
        dispatched.append({"description": description, "subagent_type": subagent_type, "prompt": prompt})
        return "/var/log is 97% full: 41 GB of rotated nginx logs under /var/log/nginx."

    schema = {
        "type": "object",
        "properties": {k: {"type": "string"} for k in ("description", "subagent_type", "prompt")},
        "required": ["description", "subagent_type", "prompt"],
    }
    tools = [make_tool("AgentTool", agent_tool, params=schema), make_tool("query_incidents", _never)]
    sink = ListSink()
    result = await run_agent(
        persona=COORDINATOR,
        messages=[{"role": "user", "content": "disk is full on web-01"}],
        tools=tools,
        ctx=context(org),
        provider=OfflineProvider(),
        sink=sink,
        cancel=CancelToken(),
        catalog=CATALOG,
    )
    assert result.status == "completed"
    assert len(dispatched) == 1
    assert dispatched[0]["subagent_type"] == "specialist-disk"
    assert '"disk is full on web-01"' in dispatched[0]["prompt"] and "web-01" in dispatched[0]["description"]
    assert "41 GB of rotated nginx logs" in result.text and LABEL in result.text
    row = await AuditLog.objects.aget(tool="AgentTool")
    assert json.loads(row.arguments)["subagent_type"] == "specialist-disk"


async def _never(ctx, **arguments):
    raise AssertionError("the offline model called a tool that does not fit")


@pytest.mark.django_db(transaction=True)
async def test_worker_calls_fitting_read_tools_and_summarises_their_real_output(org):
    seen = []

    async def du(ctx, device: str, path: str = "/") -> str:
        seen.append((device, path))
        return f"Filesystem usage on {device}:\n/var/log  97%  41G\n/home  12%  3G"

    du_params = {
        "type": "object",
        "properties": {"device": {"type": "string"}, "path": {"type": "string", "default": "/"}},
        "required": ["device", "path"],
    }
    restart_params = {"type": "object", "properties": {"device": {"type": "string"}}, "required": ["device"]}
    tools = [
        make_tool(
            "host_du_summary", du, params=du_params, description="Disk usage summary under a path on a host"
        ),
        make_tool("host_restart_service", _never, params=restart_params, tool_class="write"),
        make_tool("query_knowledge", _never),
    ]
    worker = persona("specialist-disk", description="Disk space", when_to_use="disk full")
    result = await run_agent(
        persona=worker,
        messages=[{"role": "user", "content": "The disk is full on web-01"}],
        tools=tools,
        ctx=context(org),
        provider=OfflineProvider(),
        sink=ListSink(),
        cancel=CancelToken(),
    )
    assert result.status == "completed"
    assert seen == [("web-01", "/")]
    assert "/var/log  97%  41G" in result.text and "`host_du_summary`" in result.text
    assert LABEL in result.text


@pytest.mark.django_db(transaction=True)
async def test_coordinator_without_agent_tool_behaves_like_a_worker(org):
    async def incidents(ctx, query: str) -> list:
        return [{"id": 7, "title": "Checkout latency", "status": "open"}]

    params = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    result = await run_agent(
        persona=COORDINATOR,
        messages=[{"role": "user", "content": "list open incidents"}],
        tools=[make_tool("query_incidents", incidents, params=params)],
        ctx=context(org),
        provider=OfflineProvider(),
        sink=ListSink(),
        cancel=CancelToken(),
        catalog=CATALOG,
    )
    assert "Checkout latency" in result.text and LABEL in result.text


async def test_without_tools_it_answers_plainly_and_says_so():
    provider = OfflineProvider()
    events = [e async for e in provider.stream_chat([{"role": "user", "content": "what is SLO burn?"}], [])]
    completion = events[-1]
    assert not completion.tool_calls
    assert "what is SLO burn?" in completion.text and LABEL in completion.text
    assert "".join(e.text for e in events[:-1]) == completion.text


async def test_same_input_same_output():
    provider = OfflineProvider()
    messages = [{"role": "system", "content": CATALOG}, {"role": "user", "content": "disk is full on web-01"}]
    agent_tool = {"type": "function", "function": {"name": "AgentTool", "parameters": {}}}
    first = [e async for e in provider.stream_chat(messages, [agent_tool])][-1]
    second = [e async for e in provider.stream_chat(messages, [agent_tool])][-1]
    assert first == second and first.tool_calls[0].name == "AgentTool"


def test_builtin_personas_route_the_demo_questions():
    """On the shipped personas, the offline coordinator picks the specialist a person would."""
    from agents_app.llm.offline import best_specialist, parse_catalog
    from agents_app.personas.catalog import agent_catalog
    from agents_app.personas.registry import file_registry

    catalog = parse_catalog(agent_catalog(file_registry().all()))
    expected = {
        "disk is full on web-01": "specialist-disk",
        "why is checkout failing?": "incident-investigator",
        "what is the load on web-01?": "specialist-compute",
        "is the TLS certificate of shop.example.com about to expire? probe https": "specialist-network",
        "why are the payments pods restarting?": "specialist-k8s",
        "restart nginx on web-01 now": "specialist-ops",  # a device's service, not a rollout
    }
    assert {q: best_specialist(q, catalog).name for q in expected} == expected


def test_tool_results_are_summarised_as_readable_bullets():
    from agents_app.llm.offline import describe

    content = json.dumps(
        {
            "incident": {"id": 1, "title": "Checkout returns 502", "severity": "critical"},
            "alerts": [{"name": f"Alert{i}", "severity": "high"} for i in range(5)],
            "total": 5,
        }
    )
    assert describe(content) == [
        "- incident: Checkout returns 502 (critical)",
        "- alerts: Alert0 (high); Alert1 (high); Alert2 (high) (+2 more)",
        "- total: 5",
    ]
    assert describe("plain\n\ntext output") == ["- plain", "- text output"]


def test_a_domain_symptom_outranks_a_generic_one_in_routing():
    """A "certificate error" is a TLS question for the network specialist, not an incident to
    investigate; a failure with no domain word still goes to the investigator."""
    from agents_app.personas.catalog import agent_catalog
    from agents_app.personas.registry import file_registry

    catalog = parse_catalog(agent_catalog(file_registry().all()))
    expected = {
        "Browsers show a certificate error for https://shop.example.com. Check lb-01.": "specialist-network",
        "app-01 fails with 'temporary failure in name resolution'": "specialist-network",
        "Writes fail on mx-01 with 'No space left on device'": "specialist-disk",
        "El disco de db-03 está lleno. ¿Qué lo está llenando?": "specialist-disk",
        "Checkout returns 502 for 9% of requests. Why?": "incident-investigator",
    }
    assert {q: best_specialist(q, catalog).name for q in expected} == expected


INVENTORY_TOOLS = [
    {"type": "function", "function": {"name": name, "description": "", "parameters": {}}}
    for name in ("AgentTool", "query_incidents", "get_active_incidents", "query_devices", "query_alert_rules")
]


@pytest.mark.parametrize(
    ("question", "tool", "arguments"),
    [
        ("Which incidents are open right now?", "get_active_incidents", {}),
        ("List all incidents", "query_incidents", {}),
        ("What role does node-07 have and what is its address?", "query_devices", {"name": "node-07"}),
        ("¿Cuáles incidentes están abiertos?", "get_active_incidents", {}),
    ],
)
def test_lookup_questions_are_answered_directly_without_dispatch(question, tool, arguments):
    messages = [{"role": "system", "content": CATALOG}, {"role": "user", "content": question}]
    from agents_app.llm.offline import respond

    completion = respond(messages, INVENTORY_TOOLS)
    assert [(c.name, json.loads(c.arguments_raw)) for c in completion.tool_calls] == [(tool, arguments)]


@pytest.mark.parametrize(
    "question",
    ["Why are incidents piling up?", "Which host has a full disk?", "incident 42 is open, find its cause"],
)
def test_symptoms_and_why_questions_are_still_dispatched(question):
    from agents_app.llm.offline import respond

    messages = [{"role": "system", "content": CATALOG}, {"role": "user", "content": question}]
    assert [c.name for c in respond(messages, INVENTORY_TOOLS).tool_calls] == ["AgentTool"]


def test_a_single_record_is_summarised_with_its_fields_and_readings_say_where_they_ran():
    from agents_app.llm.offline import describe, summarise

    device = {"id": 7, "name": "node-07", "address": "192.0.2.77", "labels": {"role": "kafka-broker"}}
    assert describe(json.dumps({"total": 1, "devices": [device]})) == [
        "- total: 1",
        "- devices: node-07 (address 192.0.2.77; labels role=kafka-broker)",
    ]
    text = summarise([("host_probe_http", '{"ok": false}')], targets=["lb-01"])
    assert "**`host_probe_http`** — lb-01" in text
