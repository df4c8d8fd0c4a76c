"""LLM providers. `get_provider()` picks the configured one; see docs/kernel.md."""

from __future__ import annotations

from django.conf import settings

from agents_app.llm.base import (
    LLMCompletion,
    LLMDelta,
    LLMError,
    LLMEvent,
    LLMProvider,
    LLMRetrying,
    ToolCall,
)
from agents_app.toolsets.tracing import traced_provider

__all__ = [
    "LLMCompletion",
    "LLMDelta",
    "LLMError",
    "LLMEvent",
    "LLMProvider",
    "LLMRetrying",
    "ToolCall",
    "aget_provider",
    "get_provider",
]


def get_provider(model_hint: str | None = None) -> LLMProvider:
    """The provider `ONGRID_LLM` selects (offline when no key and no explicit choice).

    `model_hint` (a persona's `model`) may name the offline model explicitly: `offline` forces it,
    whatever the settings say, so a persona can be pinned to the deterministic stand-in.
    """
    config = settings.CONFIG
    # Each provider is imported when chosen: a deployment on one never loads the other's client.
    if model_hint == "offline" or config.llm == "offline":
        from agents_app.llm.offline import OfflineProvider

        return OfflineProvider()
    from agents_app.llm.openai_provider import OpenAIProvider

    return OpenAIProvider.from_config(config)


async def aget_provider(model_hint: str | None, organization_id: int | None) -> LLMProvider:
    """The provider for an organization's agents: its default LLM endpoint when it has one, the
    deployment's environment (`get_provider`) otherwise. `offline` as the persona's model still wins.
    The provider's `endpoint` attribute names the endpoint for the LLM-call audit rows."""
    from ops_app.integrations.llm_endpoints import adefault_endpoint

    endpoint = None if model_hint == "offline" else await adefault_endpoint(organization_id)
    if endpoint is None:
        return traced_provider(get_provider(model_hint))
    from agents_app.llm.openai_provider import OpenAIProvider

    provider = OpenAIProvider(
        api_key=endpoint.api_key,
        base_url=endpoint.base_url or None,
        model=endpoint.default_model,
        timeout=endpoint.timeout,
        max_retries=endpoint.max_retries,
        retry_after_max=settings.CONFIG.llm_retry_after_max,
    )
    provider.endpoint = endpoint.name
    provider.model_aliases = dict(endpoint.model_aliases or {})  # `model: sonnet` -> one of its models
    provider.timeout_setting = f"the timeout of LLM endpoint {endpoint.name!r}"
    return traced_provider(provider)
