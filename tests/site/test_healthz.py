from __future__ import annotations

import dataclasses

import pytest
from django.conf import settings
from django.test import override_settings

pytestmark = pytest.mark.django_db(transaction=True)


async def test_healthz_reports_every_dependency_healthy(async_client):
    response = await async_client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["channel_layer"]["ok"] is True
    assert ("broker" in body["checks"]) == bool(settings.CONFIG.redis_url)


DEAD = "redis://127.0.0.1:1/0"


async def unhealthy(client) -> dict:
    layers = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [DEAD]}}}
    with override_settings(
        CHANNEL_LAYERS=layers, CONFIG=dataclasses.replace(settings.CONFIG, redis_url=DEAD)
    ):
        response = await client.get("/healthz")
    assert response.status_code == 503
    return response.json()


async def test_healthz_is_503_naming_the_failed_checks_without_details_for_anonymous_callers(async_client):
    body = await unhealthy(async_client)
    assert body["status"] == "unhealthy"
    assert body["failed"] == ["channel layer", "broker"]
    assert body["checks"] == {
        "database": {"ok": True},
        "channel_layer": {"ok": False},
        "broker": {"ok": False},
    }
    assert "127.0.0.1" not in str(body) and "onnect" not in str(body)


async def test_staff_see_what_went_wrong(async_client, member):
    member.is_staff = True
    await member.asave()
    await async_client.aforce_login(member)
    body = await unhealthy(async_client)
    assert body["failed"] == ["channel layer", "broker"]
    assert "onnect" in body["checks"]["channel_layer"]["detail"]  # "Connection refused" / "ConnectionError"
    assert body["checks"]["broker"]["ok"] is False
