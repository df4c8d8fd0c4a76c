"""Model aliases: `sonnet`, `opus`, `haiku` and `inherit` in a persona's `model` (docs/personas.md).

Claude Code agent files name models by family (`model: sonnet`) or `inherit`. An Ongrid
organization talks to whatever OpenAI-compatible endpoint it configured, where no model is called
`sonnet`; each LLM endpoint therefore holds a table (`LLMEndpoint.model_aliases`) from alias to
one of its own models. The alias is resolved twice: where the runtime picks a spawn's model, and
again by the kernel just before the request, so an alias never reaches an endpoint.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

INHERIT = "inherit"
CLAUDE_CODE_ALIASES = ("sonnet", "opus", "haiku")


def resolve_model(alias: str | None, endpoint: Any, caller_model: str | None) -> str:
    """The model the endpoint is asked for when a persona says `alias`.

    `inherit` is the caller's model (the agent that dispatched this one; the endpoint's default
    when there is none); an alias is the endpoint's table entry, or the endpoint's default model
    when the table has none; any other name (a real model id) passes through unchanged.
    `endpoint` is an LLMEndpoint, a provider carrying `model_aliases`, or None (the deployment's
    own settings, which have no table).
    """
    table = dict(getattr(endpoint, "model_aliases", None) or {})
    name = (alias or "").strip()
    if name and name != INHERIT and name not in table and name not in CLAUDE_CODE_ALIASES:
        return name  # a real model id
    if name in table:
        return table[name]
    if name == INHERIT and caller_model:
        return caller_model
    return default_model_of(endpoint)


def default_model_of(endpoint: Any) -> str:
    """The endpoint's default model (a provider's `default_model()`; the settings' without one)."""
    if endpoint is None:
        return settings.CONFIG.model
    default = endpoint.default_model
    return default() if callable(default) else default
