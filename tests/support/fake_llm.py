"""Pytest fixture for the fake OpenAI-compatible server (`fakes/openai_server.py`).

Registered for the whole suite by tests/conftest.py.
"""

from __future__ import annotations

import pytest

from fakes.openai_server import FakeLLM


@pytest.fixture
def fake_llm():
    """A started FakeLLM on a free loopback port: `.base_url`, `.script(...)`, `.requests`."""
    server = FakeLLM().start()
    try:
        yield server
    finally:
        server.stop()
