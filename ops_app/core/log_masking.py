"""Keep URL-borne secrets out of request logs.

Alertmanager can only put its receiver token in the webhook URL when it does not send the
`Authorization` header, so that path segment would otherwise appear in every access-log line
(daphne's), in Django's "Not Found: /api/alertmanager/<token>/" warnings and in runserver's lines.
`install()` (called by the ops app at startup) masks it in all three. Later webhooks that carry a
secret in their path add a pattern to `SECRET_PATHS`.
"""

from __future__ import annotations

import functools
import logging
import re

MASK = "[REDACTED]"
SECRET_PATHS = [re.compile(r"(/api/alertmanager/)([^/?#\s\"]+)")]
# Loggers that name the request path: Django's 4xx/5xx warnings, runserver, daphne's runserver.
REQUEST_LOGGERS = ("django.request", "django.server", "django.channels.server")


def mask_secret_paths(text: str) -> str:
    for pattern in SECRET_PATHS:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


def _mask(value):
    return mask_secret_paths(value) if isinstance(value, str) else value


class SecretPathFilter(logging.Filter):
    """Rewrites a record's message and string arguments with secret path segments masked."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = _mask(record.msg)
        if isinstance(record.args, dict):
            record.args = {key: _mask(value) for key, value in record.args.items()}
        elif isinstance(record.args, tuple):
            record.args = tuple(_mask(value) for value in record.args)
        return True


def install() -> None:
    """Attach the filter to the request loggers and mask daphne's access log (idempotent)."""
    for name in REQUEST_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, SecretPathFilter) for f in logger.filters):
            logger.addFilter(SecretPathFilter())
    _mask_daphne_access_log()


def _mask_daphne_access_log() -> None:
    # daphne writes its access log straight to a stream, not through logging: wrap its writer.
    try:
        from daphne.access import AccessLogGenerator
    except ImportError:  # pragma: no cover - daphne is a dependency
        return
    original = AccessLogGenerator.write_entry
    if getattr(original, "ongrid_masked", False):
        return

    @functools.wraps(original)
    def write_entry(self, host, date, request, *args, **kwargs):
        return original(self, host, date, mask_secret_paths(request), *args, **kwargs)

    write_entry.ongrid_masked = True
    AccessLogGenerator.write_entry = write_entry
