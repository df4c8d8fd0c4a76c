"""The fake vendor REST APIs the write-back tests rely on (fakes/pagerduty_api.py,
opsgenie_api.py, grafana_api.py): they check credentials, record every request with its answer,
and fail, refuse or hang when told to, as the vendors do in an outage."""

from __future__ import annotations

import httpx
import pytest

from fakes.grafana_api import FakeGrafana
from fakes.opsgenie_api import FakeOpsgenie
from fakes.pagerduty_api import ACCEPT, FakePagerDuty

NOTE = {"note": {"content": "hello"}}


def pd_headers(fake: FakePagerDuty, key: str | None = None) -> dict:
    return {"Authorization": f"Token token={key or fake.api_key}", "Accept": ACCEPT, "From": "a@example.com"}


@pytest.fixture
def pagerduty():
    fake = FakePagerDuty().start()
    yield fake
    fake.release()
    fake.stop()


def test_pagerduty_checks_the_key_accept_and_from_headers(pagerduty):
    url = f"{pagerduty.base_url}/incidents/Q1ABC2DEF/notes"
    assert httpx.post(url, json=NOTE, headers=pd_headers(pagerduty, "wrong")).status_code == 401
    no_from = {k: v for k, v in pd_headers(pagerduty).items() if k != "From"}
    assert httpx.post(url, json=NOTE, headers=no_from).status_code == 400
    assert httpx.post(url, json=NOTE, headers=pd_headers(pagerduty)).status_code == 201
    assert [r.status for r in pagerduty.requests] == [401, 400, 201]
    assert pagerduty.notes("Q1ABC2DEF") == ["hello"]


def test_fail_next_then_answer_and_hang_until_released(pagerduty):
    url = f"{pagerduty.base_url}/incidents/Q1ABC2DEF/notes"
    pagerduty.fail_next(2)
    statuses = [httpx.post(url, json=NOTE, headers=pd_headers(pagerduty)).status_code for _ in range(3)]
    assert statuses == [503, 503, 201]

    pagerduty.hang()
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(url, json=NOTE, headers=pd_headers(pagerduty), timeout=0.5)
    pagerduty.release()
    assert httpx.post(url, json=NOTE, headers=pd_headers(pagerduty)).status_code == 201


def test_refused_connections_come_back_on_the_same_url(pagerduty):
    url = f"{pagerduty.base_url}/incidents/Q1ABC2DEF/notes"
    pagerduty.refuse_connections()
    with pytest.raises(httpx.ConnectError):
        httpx.post(url, json=NOTE, headers=pd_headers(pagerduty))
    pagerduty.come_back()
    assert httpx.post(url, json=NOTE, headers=pd_headers(pagerduty)).status_code == 201


def test_opsgenie_answers_202_with_a_request_id_and_grafana_a_silence_id():
    opsgenie, grafana = FakeOpsgenie().start(), FakeGrafana().start()
    try:
        [alert_id] = opsgenie.alerts
        answer = httpx.post(
            f"{opsgenie.base_url}/v2/alerts/{alert_id}/notes?identifierType=id",
            json={"note": "n"},
            headers={"Authorization": f"GenieKey {opsgenie.api_key}"},
        )
        assert answer.status_code == 202 and answer.json()["requestId"]
        wrong = httpx.post(
            f"{opsgenie.base_url}/v2/alerts/{alert_id}/notes",
            json={"note": "n"},
            headers={"Authorization": "GenieKey x"},
        )
        assert wrong.status_code == 401
        silence = {
            "matchers": [{"name": "a", "value": "b", "isRegex": False, "isEqual": True}],
            "startsAt": "2026-01-01T00:00:00Z",
            "endsAt": "2026-01-01T01:00:00Z",
            "createdBy": "t",
            "comment": "c",
        }
        made = httpx.post(
            f"{grafana.base_url}/api/alertmanager/grafana/api/v2/silences",
            json=silence,
            headers={"Authorization": f"Bearer {grafana.token}"},
        )
        assert made.status_code == 202 and made.json()["silenceID"] == grafana.silences[0]["id"]
    finally:
        opsgenie.stop()
        grafana.stop()
