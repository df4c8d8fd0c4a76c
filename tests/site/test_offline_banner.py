"""The "Offline model" banner follows the LLM the viewer's organization really uses: its own
default endpoint means no banner, even when the deployment has no key (issue 29, finding 5)."""

from __future__ import annotations

import pytest

from ops_app.integrations.llm_endpoints import save_llm_endpoint
from ops_app.models import LLMEndpoint

pytestmark = pytest.mark.django_db


def page_of(client, user) -> str:
    client.force_login(user)
    return client.get("/", follow=True).content.decode()


def test_without_any_llm_every_page_says_offline(client, member, settings):
    assert settings.CONFIG.llm == "offline"
    assert "Offline model" in page_of(client, member)


def test_an_organization_endpoint_silences_the_banner(client, member, org, other_org, outsider, settings):
    assert settings.CONFIG.llm == "offline"  # no deployment key
    save_llm_endpoint(
        LLMEndpoint(
            organization=org,
            name="own",
            base_url="http://127.0.0.1:9/v1",
            api_key="k",
            default_model="m",
            is_default=True,
        )
    )
    assert "Offline model" not in page_of(client, member)
    assert "Offline model" in page_of(client, outsider)  # another organization still has none


def test_a_non_default_endpoint_does_not_count(client, member, org, settings):
    save_llm_endpoint(
        LLMEndpoint(
            organization=org,
            name="spare",
            base_url="http://127.0.0.1:9/v1",
            api_key="k",
            default_model="m",
            is_default=False,
        )
    )
    assert "Offline model" in page_of(client, member)
