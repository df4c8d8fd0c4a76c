"""Issue 14: bad input gets a clear 4xx (JSON on /api/) and loses nothing - Alertmanager
deliveries, knowledge uploads, persona imports."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import io
import json
import threading
import urllib.error
import urllib.request
import zlib

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import Client
from django.urls import reverse

from agents_app.models import UserAgent
from agents_app.personas import user_agents
from agents_app.personas.schema import MAX_PERSONA_BYTES, PersonaError, parse_persona
from ops_app.knowledge import vault as knowledge
from ops_app.models import Alert, AlertmanagerReceiver, Incident, KnowledgeDocument
from tests.support.required import IN_CI, require

T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)


def _alert(index: int = 0, status: str = "firing", **labels) -> dict:
    return {
        "status": status,
        "labels": {
            "alertname": "DiskFull",
            "instance": f"node-{index}:9100",
            "severity": "warning",
            **labels,
        },
        "annotations": {"summary": "Disk almost full", "description": "x" * 300},
        "startsAt": "2026-05-01T10:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus.example/graph",
        "fingerprint": f"{index:016x}",
    }


def _payload(alerts: list[dict], group_key: str = '{}:{alertname="DiskFull"}') -> dict:
    return {"version": "4", "groupKey": group_key, "status": "firing", "receiver": "ongrid", "alerts": alerts}


@pytest.fixture
def receiver(org):
    return AlertmanagerReceiver.objects.create(organization=org)


def _post(client, receiver, body) -> object:
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    url = reverse("alertmanager-webhook", args=[receiver.token])
    return client.post(url, data=data, content_type="application/json")


# --- Alertmanager -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_large_valid_delivery_is_stored(client, receiver):
    body = json.dumps(_payload([_alert(i) for i in range(6000)]))
    assert 2.6e6 < len(body) < 5 * 1024 * 1024  # over Django's 2.5 MB default, under the documented 5 MB
    response = _post(client, receiver, body)
    assert response.status_code == 200, response.content[:300]
    assert response.json()["alerts_created"] == 6000
    assert Alert.objects.count() == 6000 and Incident.objects.count() == 1


@pytest.mark.django_db
def test_a_delivery_over_the_documented_limit_is_a_json_413(client, receiver):
    body = json.dumps(_payload([_alert(0, filler="y" * (5 * 1024 * 1024))]))
    response = _post(client, receiver, body)
    assert response.status_code == 413 and "payload too large" in response.json()["error"]
    assert not Alert.objects.exists()


@pytest.mark.django_db
def test_the_same_alert_twice_in_one_delivery_is_merged(client, receiver):
    resolved = {**_alert(1, status="resolved"), "endsAt": "2026-05-01T10:05:00Z"}
    for _ in range(2):  # and again, as an Alertmanager retry would
        response = _post(client, receiver, _payload([_alert(1), _alert(2), resolved]))
        assert response.status_code == 200, response.content
    alerts = {a.fingerprint: a.status for a in Alert.objects.all()}
    assert alerts == {f"{1:016x}": "resolved", f"{2:016x}": "firing"}  # the later entry wins
    assert Incident.objects.count() == 1


@pytest.mark.django_db
def test_deeply_nested_json_is_a_clear_400(client, receiver):
    for depth in (100, 100_000):
        response = _post(client, receiver, '{"version": "4", "x": ' + "[" * depth + "]" * depth + "}")
        assert response.status_code == 400
        assert "nested too deeply" in response.json()["error"]
    assert not Incident.objects.exists()


@pytest.mark.django_db
def test_starts_at_out_of_range_is_a_clear_400(client, receiver):
    alert = {**_alert(1), "startsAt": "9999-12-31T23:59:59-05:00"}
    response = _post(client, receiver, _payload([alert]))
    assert response.status_code == 400 and "alerts[0].startsAt is out of range" in response.json()["error"]


@pytest.mark.django_db
def test_nul_characters_are_stripped_not_a_500(client, receiver):
    alert = _alert(1, team="sto\u0000rage")
    alert["annotations"]["summary"] = "Disk\u0000 full"
    response = _post(client, receiver, _payload([alert]))
    assert response.status_code == 200, response.content
    stored = Alert.objects.get()
    assert stored.labels["team"] == "storage" and stored.annotations["summary"] == "Disk full"


@pytest.mark.django_db
def test_a_transient_database_failure_asks_alertmanager_to_retry(client, receiver, monkeypatch):
    from django.db import IntegrityError

    from ops_app.estate import alertmanager

    def always_losing(receiver, payload):
        raise IntegrityError("duplicate key value violates unique constraint")

    monkeypatch.setattr(alertmanager, "_ingest_once", always_losing)
    response = _post(client, receiver, _payload([_alert(1)]))
    assert response.status_code == 503 and "retry" in response.json()["error"]
    assert response["Retry-After"]


def _on_postgresql() -> bool:
    return connection.vendor == "postgresql"


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_deliveries_of_a_new_group_make_one_incident(wide_live_server, org):
    if not _on_postgresql() and not IN_CI:
        require(False, "PostgreSQL as the test database (DATABASE_URL=postgres://...)")
    receiver = AlertmanagerReceiver.objects.create(organization=org)
    url = wide_live_server + reverse("alertmanager-webhook", args=[receiver.token])
    body = json.dumps(_payload([_alert(i) for i in range(4)])).encode()
    start = threading.Barrier(50)

    def deliver(_: int) -> int:
        request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
        start.wait(timeout=60)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    with concurrent.futures.ThreadPoolExecutor(max_workers=50) as pool:
        statuses = list(pool.map(deliver, range(50)))
    assert statuses.count(200) == 50, statuses
    assert Incident.objects.filter(organization=org).count() == 1
    assert Alert.objects.filter(organization=org).count() == 4
    assert set(Alert.objects.values_list("incident_id", flat=True)) == {Incident.objects.get().pk}


# --- JSON errors on the API ---------------------------------------------------------------------


@pytest.mark.django_db
def test_api_errors_are_json_with_an_error_key(client, member):
    assert client.get("/api/knowledge/").json()["error"]  # 403, not logged in
    client.force_login(member)
    missing = client.get("/api/no-such-endpoint/")
    assert missing.status_code == 404 and missing["Content-Type"] == "application/json"
    assert "no API endpoint" in missing.json()["error"]
    refused = client.post(
        "/api/knowledge/", {"filename": "a.md", "content": "# A"}, content_type="application/json"
    )
    assert refused.status_code == 403 and "organization admins" in refused.json()["error"]


@pytest.mark.django_db
def test_an_unexpected_api_failure_is_a_json_500(member, monkeypatch):
    from ops_app import api

    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(api.KnowledgeDocument.objects, "for_organization", explode)
    client = Client(raise_request_exception=False)
    client.force_login(member)
    response = client.get("/api/knowledge/")
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert "internal server error" in response.json()["error"]


@pytest.mark.django_db
def test_deeply_nested_json_on_any_api_endpoint_is_a_400(client, org_admin):
    client.force_login(org_admin)
    response = client.post(
        "/api/agents/custom/", "[" * 50_000 + "]" * 50_000, content_type="application/json"
    )
    assert response.status_code == 400 and "nested too deeply" in response.json()["error"]


# --- knowledge uploads --------------------------------------------------------------------------


def _bomb_pdf(inflated: int) -> bytes:
    """A one-page PDF whose content stream inflates to `inflated` bytes."""
    stream = zlib.compress(b" " * inflated, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


@pytest.mark.django_db
def test_a_pdf_bomb_is_a_clear_4xx(client, org_admin):
    pdf = _bomb_pdf(80 * 1024 * 1024)
    assert len(pdf) < 200 * 1024
    client.force_login(org_admin)
    upload = io.BytesIO(pdf)
    upload.name = "bomb.pdf"
    response = client.post("/api/knowledge/", {"file": upload})
    assert response.status_code == 400, response.content[:300]
    assert "decompresses to more than" in response.json()["error"]
    assert not KnowledgeDocument.objects.exists()


@pytest.mark.django_db
def test_a_json_upload_up_to_the_documented_limit_is_accepted(client, org_admin):
    content = "# Big runbook\n\n" + ("restart the worker and check the queue depth.\n" * 70_000)
    assert 2.6e6 < len(content) < knowledge.MAX_UPLOAD_BYTES
    client.force_login(org_admin)
    response = client.post(
        "/api/knowledge/", {"filename": "big.md", "content": content}, content_type="application/json"
    )
    assert response.status_code in (200, 202), response.content[:300]
    assert KnowledgeDocument.objects.get().title == "Big runbook"
    too_big = "x" * (knowledge.MAX_UPLOAD_BYTES + 10)
    response = client.post(
        "/api/knowledge/", {"filename": "huge.md", "content": too_big}, content_type="application/json"
    )
    assert response.status_code == 400 and "the limit is" in response.json()["error"]


# --- personas -----------------------------------------------------------------------------------

BOMB = """---
name: laughs
description: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: [*f,*f,*f,*f,*f,*f,*f,*f,*f]
when_to_use: never
---
body
"""


def test_yaml_anchors_in_a_persona_are_refused():
    with pytest.raises(PersonaError) as refused:
        parse_persona(BOMB, source="user", path="uploaded file")
    assert "anchors (&a) are not allowed" in str(refused.value)
    with pytest.raises(PersonaError, match="aliases"):
        parse_persona("---\nname: x\ndescription: *nothing\n---\nbody\n")


def test_an_oversized_persona_is_refused_before_parsing():
    text = "---\nname: big\ndescription: d\nwhen_to_use: w\n---\n" + "x" * MAX_PERSONA_BYTES
    with pytest.raises(PersonaError, match="the limit is 65536 bytes"):
        parse_persona(text)


@pytest.mark.django_db
def test_the_anchor_bomb_import_stores_nothing(org, org_admin):
    with pytest.raises(ValidationError, match="not allowed"):
        user_agents.import_markdown(BOMB, org, org_admin)
    assert not UserAgent.objects.exists()


@pytest.mark.django_db
def test_the_admin_import_refuses_the_bomb(client, org_admin):
    client.force_login(org_admin)
    response = client.post(reverse("admin:agents_app_useragent_import"), {"text": BOMB})
    assert response.status_code == 200 and "anchors (&amp;a) are not allowed" in response.content.decode()
    assert not UserAgent.objects.exists()


@pytest.mark.django_db
def test_the_custom_agents_api_caps_a_stored_persona(client, org_admin):
    client.force_login(org_admin)
    agent = {"name": "huge", "description": "d", "when_to_use": "w", "body": "x" * (MAX_PERSONA_BYTES + 1)}
    response = client.post("/api/agents/custom/", agent, content_type="application/json")
    assert response.status_code == 400
    assert "the limit is 65536 bytes" in response.json()["error"]
    assert not UserAgent.objects.exists()
