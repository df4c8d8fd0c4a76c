"""The incident page's websocket through the real ASGI stack: who may join, and the investigation
block redrawn live (out-of-band fragments) from queued/running to the finished report."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from incidents_app import investigations, runner
from ongrid_site.asgi import application
from ops_app.models import Device, Incident
from tests.support.investigations import INVESTIGATOR, answer, enable_auto, read_incident, report, submit

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = (b"origin", b"http://127.0.0.1")
HOST = (b"host", b"127.0.0.1")
DEADLINE = 20.0
T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def incident(org):
    Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    return Incident.objects.create(organization=org, title="Checkout 5xx", severity="critical", started_at=T0)


@sync_to_async
def cookie_for(client, user) -> tuple[bytes, bytes]:
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def connect(incident_id: int, headers) -> tuple[WebsocketCommunicator, bool, int | None]:
    socket = WebsocketCommunicator(application, f"/ws/incidents/{incident_id}/", headers=[HOST, *headers])
    connected, code = await socket.connect(timeout=5)
    return socket, connected, code


async def receive_until(socket, needle: str) -> str:
    """The first frame containing `needle` (earlier frames are skipped)."""
    async with asyncio.timeout(DEADLINE):
        while True:
            frame = await socket.receive_from(timeout=DEADLINE)
            if needle in frame:
                return frame


async def test_members_and_auditors_of_the_organization_may_join_others_are_refused(
    client, incident, member, auditor, outsider
):
    for user in (member, auditor):
        socket, ok, _ = await connect(incident.pk, [ORIGIN, await cookie_for(client, user)])
        assert ok
        first = await socket.receive_from(timeout=DEADLINE)  # the block as it is now
        assert 'id="investigation"' in first and 'hx-swap-oob="true"' in first
        assert "Not investigated yet." in first
        await socket.disconnect()
    _, ok, code = await connect(incident.pk, [ORIGIN, await cookie_for(client, outsider)])
    assert not ok and code == 4403
    _, ok, code = await connect(incident.pk, [ORIGIN])
    assert not ok and code == 4401


async def test_the_block_is_drawn_in_the_viewers_language(client, incident, member):
    """The browser's language over the handshake, then the user's own setting over it."""
    french = (b"accept-language", b"fr-FR,fr;q=0.9")
    socket, ok, _ = await connect(incident.pk, [ORIGIN, french, await cookie_for(client, member)])
    assert ok
    first = await socket.receive_from(timeout=DEADLINE)
    assert "Pas encore investigué." in first and "Not investigated yet." not in first
    await socket.disconnect()
    member.membership.language = "zh-hans"
    await sync_to_async(member.membership.save)(update_fields=["language"])
    socket, ok, _ = await connect(incident.pk, [ORIGIN, french, await cookie_for(client, member)])
    first = await socket.receive_from(timeout=DEADLINE)
    assert "Pas encore investigué." not in first and "Not investigated yet." not in first
    await socket.disconnect()


async def test_a_running_investigation_is_redrawn_live_until_its_report(
    client, incident, org_admin, agents_llm, settings
):
    enable_auto(settings)
    asked = threading.Event()
    release = threading.Event()

    def first_step(request):
        asked.set()
        release.wait(timeout=30)
        return read_incident()(request)

    agents_llm.add(INVESTIGATOR, first_step, submit(report({"kind": "device", "name": "db-01"})), answer())
    socket, ok, _ = await connect(incident.pk, [ORIGIN, await cookie_for(client, org_admin)])
    assert ok
    await receive_until(socket, "Not investigated yet.")

    await sync_to_async(investigations.request)(incident, org_admin)
    await sync_to_async(runner.start_queued)(incident.organization_id)
    assert await asyncio.to_thread(asked.wait, DEADLINE)
    running = await receive_until(socket, 'data-state="running"')
    assert "Running…" in running and 'class="live"' in running
    release.set()

    step = await receive_until(socket, "get_incident_detail")
    assert 'hx-swap-oob="true"' in step
    # The timeline and the investigations list are redrawn with it, not only the report block.
    assert '<ol id="timeline" class="timeline" hx-swap-oob="true">' in step
    assert "investigation step: get_incident_detail" in step and 'id="investigation-history"' in step
    done = await receive_until(socket, 'data-state="done"')
    assert "Checkout fails because its database host is down." in done
    assert "confidence 0.80 (high)" in done
    assert "/audit/calls/" in done and "get_incident_detail call</a>" in done  # evidence → its audit row
    await socket.disconnect()
