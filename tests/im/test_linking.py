"""Linking a chat sender to an Ongrid user (docs/im.md, "linking senders"): Slack's profile e-mail,
from a fake `users.info` the app's admin could have written, only suggests a user; the link needs
that user's confirmation on the web or an org admin's in the admin, and never reaches platform
staff or another organization."""

from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from chat_app.models import ChatSession
from fakes.openai_server import text
from fakes.slack_api import FakeSlack
from im_app.models import IMIdentity
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.im import link, post_slack, sessions_of, slack_app, slack_mention

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections", "inline_executor", "fresh_registry"),
]

SENDER = "U42"
LINK = re.compile(r"https?://[^\s>|]+/im/link/[^/\s>|]+/")


@pytest.fixture
def slack():
    fake = FakeSlack().start()
    yield fake
    fake.stop()


@pytest.fixture
def app(org, slack):
    return slack_app(org, slack)


def as_profile_email(slack: FakeSlack, user) -> None:
    """What the platform (or whoever the app's API base URL points at) says U42's e-mail is."""
    get_user_model().objects.filter(pk=user.pk).update(email=f"{user.username}@acme.example")
    slack.emails[SENDER] = f"{user.username.upper()}@acme.example"  # e-mails match case-blind


async def mention(app, slack, number: int) -> str:
    """U42 writes to the bot in a new thread; what the bot first answered there."""
    ts = f"17000001{number:02d}.000100"
    body = json.dumps(slack_mention(f"Ev{number}", "why is checkout slow?", user=SENDER, ts=ts)).encode()
    await post_slack(app, "events", body)
    return slack.thread_texts(ts)[0]


async def identity_of(app) -> IMIdentity:
    return await IMIdentity.objects.select_related("user", "suggested_user").aget(app=app, external_id=SENDER)


async def test_a_members_e_mail_is_pending_until_the_member_confirms_on_the_web(
    app, member, slack, agents_llm
):
    await sync_to_async(as_profile_email)(slack, member)
    agents_llm.add("default", text("Checkout is slow because of the deploy."))

    first = await mention(app, slack, 1)

    identity = await identity_of(app)
    assert identity.user is None and identity.suggested_user == member
    assert "Link your account" in first and await sessions_of(member) == []
    assert "default" not in agents_llm.seen  # nothing ran for a sender who is not linked yet
    page = Client()
    await sync_to_async(page.force_login)(member)
    path = link_path(first)
    asked = await sync_to_async(page.get)(path)
    assert "Yes, this is me" in asked.content.decode()
    assert (await identity_of(app)).user is None  # a GET only shows what would happen
    done = await sync_to_async(page.post)(path)
    assert "now talks to Ongrid as" in done.content.decode()

    await mention(app, slack, 2)

    identity = await identity_of(app)
    assert identity.user == member and identity.suggested_user is None
    assert len(await sessions_of(member)) == 1 and len(agents_llm.seen["default"]) == 1


def link_path(answer: str) -> str:
    """The path of the one-time link in the bot's answer."""
    url = LINK.search(answer).group(0)
    return url[url.index("/im/link/") :]


def platform_staff(org):
    """A superuser who also holds a membership of the app's organization."""
    return create_user("root", "root-pass-123", org, roles.MEMBER, is_staff=True, is_superuser=True)


def staff_without_superuser(org):
    return create_user("ops-staff", "staff-pass-123", org, roles.MEMBER, is_staff=True)


def another_organizations_member(other_org):
    return create_user("mallory", "mallory-pass-123", other_org, roles.MEMBER)


@pytest.mark.parametrize("who", ["superuser", "staff", "other organization"])
async def test_an_e_mail_never_links_platform_staff_or_another_organization(
    app, org, other_org, slack, agents_llm, who
):
    make = {
        "superuser": lambda: platform_staff(org),
        "staff": lambda: staff_without_superuser(org),
        "other organization": lambda: another_organizations_member(other_org),
    }[who]
    target = await sync_to_async(make)()
    await sync_to_async(as_profile_email)(slack, target)

    answer = await mention(app, slack, 1)

    identity = await identity_of(app)
    assert identity.user is None and identity.suggested_user is None
    assert "Link your account" in answer
    assert not await ChatSession.objects.filter(user=target).aexists()
    assert "default" not in agents_llm.seen


async def test_platform_staff_cannot_confirm_a_link_code_either(app, org, slack, agents_llm):
    root = await sync_to_async(platform_staff)(org)
    answer = await mention(app, slack, 1)
    page = Client()
    await sync_to_async(page.force_login)(root)

    refused = await sync_to_async(page.post)(link_path(answer))

    assert refused.status_code == 403
    assert "Platform staff accounts cannot be linked" in refused.content.decode()
    assert (await identity_of(app)).user is None
    await mention(app, slack, 2)
    assert not await ChatSession.objects.filter(user=root).aexists()


async def test_a_sender_mapped_to_a_superuser_by_any_earlier_path_stays_unlinked(app, org, slack, agents_llm):
    root = await sync_to_async(platform_staff)(org)
    await sync_to_async(link)(app, SENDER, root)  # as a row written before this rule, or by hand

    answer = await mention(app, slack, 1)

    assert "Link your account" in answer
    assert not await ChatSession.objects.filter(user=root).aexists()


# ---- the admin ------------------------------------------------------------------------------------


def admin_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_org_admin_confirms_the_suggested_user_in_the_admin(app, member, org_admin):
    identity = IMIdentity.objects.create(
        organization=app.organization, app=app, external_id=SENDER, suggested_user=member
    )
    changelist = reverse("admin:im_app_imidentity_changelist")

    answer = admin_client(org_admin).post(
        changelist,
        {"action": "confirm_suggested_user", "_selected_action": [identity.pk]},
        follow=True,
    )

    identity.refresh_from_db()
    assert identity.user == member and identity.suggested_user is None and identity.linked_at is not None
    assert f"{SENDER}: linked to alice." in answer.content.decode()


def test_the_admin_refuses_a_suggestion_that_may_no_longer_be_linked(app, member, org_admin):
    identity = IMIdentity.objects.create(
        organization=app.organization, app=app, external_id=SENDER, suggested_user=member
    )
    get_user_model().objects.filter(pk=member.pk).update(is_active=False)

    answer = admin_client(org_admin).post(
        reverse("admin:im_app_imidentity_changelist"),
        {"action": "confirm_suggested_user", "_selected_action": [identity.pk]},
        follow=True,
    )

    identity.refresh_from_db()
    assert identity.user is None
    assert "no suggested user who may be linked" in answer.content.decode()


def test_no_one_maps_a_sender_to_a_superuser_by_hand(app, org):
    root = platform_staff(org)
    identity = IMIdentity.objects.create(organization=org, app=app, external_id=SENDER)
    change = reverse("admin:im_app_imidentity_change", args=[identity.pk])

    answer = admin_client(root).post(
        change,
        {"organization": org.pk, "app": app.pk, "external_id": SENDER, "display_name": "", "user": root.pk},
    )

    assert answer.status_code == 200 and "not platform staff" in answer.content.decode()
    identity.refresh_from_db()
    assert identity.user is None


def test_an_org_admin_still_maps_a_member_by_hand(app, member, org_admin):
    identity = IMIdentity.objects.create(organization=app.organization, app=app, external_id=SENDER)

    answer = admin_client(org_admin).post(
        reverse("admin:im_app_imidentity_change", args=[identity.pk]),
        {"app": app.pk, "external_id": SENDER, "display_name": "", "user": member.pk},
    )

    assert answer.status_code == 302
    identity.refresh_from_db()
    assert identity.user == member
