"""Async tests reach the ORM through asgiref's worker thread, whose connection outlives the test.

Closing it afterwards lets pytest-django drop the PostgreSQL test database at the end of the run."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.db import connections


@pytest.fixture
async def close_async_db_connections():
    yield
    await sync_to_async(connections.close_all)()
