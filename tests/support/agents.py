"""Builders shared by the kernel tests: personas, tools, a provider pointed at the fake LLM."""

from __future__ import annotations

from agents_app.llm.openai_provider import OpenAIProvider
from agents_app.personas.schema import Persona
from agents_app.toolsets.contract import DEFAULT_TIMEOUT, Tool, ToolContext


def persona(name: str = "specialist-disk", **fields) -> Persona:
    fields.setdefault("description", f"{name} for tests")
    fields.setdefault("when_to_use", "when a test needs it")
    fields.setdefault("body", f"You are {name}.")
    return Persona(name=name, **fields)


def make_tool(
    name: str,
    handler,
    *,
    tool_class="read",
    timeout=DEFAULT_TIMEOUT,
    params=None,
    description="",
    on_host=False,
) -> Tool:
    parameters = params or {"type": "object", "properties": {}}
    description = description or f"{name} (test tool)"
    return Tool(name, description, parameters, handler, tool_class, timeout, on_host=on_host)


def provider_for(fake, **options) -> OpenAIProvider:
    options.setdefault("max_retries", 2)
    options.setdefault("backoff_base", 0.001)
    options.setdefault("timeout", 10.0)
    return OpenAIProvider(api_key="test-key", base_url=fake.base_url, model="fake-model", **options)


def context(org, session=None, user=None, **extras) -> ToolContext:
    return ToolContext(
        organization_id=org.pk,
        session_id=session.pk if session is not None else None,
        user_id=user.pk if user is not None else None,
        extras=extras,
    )
