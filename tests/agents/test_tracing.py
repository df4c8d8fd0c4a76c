"""OpenTelemetry traces of a turn (docs/observability.md): a real dispatch turn on the fake LLM
through the real SDK, exported by the real OTLP/HTTP exporter to a local receiver that decodes the
protobuf, so what is asserted is what a tracing back end would store."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from agents_app.personas.registry import aget_registry
from agents_app.runtime.core import Runtime
from agents_app.runtime.executors import _queue_turn
from audit_app.models import AuditLog, LLMCall
from chat_app import services
from chat_app.models import ChatSession
from chat_app.services import process_identity
from fakes.openai_server import call, text, tool_calls
from ongrid_site.config import ConfigError, load
from ops_app.core import tracing
from ops_app.models import Incident
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.celery_worker import celery_worker_process
from tests.support.gate import (
    DUAL,
    ack_arguments,
    gated_call,
    make_chat,
    make_incident,
    make_user_agent,
    make_worker,
)
from tests.support.otlp import start_tracing

pytestmark = [
    pytest.mark.usefixtures("fresh_gate_caches", "tracing_off_after"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections"),
]

APPROVE = "Decision: approve\nSOP: pass\nConcurrent work: pass\nRollback: pass"
QUESTION = "Acknowledge the payments incident; the db password is hunter2-PLAINTEXT"
SECRET_KEY_TEXT = "sk-ongridtestsecretkey0123456789"
BRIEF_PROMPT = "Ack the incident, use key sk-ongridtestsecretkey0123456789 if asked."
FINAL = "Acknowledged after review."


async def dispatch_turn_with_a_gated_write(org, member, agents_llm):
    """The coordinator dispatches specialist-ops, whose acknowledge_incident the reviewer approves."""
    chat = await sync_to_async(make_chat)(member, QUESTION)
    incident = await sync_to_async(make_incident)(org)
    brief = {"description": "Ack payments", "subagent_type": "specialist-ops", "prompt": BRIEF_PROMPT}
    agents_llm.add("default", tool_calls(call("AgentTool", brief, id="dispatch-ops")), text(FINAL))
    agents_llm.add(
        "specialist-ops",
        tool_calls(call("acknowledge_incident", ack_arguments(incident), id="ops-ack")),
        text("Done: acknowledged."),
    )
    agents_llm.add("reviewer", text(APPROVE))
    await Runtime().run_turn(chat.pk)
    assert (await Incident.objects.aget(pk=incident.pk)).status == "acknowledged"
    assert tracing.force_flush()
    return chat


async def test_a_dispatch_turn_is_one_trace_coordinator_worker_gate_reviewer(
    org, member, agents_llm, otlp_receiver, settings
):
    start_tracing(settings, otlp_receiver)
    chat = await dispatch_turn_with_a_gated_write(org, member, agents_llm)
    spans = otlp_receiver

    turn = spans.one("ongrid.turn")
    assert turn.parent_id == ""  # started by a test, not a request: the root
    assert turn.attributes["ongrid.session.id"] == chat.pk
    assert turn.attributes["ongrid.organization.id"] == org.pk
    assert turn.attributes["ongrid.organization.slug"] == org.slug
    assert turn.attributes["gen_ai.conversation.id"] == str(chat.pk)
    assert turn.attributes["ongrid.turn.status"] == "completed"
    assert turn.resource["service.name"] == "ongrid"
    assert {span.trace_id for span in spans.spans} == {turn.trace_id}

    dispatch = spans.one("execute_tool AgentTool")
    worker = spans.one("invoke_agent specialist-ops")
    write = spans.one("execute_tool acknowledge_incident")
    review = spans.one("ongrid.review")
    reviewer = spans.one("invoke_agent reviewer")
    assert spans.parent_of(dispatch) is turn
    assert spans.parent_of(worker) is dispatch
    assert spans.parent_of(write) is worker
    assert spans.parent_of(review) is write
    assert spans.parent_of(reviewer) is review
    # Each agent's model calls hang under that agent: 2 coordinator, 2 worker, 1 reviewer.
    model_calls = spans.named("chat fake-model")
    by_parent = {
        agent.name: len([c for c in model_calls if c.parent_id == agent.span_id])
        for agent in (turn, worker, reviewer)
    }
    assert by_parent == {"ongrid.turn": 2, "invoke_agent specialist-ops": 2, "invoke_agent reviewer": 1}

    ops = await ChatSession.objects.aget(agent_id="specialist-ops", parent_session=chat)
    assert worker.attributes["ongrid.session.id"] == ops.pk
    assert worker.attributes["ongrid.parent_session.id"] == chat.pk
    assert worker.attributes["ongrid.agent.status"] == "completed"
    assert write.attributes["ongrid.tool.class"] == "write"
    assert write.attributes["ongrid.tool.status"] == "ok"
    assert write.attributes["gen_ai.tool.call.id"] == "ops-ack"
    assert write.attributes["gen_ai.agent.name"] == "specialist-ops"
    assert dispatch.attributes["ongrid.tool.class"] == "read"  # AgentTool itself changes nothing
    assert review.attributes["ongrid.review.decision"] == "approve"
    assert review.attributes["gen_ai.tool.name"] == "acknowledge_incident"

    # The audit rows carry the trace id, so the audit pages can link to this trace.
    audited = await AuditLog.objects.aget(tool_call_id="ops-ack")
    assert audited.trace_id == turn.trace_id
    assert {row.trace_id async for row in LLMCall.objects.filter(session__root_session=chat)} == {
        turn.trace_id
    }


async def test_model_call_spans_carry_the_genai_attributes(org, member, agents_llm, otlp_receiver, settings):
    start_tracing(settings, otlp_receiver)
    await dispatch_turn_with_a_gated_write(org, member, agents_llm)
    turn = otlp_receiver.one("ongrid.turn")
    first, last = [c for c in otlp_receiver.named("chat fake-model") if c.parent_id == turn.span_id]

    assert first.kind == 3  # SPAN_KIND_CLIENT
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.provider.name"] == "openai"
    assert first.attributes["gen_ai.request.model"] == "fake-model"
    assert first.attributes["gen_ai.response.model"] == "fake-model"
    assert first.attributes["gen_ai.usage.input_tokens"] == 11  # what the fake server reported
    assert first.attributes["gen_ai.usage.output_tokens"] == 7
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert first.attributes["ongrid.llm.tool_calls"] == ["AgentTool"]
    assert last.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert last.attributes["ongrid.llm.time_to_first_token_ms"] <= last.attributes["ongrid.llm.latency_ms"]
    assert first.duration_ns > 0


async def test_no_message_text_or_secret_leaves_by_default(org, member, agents_llm, otlp_receiver, settings):
    start_tracing(settings, otlp_receiver)
    incident_reason = ack_arguments(Incident(pk=1))["reason"]
    await dispatch_turn_with_a_gated_write(org, member, agents_llm)

    exported = b"".join(otlp_receiver.bodies)
    for private in (
        QUESTION,
        "hunter2",
        SECRET_KEY_TEXT,
        BRIEF_PROMPT,
        FINAL,
        incident_reason,
        "test-key",
        APPROVE,
    ):
        assert private.encode() not in exported, private
    names = {key for span in otlp_receiver.spans for key in span.attributes}
    assert not names & {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments"}


async def test_capture_content_exports_messages_and_payloads_with_secrets_masked(
    org, member, agents_llm, otlp_receiver, settings
):
    start_tracing(settings, otlp_receiver, otel_capture_content=True)
    await dispatch_turn_with_a_gated_write(org, member, agents_llm)

    turn = otlp_receiver.one("ongrid.turn")
    first = next(c for c in otlp_receiver.named("chat fake-model") if c.parent_id == turn.span_id)
    assert "Acknowledge the payments incident" in first.attributes["gen_ai.input.messages"]
    dispatch = otlp_receiver.one("execute_tool AgentTool")
    assert "Ack the incident" in dispatch.attributes["gen_ai.tool.call.arguments"]
    worker = otlp_receiver.one("invoke_agent specialist-ops")
    assert worker.attributes["ongrid.agent.result"] == "Done: acknowledged."
    last = [c for c in otlp_receiver.named("chat fake-model") if c.parent_id == turn.span_id][-1]
    assert FINAL in last.attributes["gen_ai.output.messages"]
    # Content, yes; credentials, still no: they are masked as in the audit rows.
    assert SECRET_KEY_TEXT.encode() not in b"".join(otlp_receiver.bodies)


async def test_the_human_wait_of_a_dual_sign_change_is_its_own_span(
    org, member, agents_llm, otlp_receiver, settings
):
    start_tracing(settings, otlp_receiver, approval_timeout=1.0)
    await sync_to_async(make_user_agent)(org, DUAL, "dual-sign-required", ["acknowledge_incident"])
    chat = await sync_to_async(make_chat)(member)
    worker = await sync_to_async(make_worker)(chat, DUAL)
    incident = await sync_to_async(make_incident)(org)
    agents_llm.add("reviewer", text(APPROVE))

    outcome = await gated_call(worker, DUAL, "acknowledge_incident", ack_arguments(incident), "d-1")
    assert outcome.status == "rejected"  # nobody signed within the second
    assert tracing.force_flush()

    call_span = otlp_receiver.one("execute_tool acknowledge_incident")
    wait = otlp_receiver.one("ongrid.approval.wait")
    review = otlp_receiver.one("ongrid.review")
    assert otlp_receiver.parent_of(wait) is call_span and otlp_receiver.parent_of(review) is call_span
    assert wait.attributes["ongrid.proposal.requires_human"] is True
    assert wait.attributes["ongrid.approval.decision"] == "reject"
    assert wait.attributes["ongrid.approval.by_human"] is False
    assert wait.duration_ns >= 0.9e9
    assert call_span.attributes["ongrid.tool.status"] == "rejected"


async def test_tool_spans_name_the_backend_they_reached(org, member, agents_llm, otlp_receiver, settings):
    start_tracing(settings, otlp_receiver)
    chat = await sync_to_async(make_chat)(member)
    worker = await sync_to_async(make_worker)(chat, "specialist-ops")
    await gated_call(worker, "specialist-ops", "query_incidents", {}, "q-1")
    from agents_app.toolsets.tracing import tool_attributes  # the attribute builder on its own
    from tests.support.agents import context, make_tool

    async def nothing(ctx, **kwargs):
        return "ok"

    attributes = tool_attributes(
        make_tool("k8s_get", nothing),
        context(org),
        '{"cluster": "prod-eu", "namespace": "shop", "device": "web-1"}',
    )
    assert tracing.force_flush()
    queried = otlp_receiver.one("execute_tool query_incidents")
    assert (
        queried.attributes["ongrid.tool.class"] == "read" and queried.attributes["ongrid.tool.status"] == "ok"
    )
    assert attributes["ongrid.backend.cluster"] == "prod-eu"
    assert attributes["ongrid.backend.namespace"] == "shop"
    assert attributes["ongrid.backend.device"] == "web-1"


def test_a_turn_started_by_an_http_request_continues_the_request_trace(
    member, agents_llm, otlp_receiver, settings, inline_executor
):
    """Django's instrumentation traces the request; the inline executor starts the turn in a fresh
    context, and the request's trace is carried over to it."""
    start_tracing(settings, otlp_receiver)
    tracing.configure(settings.CONFIG, instrument=("django",))
    chat = services.start_chat(member)
    agents_llm.add("default", text("Nothing to do."))
    client = APIClient()
    client.force_authenticate(member)

    assert client.get("/healthz").status_code == 200  # probes are not traced
    answer = client.post(f"/api/sessions/{chat.pk}/messages/?wait=1", {"content": "anything?"}, format="json")

    assert answer.status_code == 200, answer.content
    assert tracing.force_flush()
    turn = otlp_receiver.one("ongrid.turn")
    request = otlp_receiver.parent_of(turn)
    assert request is not None and request.kind == 2  # SPAN_KIND_SERVER
    assert request.name.startswith("POST ") and "messages" in request.name
    assert request.parent_id == "" and turn.trace_id == request.trace_id
    assert "anything?" not in str(request.attributes)
    assert [span.name for span in otlp_receiver.spans if span.kind == 2] == [request.name]


# ---- off by default, configured from the standard variables -------------------------------------


def test_tracing_is_off_and_the_sdk_not_loaded_without_an_endpoint():
    script = (
        "import django, sys; django.setup();"
        "import agents_app.runtime.core, agents_app.tools.invoke, agents_app.gate.review_gate;"
        "from ops_app.core import tracing;"
        "print(tracing.enabled(), 'opentelemetry.sdk' in sys.modules, repr(tracing.current_trace_id()))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(SECRET_KEY="t", DJANGO_SETTINGS_MODULE="ongrid_site.settings")
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=django_settings.BASE_DIR,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "''"]


def test_the_standard_variables_configure_the_exporter():
    base = {"SECRET_KEY": "t"}
    assert load(base).otel_traces_endpoint is None
    on = load(
        {**base, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/", "OTEL_SERVICE_NAME": "ongrid-eu"}
    )
    assert (
        on.otel_traces_endpoint == "http://collector:4318/v1/traces" and on.otel_service_name == "ongrid-eu"
    )
    specific = load({**base, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://tempo:4318/otlp/v1/traces"})
    assert specific.otel_traces_endpoint == "http://tempo:4318/otlp/v1/traces"
    disabled = load({**base, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"})
    assert disabled.otel_traces_endpoint is None
    headers = load({**base, "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20abc,X-Scope-OrgID=ops"})
    assert headers.otel_headers == {"Authorization": "Bearer abc", "X-Scope-OrgID": "ops"}
    assert "abc" not in repr(headers)
    with pytest.raises(ConfigError) as refused:
        load({**base, "OTEL_EXPORTER_OTLP_HEADERS": "Bearer-secret-no-equals"})
    assert "Bearer-secret" not in str(refused.value)
    assert load({**base, "ONGRID_OTEL_CAPTURE_CONTENT": "on"}).otel_capture_content is True


async def test_the_exporter_sends_the_configured_headers(org, member, agents_llm, otlp_receiver, settings):
    start_tracing(
        settings, otlp_receiver, otel_headers={"X-Scope-OrgID": "ops"}, otel_service_name="ongrid-eu"
    )
    chat = await sync_to_async(make_chat)(member)
    agents_llm.add("default", text("Nothing to do."))
    await Runtime().run_turn(chat.pk)
    assert tracing.force_flush()
    assert otlp_receiver.headers[0]["x-scope-orgid"] == "ops"
    assert otlp_receiver.one("ongrid.turn").resource["service.name"] == "ongrid-eu"


# ---- across processes: a turn queued by a request runs on a Celery worker ------------------------


@pytest.mark.parametrize("pool", ["solo", "prefork"])
def test_a_turn_on_a_celery_worker_continues_the_trace_of_whoever_queued_it(
    member, fake_llm, otlp_receiver, settings, tmp_path, pool
):
    """The producer's Celery instrumentation puts the trace context in the task's headers; the
    worker (tracing from OTEL_EXPORTER_OTLP_ENDPOINT alone) runs the turn under the task's span.
    A prefork child exports through the pipeline its parent configured before forking."""
    fake_llm.script(text("All quiet."))
    start_tracing(settings, otlp_receiver)
    tracing.configure(settings.CONFIG, instrument=("celery",))
    chat = make_chat(member)
    worker_env = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    with celery_worker_process(fake_llm.base_url, str(tmp_path), pool=pool, concurrency=1, **worker_env):
        with tracing.span("POST /api/chat") as request_span:
            assert request_span.is_recording()
            async_to_sync(_queue_turn)(chat.pk, process_identity())
        assert tracing.force_flush()
        turn = otlp_receiver.wait_for("ongrid.turn", within=60)
        otlp_receiver.wait_for("chat fake-model", within=30)

    request = otlp_receiver.one("POST /api/chat")
    task = otlp_receiver.parent_of(turn)
    assert task is not None and task.name == "run/agents_app.run_turn"
    assert turn.trace_id == request.trace_id
    published = otlp_receiver.parent_of(task)
    assert published is not None and published.name == "apply_async/agents_app.run_turn"
    assert otlp_receiver.parent_of(published) is request
    assert ChatSession.objects.get(pk=chat.pk).status == "idle"


def test_log_lines_written_in_a_span_name_its_trace(otlp_receiver, settings):
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("agents_app.tracing_test")
    logger.addHandler(handler)
    try:
        start_tracing(settings, otlp_receiver)
        with tracing.span("ongrid.turn"):
            logger.warning("the model is slow")
        logger.warning("between turns")
    finally:
        logger.removeHandler(handler)
    assert tracing.force_flush()
    turn = otlp_receiver.one("ongrid.turn")
    inside, outside = written.getvalue().splitlines()
    assert inside == f"WARNING the model is slow trace_id={turn.trace_id} span_id={turn.span_id}"
    assert outside == "WARNING between turns"


async def test_a_scheduled_run_is_a_trace_rooted_at_its_agent(org, agents_llm, otlp_receiver, settings):
    start_tracing(settings, otlp_receiver)
    persona = (await aget_registry(org.pk)).by_name("specialist-disk")
    session = await services.aopen_work_session(
        org.pk, persona.name, "Scheduled inspection: disks", "Check disks."
    )
    agents_llm.add("specialist-disk", text("All disks below 70%."))

    outcome = await Runtime().run_detached(session, persona, "Check disks.", [])

    assert outcome.status == "completed" and tracing.force_flush()
    root = otlp_receiver.one("invoke_agent specialist-disk")
    assert root.parent_id == "" and root.attributes["ongrid.session.id"] == session.pk
    assert root.attributes["ongrid.organization.id"] == org.pk
    assert root.attributes["ongrid.agent.status"] == "completed"
    [model_call] = otlp_receiver.named("chat fake-model")
    assert otlp_receiver.parent_of(model_call) is root


async def test_a_failed_model_call_is_marked_by_its_status_not_by_what_the_server_said(
    member, agents_llm, otlp_receiver, settings
):
    start_tracing(settings, otlp_receiver)
    chat = await sync_to_async(make_chat)(member)  # nothing scripted: the fake LLM answers HTTP 400

    result = await Runtime().run_turn(chat.pk)

    assert result.status == "failed" and tracing.force_flush()
    [failed] = otlp_receiver.named("chat fake-model")
    turn = otlp_receiver.one("ongrid.turn")
    assert failed.status_code == 2 and failed.attributes["error.type"] == "400"  # STATUS_CODE_ERROR
    assert turn.status_code == 2 and turn.attributes["ongrid.turn.status"] == "failed"
    assert b"nothing scripted" not in b"".join(otlp_receiver.bodies)
