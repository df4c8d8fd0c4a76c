import pytest

from incidents_app.alerting import drain
from tests.support.alerts import card_bridge, fixed_clock  # noqa: F401 - fixtures of this folder


@pytest.fixture(autouse=True)
def _no_drainer_left():
    """A test whose rows wait (a retry, a digest) leaves a pass planned: drop it."""
    yield
    drain.stop()
