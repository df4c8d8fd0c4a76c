"""Token usage and cost per LLM endpoint in the audit pages and API (docs/integrations.md): each
session row of the list names the endpoints its tokens went to, the API's list rows and tree
totals carry them, and a tree's totals sum every session of the tree per endpoint."""

from __future__ import annotations

import dataclasses

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from tests.support import audit_rows

pytestmark = pytest.mark.django_db
PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.6}, "big-model": {"input": 2.0, "output": 8.0}}


@pytest.fixture
def priced(settings) -> None:
    settings.CONFIG = dataclasses.replace(settings.CONFIG, model_prices=PRICES, model="gpt-4o-mini")


@pytest.fixture
def tree(org, member):
    """A chat on the deployment's endpoint whose two workers used the organization's `acme-vllm`
    (one of them also `acme-azure`, with a model that has no price)."""
    chat = audit_rows.session(org, member, title="Latency on checkout")
    audit_rows.llm_call(chat, prompt=1_000_000, completion=100_000)
    first = audit_rows.session(org, member, parent=chat, agent_id="specialist-compute", title="CPU")
    audit_rows.llm_call(first, model="big-model", prompt=500_000, completion=50_000, endpoint="acme-vllm")
    second = audit_rows.session(org, member, parent=chat, agent_id="specialist-disk", title="Disk")
    audit_rows.llm_call(second, model="big-model", prompt=250_000, completion=25_000, endpoint="acme-vllm")
    audit_rows.llm_call(second, model="secret-model", prompt=10, completion=5, endpoint="acme-azure")
    return {"chat": chat, "first": first, "second": second}


def test_the_session_list_names_each_sessions_endpoints_with_tokens_and_cost(client, auditor, tree, priced):
    client.force_login(auditor)
    page = client.get(reverse("audit-sessions")).content.decode()

    assert "LLM endpoints" in page
    assert "(deployment default): 1000000 in, 100000 out · $0.2100" in page  # 0.15 + 0.06
    assert "acme-vllm: 500000 in, 50000 out · $1.4000" in page  # 1.0 + 0.4
    assert "acme-vllm: 250000 in, 25000 out · $0.7000" in page
    assert "acme-azure: 10 in, 5 out · " in page and 'title="no price for secret-model"' in page


def test_the_api_lists_endpoints_per_session_and_sums_them_in_the_tree_totals(auditor, tree, priced):
    api = APIClient()
    api.force_authenticate(auditor)
    rows = {row["id"]: row for row in api.get(reverse("api-audit-sessions")).json()["results"]}

    assert rows[tree["second"].pk]["endpoints"] == [
        {
            "endpoint": "acme-azure",
            "calls": 1,
            "prompt": 10,
            "completion": 5,
            "cost": {"usd": None, "unpriced": ["secret-model"]},
        },
        {
            "endpoint": "acme-vllm",
            "calls": 1,
            "prompt": 250_000,
            "completion": 25_000,
            "cost": {"usd": 0.7, "unpriced": []},
        },
    ]

    for body in (
        api.get(reverse("api-audit-tree", args=[tree["first"].pk])).json(),
        api.get(reverse("api-audit-export", args=[tree["chat"].pk])).json(),
    ):
        assert body["totals"]["endpoints"] == [
            {
                "endpoint": "",
                "calls": 1,
                "prompt": 1_000_000,
                "completion": 100_000,
                "cost": {"usd": 0.21, "unpriced": []},
            },
            {
                "endpoint": "acme-azure",
                "calls": 1,
                "prompt": 10,
                "completion": 5,
                "cost": {"usd": None, "unpriced": ["secret-model"]},
            },
            {
                "endpoint": "acme-vllm",
                "calls": 2,
                "prompt": 750_000,
                "completion": 75_000,
                "cost": {"usd": 2.1, "unpriced": []},
            },
        ]
        assert body["totals"]["tokens"]["total"] == 1_100_000 + 825_000 + 15


def test_the_session_page_totals_sum_the_tree_per_endpoint(client, auditor, tree, priced):
    client.force_login(auditor)
    page = client.get(reverse("audit-session", args=[tree["chat"].pk])).content.decode()

    assert "LLM endpoint acme-vllm" in page and "2 calls · 750000 in, 75000 out · $2.1000" in page
    assert "LLM endpoint (deployment default)" in page and "1 calls · 1000000 in, 100000 out" in page


def test_another_organizations_endpoint_usage_is_not_listed(client, outsider, other_org, tree, priced):
    theirs = audit_rows.session(other_org, outsider, title="Their chat")
    audit_rows.llm_call(theirs, endpoint="globex-ollama")
    from ops_app.tenancy import roles
    from ops_app.tenancy.accounts import set_membership

    set_membership(outsider, other_org, roles.AUDITOR)
    client.force_login(outsider)
    page = client.get(reverse("audit-sessions")).content.decode()
    assert "globex-ollama: 100 in, 20 out" in page
    assert "acme-vllm" not in page and "acme-azure" not in page
