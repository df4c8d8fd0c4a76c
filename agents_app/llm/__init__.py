"""LLM providers. `get_provider()` picks the configured one; see docs/kernel.md."""

from __future__ import annotations

from django.conf import settings

from agents_app.llm.base import (
    LLMCompletion,
    LLMDelta,
    LLMError,
    LLMEvent,
    LLMProvider,
    ToolCall,
)

__all__ = [
    "LLMCompletion",
    "LLMDelta",
    "LLMError",
    "LLMEvent",
    "LLMProvider",
    "ToolCall",
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
