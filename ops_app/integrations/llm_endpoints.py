"""An organization's LLM endpoints (docs/integrations.md): the one write (keeping one default),
the lookup the agents use, and the admin's "Test" (does the endpoint serve the default model?)."""

from __future__ import annotations

from dataclasses import dataclass

import openai
from django.db import transaction
from django.utils.translation import gettext

from ops_app.core import outbound
from ops_app.core.egress import EgressRefused
from ops_app.core.turn_memo import remembered
from ops_app.models import LLMEndpoint


@transaction.atomic
def save_llm_endpoint(endpoint: LLMEndpoint) -> LLMEndpoint:
    """Save, keeping at most one default per organization (a new default replaces the old one).
    The knowledge vault hears of it (post_save) and embeds what the default's embedding model
    has not embedded yet (ops_app.knowledge.background)."""
    if endpoint.is_default:
        others = LLMEndpoint.objects.for_organization(endpoint.organization_id).filter(is_default=True)
        if endpoint.pk:
            others = others.exclude(pk=endpoint.pk)
        for other in others:
            other.is_default = False
            other.save(update_fields=["is_default", "updated_at"])
    endpoint.save()
    return endpoint


async def adefault_endpoint(organization_id: int | None) -> LLMEndpoint | None:
    """The organization's default endpoint, or None (then the deployment's environment applies);
    read once per turn."""
    if not organization_id:
        return None

    async def load() -> LLMEndpoint | None:
        return await LLMEndpoint.objects.for_organization(organization_id).filter(is_default=True).afirst()

    return await remembered(("default_llm_endpoint", organization_id), load)


def has_default_endpoint(organization_id: int | None) -> bool:
    """Whether the organization's agents talk to its own endpoint (the page banner's question)."""
    if not organization_id:
        return False
    return LLMEndpoint.objects.for_organization(organization_id).filter(is_default=True).exists()


@dataclass(frozen=True)
class ModelListing:
    ok: bool
    models: list[str]
    error: str = ""


def list_models(endpoint: LLMEndpoint) -> ModelListing:
    """The models the endpoint serves (`GET /models`, under the egress policy). A failure is a
    short reason (the key refused, HTTP 404, refused by the egress policy, connection refused...):
    never the answer's body, nor the key."""
    client = openai.OpenAI(
        api_key=endpoint.api_key or "not-set",
        base_url=endpoint.base_url or None,
        timeout=min(endpoint.timeout, 30.0),
        max_retries=0,
        http_client=outbound.llm_client(),
    )
    try:
        return ModelListing(True, sorted(model.id for model in client.models.list()))
    except openai.AuthenticationError:
        return ModelListing(False, [], "the endpoint refused the API key")
    except openai.APIStatusError as error:
        return ModelListing(False, [], outbound.status_reason(error.status_code))
    except (openai.APIConnectionError, EgressRefused) as error:  # timeouts too; the cause says which
        return ModelListing(False, [], outbound.failure_reason(error))
    except (openai.APIError, ValueError, TypeError, AttributeError):
        return ModelListing(False, [], gettext("the answer is not an OpenAI-compatible list of models"))
    finally:
        client.close()
