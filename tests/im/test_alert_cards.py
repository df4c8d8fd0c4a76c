"""Alert cards in the team chat (docs/im.md, "Alert cards"), on Slack, Telegram and Feishu: the
incidents app's `alert_card_post` / `alert_card_update` signals post and redraw a card through the
fake platforms, which record what a channel's readers see; the card's buttons pressed (signed
webhooks, as the platforms send them) reach `alert_card_pressed` for linked users only, and the
answer is shown to the presser alone."""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest
from asgiref.sync import sync_to_async
from django.utils import translation

from chat_app.signals import alert_card_post, alert_card_pressed, alert_card_update
from fakes.feishu_api import FakeFeishu
from fakes.slack_api import FakeSlack
from fakes.telegram_api import FakeTelegram
from im_app.alert_cards import AlertCardError
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.im import (
    feishu_app,
    feishu_button,
    link,
    post_feishu,
    post_slack,
    post_telegram,
    slack_app,
    telegram_app,
    tg_button,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("close_async_db_connections")]

INCIDENT = 42
STARTED = "2026-03-02T08:15:00Z"  # 1772439300


def alert(**changes) -> dict:
    card = {
        "incident": INCIDENT,
        "title": "Disk full on db-01 <&>",
        "severity": "critical",
        "status": "firing",
        "services": ["checkout", "payments"],
        "started_at": STARTED,
        "url": f"https://ongrid.example/incidents/{INCIDENT}/",
        "source": "pagerduty",
        "source_url": "https://acme.pagerduty.com/incidents/Q1ABC2DEF",
        "findings": "",
        "report": None,
        "log": [],
        "buttons": ["acknowledge", "investigate", "silence"],
    }
    card.update(changes)
    return card


# --- one chat platform, as the tests read it -----------------------------------------------------


@dataclass
class Platform:
    """A fake platform with an app of `org` on it, and how to read the cards it was sent."""

    name: str
    fake: object
    channel: str

    def posted(self) -> list:
        method = {"slack": "chat.postMessage", "telegram": "sendMessage", "feishu": "im.message.create"}
        return [call for call in self.fake.called(method[self.name]) if call.status == 200]

    def message(self, ref: dict) -> tuple[str, list[tuple[str, str]]]:
        """What the card shows now: its text and its buttons as (label, data)."""
        message_id = ref["message"]
        if self.name == "slack":
            message = self.fake.messages[message_id]
            actions = [block for block in message["blocks"] if block["type"] == "actions"]
            elements = actions[0]["elements"] if actions else []
            data = [
                (e["text"]["text"], f"im:{e['action_id'].removeprefix('im_')}:{e['value']}") for e in elements
            ]
            return message["text"], data
        if self.name == "telegram":
            message = self.fake.messages[message_id]
            rows = (message["reply_markup"] or {}).get("inline_keyboard") or []
            return message["text"], [(b["text"], b["callback_data"]) for row in rows for b in row]
        buttons = self.fake.buttons(message_id)
        return self.fake.text(message_id), [(b["text"]["content"], b["value"]["im"]) for b in buttons]


PLATFORMS = ("slack", "telegram", "feishu")


@pytest.fixture(params=PLATFORMS)
def platform(request):
    fake = {"slack": FakeSlack, "telegram": FakeTelegram, "feishu": FakeFeishu}[request.param]().start()
    channel = {"slack": "C-ALERTS", "telegram": "-100200300", "feishu": "oc_alerts"}[request.param]
    yield Platform(request.param, fake, channel)
    fake.stop()


def make_app(platform: Platform, org, **fields):
    maker = {"slack": slack_app, "telegram": telegram_app, "feishu": feishu_app}[platform.name]
    return maker(org, platform.fake, **fields)


async def post(app, channel: str, card: dict, organization_id: int | None = None) -> dict:
    [(_receiver, ref)] = await alert_card_post.asend(
        sender=None,
        organization_id=app.organization_id if organization_id is None else organization_id,
        app_id=app.pk,
        channel=channel,
        card=card,
    )
    return ref


# --- posting and updating --------------------------------------------------------------------------


async def test_a_card_is_posted_at_the_channels_top_level_with_its_three_buttons(platform, org):
    app = await sync_to_async(make_app)(platform, org)

    ref = await post(app, platform.channel, alert())

    [sent] = platform.posted()
    assert "thread_ts" not in sent.body and "message_thread_id" not in sent.body  # top level
    assert json.loads(json.dumps(ref)) == ref and ref["platform"] == platform.name
    text, buttons = platform.message(ref)
    assert buttons == [
        ("Acknowledge", "im:alert-acknowledge:42"),
        ("Investigate now", "im:alert-investigate:42"),
        ("Silence 1 h", "im:alert-silence:42"),
    ]
    assert text.startswith("🔴 ") and "Disk full on db-01 &lt;&amp;&gt;" in text  # escaped, never markup
    assert "Critical · Firing" in text and "Services: checkout, payments" in text
    assert "Source: PagerDuty" in text
    assert "Incident" in text and "Open in PagerDuty" in text
    assert "https://acme.pagerduty.com/incidents/Q1ABC2DEF" in text


async def test_slack_shows_the_start_in_each_readers_time_zone_the_others_in_utc(platform, org):
    app = await sync_to_async(make_app)(platform, org)

    text, _buttons = platform.message(await post(app, platform.channel, alert()))

    if platform.name == "slack":
        assert "Started: <!date^1772439300^{date_short_pretty} {time}|2026-03-02 08:15 UTC>" in text
    else:
        assert "Started: 2026-03-02 08:15 UTC" in text


async def test_the_card_is_written_in_the_apps_language(platform, org):
    app = await sync_to_async(make_app)(platform, org, reply_language="fr")

    text, buttons = platform.message(await post(app, platform.channel, alert(severity="high")))

    assert text.startswith("🟠 ")
    assert "Élevée · En cours" in text  # severity and status as a French reader reads them
    assert "2 mars 2026 08:15 UTC" in text and "État" not in text
    assert buttons[0] == ("Acquitter", "im:alert-acknowledge:42")


def test_a_card_sent_from_synchronous_code_is_posted_too(org):
    telegram = FakeTelegram().start()
    try:
        app = telegram_app(org, telegram)
        [(_receiver, ref)] = alert_card_post.send(
            sender=None, organization_id=org.pk, app_id=app.pk, channel="-100", card=alert()
        )
        assert telegram.messages[ref["message"]]["chat_id"] == "-100"
    finally:
        telegram.stop()


async def test_an_update_edits_the_same_message_with_the_findings_the_report_and_who_did_what(platform, org):
    app = await sync_to_async(make_app)(platform, org)
    ref = await post(app, platform.channel, alert())
    later = alert(
        status="acknowledged",
        findings="The WAL filled **/var** since the 10:02 deploy.",
        report={
            "summary": "Archiving broke.",
            "root_cause": "archive_command failing",
            "confidence_word": "high",
        },
        log=["acknowledged by alice"],
        buttons=["investigate", "silence"],
    )

    results = await alert_card_update.asend(
        sender=None, organization_id=org.pk, app_id=app.pk, ref=ref, card=later
    )

    assert [answer for _receiver, answer in results] == [None]
    assert len(platform.posted()) == 1  # no new message
    text, buttons = platform.message(ref)
    assert "Critical · Acknowledged" in text
    assert "First findings" in text and "The WAL filled" in text and "since the 10:02 deploy" in text
    assert "Archiving broke." in text and "Root cause: archive_command failing" in text
    assert "Confidence: high" in text and "• acknowledged by alice" in text
    assert [data for _label, data in buttons] == ["im:alert-investigate:42", "im:alert-silence:42"]


async def test_a_sent_test_card_without_buttons_is_posted_and_carries_none(platform, org):
    app = await sync_to_async(make_app)(platform, org)
    sample = alert(incident=None, title="Test alert from Ongrid", severity="info", buttons=[], url="")

    ref = await post(app, platform.channel, sample)

    text, buttons = platform.message(ref)
    assert text.startswith("🔵 ") and "Test alert from Ongrid" in text and buttons == []
    if platform.name == "slack":
        assert platform.fake.messages[ref["message"]]["blocks"] == []
    if platform.name == "telegram":
        assert "reply_markup" not in platform.posted()[0].body


async def test_a_long_finding_is_shortened_to_fit_one_message(platform, org):
    app = await sync_to_async(make_app)(platform, org)
    card = alert(findings="disk " * 3000, report={"summary": "wal " * 2000, "root_cause": "x " * 900})

    text, _buttons = platform.message(await post(app, platform.channel, card))

    assert len(text) <= {"slack": 3000, "telegram": 4096, "feishu": 8000}[platform.name]
    assert "more characters)" in text and "Open in PagerDuty" in text


async def test_an_app_of_another_organization_or_a_disabled_one_is_refused_and_nothing_is_posted(
    platform, org, other_org
):
    theirs = await sync_to_async(make_app)(platform, other_org)
    off = await sync_to_async(make_app)(platform, org, name="Off bot", enabled=False)

    with pytest.raises(AlertCardError, match="not a chat app of organization"):
        await post(theirs, platform.channel, alert(), organization_id=org.pk)
    with pytest.raises(AlertCardError, match="disabled"):
        await post(off, platform.channel, alert())
    with pytest.raises(AlertCardError, match="not a chat app of organization"):
        await alert_card_update.asend(
            sender=None,
            organization_id=org.pk,
            app_id=theirs.pk,
            ref={"platform": platform.name, "address": {}, "message": "1"},
            card=alert(),
        )

    assert platform.fake.calls == []


@pytest.mark.parametrize("outage", ["refused", "503"])
async def test_a_platform_that_is_down_makes_the_signal_raise_for_the_sender_to_retry(platform, org, outage):
    app = await sync_to_async(make_app)(platform, org)
    ref = await post(app, platform.channel, alert())
    if outage == "refused":
        platform.fake.refuse_connections()
    else:
        platform.fake.answer_unavailable()

    with pytest.raises(AlertCardError) as posting:
        await post(app, platform.channel, alert())
    with pytest.raises(AlertCardError) as updating:
        await alert_card_update.asend(
            sender=None, organization_id=org.pk, app_id=app.pk, ref=ref, card=alert()
        )

    reason = "ConnectError" if outage == "refused" else "HTTP 503"
    assert reason in str(posting.value) and reason in str(updating.value)
    assert "503 Service Unavailable" not in str(posting.value)  # the platform's own words are never kept
    assert platform.fake.token not in str(posting.value) + str(updating.value)
    platform.fake.come_back()
    assert len(platform.posted()) == 1


async def test_a_ref_of_another_platform_is_refused(org):
    slack, telegram = FakeSlack().start(), FakeTelegram().start()
    try:
        app = await sync_to_async(slack_app)(org, slack)
        ref = {"platform": "telegram", "address": {"chat_id": "-1"}, "message": 1000}
        with pytest.raises(AlertCardError, match="not a reference"):
            await alert_card_update.asend(
                sender=None, organization_id=org.pk, app_id=app.pk, ref=ref, card=alert()
            )
        assert slack.calls == [] and telegram.calls == []
    finally:
        slack.stop()
        telegram.stop()


# --- the buttons -----------------------------------------------------------------------------------


@pytest.fixture
def pressed():
    """`alert_card_pressed` heard by a recording receiver only (the one the incidents app connects
    is set aside for the test): every press it gets, answered as the incidents app would."""
    heard: list[dict] = []

    def record(sender, **kwargs):
        heard.append({**kwargs, "language": translation.get_language()})
        return f"{kwargs['verb'].capitalize()} sent to the review gate."

    with alert_card_pressed.lock:
        kept, alert_card_pressed.receivers = alert_card_pressed.receivers, []
        alert_card_pressed.sender_receivers_cache.clear()
    alert_card_pressed.connect(record, weak=False, dispatch_uid="test-alert-card-pressed")
    yield heard
    with alert_card_pressed.lock:
        alert_card_pressed.receivers = kept
        alert_card_pressed.sender_receivers_cache.clear()


PRESSER = {"slack": "U42", "telegram": "42", "feishu": "ou_alice"}
STRANGER = {"slack": "U99", "telegram": "99", "feishu": "ou_mallory"}


async def press(platform: Platform, app, ref: dict, verb: str, who: str, update_id: int = 1) -> str:
    """Press the card's button as the platform would deliver it; what the presser was shown."""
    data = f"im:alert-{verb}:{INCIDENT}"
    if platform.name == "slack":
        payload = {
            "type": "block_actions",
            "user": {"id": who},
            "channel": {"id": ref["address"]["channel"]},
            "message": {"ts": ref["message"]},
            "actions": [{"action_id": f"im_alert-{verb}", "value": str(INCIDENT)}],
        }
        body = urlencode({"payload": json.dumps(payload)}).encode()
        response = await post_slack(
            app, "interactions", body, content_type="application/x-www-form-urlencoded"
        )
        assert response.status_code == 200
        [shown] = [e for e in platform.fake.ephemeral if e["user"] == who][-1:]
        assert shown["channel"] == "C-ALERTS" and "thread_ts" not in shown
        return shown["text"]
    if platform.name == "telegram":
        update = tg_button(
            update_id, data, user_id=int(who), chat_id=int(platform.channel), message_id=ref["message"]
        )
        assert (await post_telegram(app, update)).status_code == 200
        [answer] = [a for a in platform.fake.callback_answers if a["callback_query_id"] == f"cb-{update_id}"]
        return answer["text"]
    response = await post_feishu(
        app, feishu_button(f"ev-{update_id}", data, open_id=who, message_id=ref["message"])
    )
    assert response.status_code == 200
    return response.json()["toast"]["content"]


async def test_a_linked_users_press_is_sent_on_and_the_answer_shown_to_them_only(
    platform, org, member, pressed
):
    app = await sync_to_async(make_app)(platform, org)
    await sync_to_async(link)(app, PRESSER[platform.name], member)
    ref = await post(app, platform.channel, alert())
    messages_before = len(platform.posted())

    answer = await press(platform, app, ref, "acknowledge", PRESSER[platform.name])

    assert answer == "Acknowledge sent to the review gate."
    [heard] = pressed
    assert heard == {
        "signal": alert_card_pressed,
        "organization_id": org.pk,
        "incident_id": INCIDENT,
        "verb": "acknowledge",
        "user": member,
        "via": platform.name,
        "language": "en",  # the presser's thread language, for the answer
    }
    assert len(platform.posted()) == messages_before  # nothing said in the channel for everyone


@pytest.mark.parametrize("verb", ["investigate", "silence"])
async def test_each_button_sends_its_verb(platform, org, member, pressed, verb):
    app = await sync_to_async(make_app)(platform, org)
    await sync_to_async(link)(app, PRESSER[platform.name], member)
    ref = await post(app, platform.channel, alert())

    answer = await press(platform, app, ref, verb, PRESSER[platform.name])

    assert [heard["verb"] for heard in pressed] == [verb]
    assert answer == f"{verb.capitalize()} sent to the review gate."


async def test_an_unlinked_presser_is_asked_to_link_and_nothing_is_sent(
    platform, org, member, outsider, pressed
):
    app = await sync_to_async(make_app)(platform, org)
    await sync_to_async(link)(app, PRESSER[platform.name], member)
    # Linked to a user of another organization: treated as unlinked, like anyone unknown.
    await sync_to_async(link)(app, STRANGER[platform.name], outsider)
    ref = await post(app, platform.channel, alert())

    answer = await press(platform, app, ref, "acknowledge", STRANGER[platform.name])

    assert answer.startswith("Link your Ongrid account once, signed in, at http://127.0.0.1:8000/im/link/")
    assert pressed == []


async def test_a_press_in_a_french_app_is_handled_in_french(org, member, pressed):
    slack = FakeSlack().start()
    try:
        app = await sync_to_async(slack_app)(org, slack, reply_language="fr")
        await sync_to_async(link)(app, "U42", member)
        platform = Platform("slack", slack, "C-ALERTS")
        ref = await post(app, "C-ALERTS", alert())
        await press(platform, app, ref, "acknowledge", "U42")
        # The receiver writes its answer in the active language: the app's.
        assert [heard["language"] for heard in pressed] == ["fr"]
    finally:
        slack.stop()


async def test_a_press_nothing_answers_is_told_the_button_is_not_available(platform, org, member):
    app = await sync_to_async(make_app)(platform, org)
    await sync_to_async(link)(app, PRESSER[platform.name], member)
    ref = await post(app, platform.channel, alert())
    with alert_card_pressed.lock:
        kept, alert_card_pressed.receivers = alert_card_pressed.receivers, []
        alert_card_pressed.sender_receivers_cache.clear()
    try:
        answer = await press(platform, app, ref, "silence", PRESSER[platform.name])
    finally:
        with alert_card_pressed.lock:
            alert_card_pressed.receivers = kept
            alert_card_pressed.sender_receivers_cache.clear()

    assert answer == "This button is not available here: nothing in Ongrid handles alert buttons."
