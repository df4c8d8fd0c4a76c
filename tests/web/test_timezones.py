"""Times in the viewer's zone (web_app.timezones): the browser's cookie, the user's own setting
over it, one format on chat, audit and admin pages."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from chat_app import services
from chat_app.models import ChatSession
from ops_app.models import Membership
from web_app.templatetags.ongrid_ui import relative

pytestmark = pytest.mark.django_db

AT = datetime(2026, 12, 1, 0, 26, 26, tzinfo=UTC)


def chat_at(user) -> ChatSession:
    chat = services.start_chat(user, title="disk on web-01")
    ChatSession.objects.filter(pk=chat.pk).update(updated_at=AT, created_at=AT)
    return chat


def test_the_browser_zone_cookie_sets_the_zone_of_every_time(member):
    chat = chat_at(member)
    client = Client()
    client.force_login(member)
    client.cookies["ongrid_tz"] = "America%2FNew_York"  # as the browser writes it
    html = client.get(f"/chat/{chat.pk}/").content.decode()
    assert 'title="2026-11-30 19:26:26 America/New_York (UTC-05:00)"' in html
    assert ">America/New_York</a>" in html  # the header says which zone


def test_the_user_setting_overrides_the_browser_and_a_bad_zone_is_refused(member):
    chat = chat_at(member)
    client = Client()
    client.force_login(member)
    client.cookies["ongrid_tz"] = "America/New_York"
    assert client.post("/preferences/", {"timezone": "Not/AZone"}).status_code == 200
    assert Membership.objects.get(user=member).timezone == ""
    assert client.post("/preferences/", {"timezone": "Asia/Tokyo"}).status_code == 302
    html = client.get(f"/chat/{chat.pk}/").content.decode()
    assert "2026-12-01 09:26:26 Asia/Tokyo" in html


def test_a_forged_cookie_falls_back_to_utc(member):
    chat = chat_at(member)
    client = Client()
    client.force_login(member)
    client.cookies["ongrid_tz"] = "../../etc/passwd"
    html = client.get(f"/chat/{chat.pk}/").content.decode()
    assert "2026-12-01 00:26:26 UTC" in html


def test_the_admin_uses_the_same_format_and_zone(admin_client, admin_user, org):
    from ops_app.models import Incident

    Incident.objects.create(organization=org, title="disk full", started_at=AT)
    admin_client.cookies["ongrid_tz"] = "America/New_York"
    html = admin_client.get("/admin/ops_app/incident/").content.decode()
    assert "2026-11-30 19:26" in html and "Dec. 1, 2026" not in html
    # the zone is shown beside the welcome message
    assert '<a class="zone" href="/preferences/"' in html and ">America/New_York</a>" in html


def test_relative_times_read_naturally():
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert relative(datetime(2026, 12, 1, 11, 59, 50, tzinfo=UTC), now) == "just now"
    assert relative(datetime(2026, 12, 1, 11, 57, tzinfo=UTC), now) == "3 min ago"
    assert relative(datetime(2026, 12, 1, 7, 0, tzinfo=UTC), now) == "5 h ago"
    assert relative(datetime(2026, 11, 30, 10, 0, tzinfo=UTC), now) == "yesterday"
    assert relative(datetime(2026, 11, 20, 10, 0, tzinfo=UTC), now) == "2026-11-20 10:00"


def test_the_sidebar_is_ordered_by_last_activity(member):
    old, recent = services.start_chat(member, title="old chat"), services.start_chat(member, title="fresh")
    services.begin_turn(old.pk, "anything new?")  # activity moves it to the top
    client = Client()
    client.force_login(member)
    html = client.get(f"/chat/{recent.pk}/").content.decode()
    sidebar = html[html.index('id="chat-list"') :]
    assert sidebar.index("old chat") < sidebar.index(">fresh<")
