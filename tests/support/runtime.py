"""Fixture: the product's LLM pointed at the fake server, replies routed per agent."""

from __future__ import annotations

import dataclasses

import pytest

from agents_app.personas import registry
from fakes.llm_routing import ByAgent


@pytest.fixture
def agents_llm(fake_llm, settings):
    """Point the product at the fake LLM (through the real SDK) and route replies by agent."""
    settings.CONFIG = dataclasses.replace(
        settings.CONFIG,
        llm="openai",
        openai_api_key="test-key",
        openai_base_url=fake_llm.base_url,
        model="fake-model",
        llm_max_retries=0,
        llm_timeout=30.0,
    )
    router = ByAgent()
    fake_llm.route(router)
    return router


@pytest.fixture
def inline_executor(settings):
    """Turns run in this process even when REDIS_URL selects Celery (its own tests cover that)."""
    settings.ONGRID_EXECUTOR = "inline"


@pytest.fixture
def fresh_registry():
    """Personas re-read from files and rows before and after the test (tests that edit them)."""
    registry.reset()
    yield
    registry.reset()
