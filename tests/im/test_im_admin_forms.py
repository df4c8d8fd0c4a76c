"""The IM app's admin form, per platform (issue 29, finding 12): adding one asks for the platform
first; the form then shows that platform's credentials only, the absolute addresses to give the
platform (from ONGRID_PUBLIC_URL) with copy buttons, the scopes and events to set, and for Slack
an app manifest; a Test button on the form stores the bot identity and never shows the platform's
words; no doubled name; labelled "clear" boxes; all of it in the admin's language."""

from __future__ import annotations

import dataclasses
import html
import json
import re

import pytest
from django.test import Client

from fakes.feishu_api import FakeFeishu
from fakes.slack_api import FakeSlack
from fakes.telegram_api import FakeTelegram
from im_app.models import IMApp
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.im import feishu_app, slack_app, telegram_app

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/im_app/imapp/add/"
CREDENTIALS = {
    "slack": {"bot_token", "signing_secret", "app_token"},
    "telegram": {"bot_token", "webhook_secret"},
    "feishu": {"app_id", "app_secret", "verification_token", "encrypt_key"},
}
ALL_CREDENTIALS = set().union(*CREDENTIALS.values())
PUBLIC = "https://ongrid.example.com"


@pytest.fixture
def admin(org_admin) -> Client:
    client = Client()
    client.force_login(org_admin)
    return client


@pytest.fixture
def public_url(settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, public_url=PUBLIC, public_url_set=True)


@pytest.fixture
def slack():
    fake = FakeSlack().start()
    yield fake
    fake.stop()


@pytest.fixture
def telegram():
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


def change_url(app: IMApp) -> str:
    return f"/admin/im_app/imapp/{app.pk}/change/"


def credential_fields(page: str) -> set[str]:
    """The credential inputs the form offers (a write-only secret posts as `<name>`, a plain one too)."""
    named = set(re.findall(r'name="([a-z_]+)"', page))
    return named & ALL_CREDENTIALS


def copy_boxes(page: str) -> dict[str, str]:
    """label → value of every read-only address box that has a copy button."""
    boxes = {}
    for element, label in re.findall(r'<label class="im-address-label" for="([\w-]+)">([^<]+)</label>', page):
        value = re.search(rf'id="{element}" value="([^"]*)" readonly', page).group(1)
        assert f'data-copy-from="{element}"' in page, f"no copy button for {label}"
        boxes[html.unescape(label)] = html.unescape(value)
    return boxes


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def test_adding_an_app_asks_for_the_platform_then_shows_only_its_credentials(admin, org):
    chooser = admin.get(ADD_URL).content.decode()
    assert credential_fields(chooser) == set()
    for platform in ("slack", "telegram", "feishu"):
        assert f'href="?platform={platform}"' in chooser

    for platform, expected in CREDENTIALS.items():
        page = admin.get(f"{ADD_URL}?platform={platform}").content.decode()
        assert credential_fields(page) == expected, platform
    feishu = admin.get(f"{ADD_URL}?platform=feishu").content.decode()
    assert 'name="connection_mode"' not in feishu  # Feishu has no outbound-only mode

    response = admin.post(
        f"{ADD_URL}?platform=telegram",
        {
            "name": "Ops bot",
            "enabled": "on",
            "connection_mode": "webhook",
            "bot_token": "42:abc",
            "webhook_path": "unguessable-path",
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    app = IMApp.objects.get(organization=org)
    assert (app.platform, app.bot_token) == ("telegram", "42:abc")


def test_a_saved_apps_form_shows_only_its_platforms_credentials_and_keeps_the_platform(
    admin, org, slack, telegram
):
    feishu = FakeFeishu().start()
    try:
        apps = {
            "slack": slack_app(org, slack),
            "telegram": telegram_app(org, telegram),
            "feishu": feishu_app(org, feishu),
        }
        for platform, app in apps.items():
            page = admin.get(change_url(app)).content.decode()
            assert credential_fields(page) == CREDENTIALS[platform], platform
            assert 'name="platform"' not in page  # shown, not editable: its credentials belong to it
    finally:
        feishu.stop()


def test_webhook_addresses_are_absolute_with_copy_buttons_once_the_public_url_is_set(
    admin, org, slack, telegram, public_url
):
    app = slack_app(org, slack)
    boxes = copy_boxes(admin.get(change_url(app)).content.decode())
    assert sorted(boxes.values()) == sorted(
        f"{PUBLIC}/im/slack/{app.pk}/{part}" for part in ("events", "interactions", "commands")
    )
    bot = telegram_app(org, telegram)
    page = admin.get(change_url(bot)).content.decode()
    assert list(copy_boxes(page).values()) == [f"{PUBLIC}/im/telegram/{bot.pk}/{bot.webhook_path}"]
    assert "callback_query" in page  # the updates setWebhook must allow
    assert "ONGRID_PUBLIC_URL is not set" not in page


def test_without_a_public_url_the_form_says_so_beside_the_path(admin, org, slack):
    app = slack_app(org, slack)
    page = admin.get(change_url(app)).content.decode()
    assert f"/im/slack/{app.pk}/events" in copy_boxes(page).values()
    assert "ONGRID_PUBLIC_URL is not set" in page


def test_the_slack_manifest_holds_the_request_urls_scopes_and_events(admin, org, slack, public_url):
    app = slack_app(org, slack, name="Ops bot")
    page = admin.get(change_url(app)).content.decode()
    text = re.search(r'<textarea class="im-manifest" id="im-manifest"[^>]*>(.*?)</textarea>', page, re.S)
    manifest = json.loads(html.unescape(text.group(1)))
    settings = manifest["settings"]
    assert settings["event_subscriptions"]["request_url"] == f"{PUBLIC}/im/slack/{app.pk}/events"
    assert settings["interactivity"]["request_url"] == f"{PUBLIC}/im/slack/{app.pk}/interactions"
    assert manifest["features"]["slash_commands"][0]["url"] == f"{PUBLIC}/im/slack/{app.pk}/commands"
    assert set(settings["event_subscriptions"]["bot_events"]) == {"app_mention", "message.im"}
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"app_mentions:read", "chat:write", "commands", "im:history", "users:read.email"} <= scopes
    for scope in scopes:
        assert f"<code>{scope}</code>" in page  # the same list, readable beside it
    assert 'data-copy-from="im-manifest"' in page

    app.connection_mode = "polling"
    app.save()
    socket = admin.get(change_url(app)).content.decode()
    manifest = json.loads(
        html.unescape(re.search(r'id="im-manifest"[^>]*>(.*?)</textarea>', socket, re.S)[1])
    )
    assert manifest["settings"]["socket_mode_enabled"] is True
    assert "request_url" not in manifest["settings"]["event_subscriptions"]
    assert "<code>connections:write</code>" in socket  # the app-level token's scope


def test_the_test_button_stores_the_bot_identity_and_shows_no_remote_text(admin, org, slack, telegram):
    app = slack_app(org, slack)
    page = admin.get(change_url(app)).content.decode()
    test_url = f"/admin/im_app/imapp/{app.pk}/test/"
    assert f'action="{test_url}"' in page
    assert admin.get(test_url).status_code == 405  # a GET never calls the platform

    response = admin.post(test_url, follow=True)
    assert response.redirect_chain[-1][0] == change_url(app)
    assert messages_of(response) == ["Ops bot (Slack): connected as ongrid (bot BBOT) in Acme"]
    assert IMApp.objects.get(pk=app.pk).bot_identity == "ongrid (bot BBOT) in Acme"
    assert "ongrid (bot BBOT) in Acme" in response.content.decode()  # the bot identity field

    IMApp.objects.filter(pk=app.pk).update(bot_token="")
    app.refresh_from_db()
    app.bot_token = "xoxb-wrong"
    app.save()
    refused = admin.post(test_url, follow=True)
    assert messages_of(refused) == ["Ops bot (Slack): failed: auth.test: invalid_auth"]
    assert "xoxb-wrong" not in refused.content.decode()

    bot = telegram_app(org, telegram)
    bot.bot_token = "999:wrong"
    bot.save()
    answer = admin.post(f"/admin/im_app/imapp/{bot.pk}/test/", follow=True)
    # Telegram's description ("Unauthorized") is the remote server's prose: only the status is shown.
    assert messages_of(answer) == ["Ops bot: failed: getMe: HTTP 401"]


def test_another_organizations_admin_cannot_test_an_app(org, other_org, slack):
    app = slack_app(org, slack)
    theirs = Client()
    theirs.force_login(create_user("olga", "olga-pass-123", other_org, roles.ORG_ADMIN))
    assert theirs.post(f"/admin/im_app/imapp/{app.pk}/test/").status_code in (302, 404)
    assert IMApp.objects.get(pk=app.pk).bot_identity == ""


def test_the_name_is_not_doubled(admin, org, slack):
    named_with_platform = slack_app(org, slack, name="Ops bot (Slack)")
    plain = slack_app(org, slack, name="Ops bot")
    assert str(named_with_platform) == "Ops bot (Slack)" and str(plain) == "Ops bot (Slack)"
    page = admin.get(change_url(named_with_platform)).content.decode()
    assert "(Slack) (Slack)" not in page


def test_the_secret_boxes_and_their_clear_boxes_are_labelled(admin, org, slack):
    app = slack_app(org, slack)
    page = admin.get(change_url(app)).content.decode()
    assert '<label for="id_bot_token_0">Bot token:</label>' in page
    clear = re.search(r'<label class="secret-clear" for="id_bot_token_1">(.*?)</label>', page, re.S)
    assert clear is not None and 'id="id_bot_token_1"' in clear.group(1)
    assert "Clear the stored bot token" in clear.group(1)
    assert slack.token not in page


def test_the_form_speaks_the_admins_language(admin, org, slack, org_admin):
    org_admin.membership.language = "fr"
    org_admin.membership.save(update_fields=["language"])
    app = slack_app(org, slack)
    page = html.unescape(admin.get(change_url(app)).content.decode())
    assert "Côté plateforme" in page and ">Copier<" in page and "Copier le manifeste" in page
    assert "Effacer la valeur enregistrée : jeton du bot" in page
    assert "ONGRID_PUBLIC_URL n’est pas définie" in page
    assert 'class="test-button">Tester la connexion</button>' in page
    chooser = html.unescape(admin.get(ADD_URL).content.decode())
    assert "Choisissez une plateforme" in chooser
