"""How tests ask for an external service: skip when a developer lacks it, fail under CI=true.

CI must never go green by skipping the very parts it exists to check."""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(available: bool, what: str) -> None:
    if available:
        return
    message = f"{what} is not available"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: a missing service is a failure)")
    pytest.skip(message)
