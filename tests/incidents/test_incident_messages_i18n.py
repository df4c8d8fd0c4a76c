"""The incident page's refusals are in the user's language (docs/i18n.md): acknowledging an
incident someone already resolved says why in Spanish, French or Chinese, before anything is sent
to the review gate."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from chat_app.models import ChatSession
from ops_app.models import Incident

pytestmark = pytest.mark.django_db
T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)
ALREADY_RESOLVED = {
    "es": "el incidente {id} está resuelto; ya no se puede reconocer",
    "fr": "l’incident {id} est résolu ; il ne peut plus être pris en compte",
    "zh-Hans": "事件 {id} 已解决，不能再确认",
}


@pytest.mark.parametrize("language", ["es", "fr", "zh-Hans"])
def test_acknowledging_a_resolved_incident_is_refused_in_the_users_language(client, org, member, language):
    incident = Incident.objects.create(
        organization=org, title="Disk full", severity="critical", started_at=T0, status="resolved"
    )
    client.force_login(member)
    page = client.post(
        reverse("incident-acknowledge", args=[incident.pk]), follow=True, HTTP_ACCEPT_LANGUAGE=language
    ).content.decode()
    assert ALREADY_RESOLVED[language].format(id=incident.pk) in page
    assert "cannot be acknowledged again" not in page
    assert not ChatSession.objects.exists()  # refused on the page: no chat, no review
