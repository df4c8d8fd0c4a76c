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


async def test_healthz_is_503_with_the_reason_when_redis_is_unreachable(async_client):
    dead = "redis://127.0.0.1:1/0"
    layers = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [dead]}}}
    with override_settings(
        CHANNEL_LAYERS=layers, CONFIG=dataclasses.replace(settings.CONFIG, redis_url=dead)
    ):
        response = await async_client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unhealthy"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["channel_layer"]["ok"] is False
    assert "onnect" in body["checks"]["channel_layer"]["detail"]  # "Connection refused" / "ConnectionError"
    assert body["checks"]["broker"]["ok"] is False
