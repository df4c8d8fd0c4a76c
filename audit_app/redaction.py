"""Keep secrets out of audit rows, events and logs.

Tool arguments are stored as the LLM sent them, so redaction works on the raw text and leaves
everything else byte-for-byte intact: JSON members whose key looks secret lose their value, and
well-known credential shapes (bearer tokens, API keys, `password=...` pairs) are masked anywhere.
When the text is valid JSON and a secret key holds a structured value the textual pass cannot
reach, the JSON is re-serialised with that value masked: losing formatting beats leaking.
"""

from __future__ import annotations

import json
import re
from typing import Any

MASK = "[REDACTED]"

SECRET_KEY_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "authorization",
    "api_key",
    "apikey",
    "api-key",
    "private_key",
    "access_key",
    "client_secret",
    "credential",
    "cookie",
    "session_id",
)

_KEY = r"[^\"\\]*(?:" + "|".join(re.escape(word) for word in SECRET_KEY_WORDS) + r")[^\"\\]*"
# "key": "string value" | "key": scalar; an unterminated string (invalid JSON) runs to the end
_JSON_MEMBER = re.compile(
    r'(?P<head>"' + _KEY + r'"\s*:\s*)(?P<value>"(?:[^"\\]|\\.)*"?|[^\s,{}\[\]"]+)', re.IGNORECASE
)
# key=value / key: value in free text (command lines, URLs, env dumps, headers)
_PAIR = re.compile(
    r"(?P<head>\b[\w-]*(?:" + "|".join(re.escape(word) for word in SECRET_KEY_WORDS) + r")[\w-]*"
    r"\s*[=:]\s*)(?P<value>(?!\[REDACTED\]|(?:bearer|basic|token)\s+\[REDACTED\])[^\s&,;\"'}]+)",
    re.IGNORECASE,
)
_VALUE_PATTERNS = [
    re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b"),  # JWT
    re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"),  # user:password@ in URLs
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.DOTALL),
]


# Keys that contain a secret word but hold counts, not credentials (`max_tokens`, `token_count`).
_NOT_SECRET = re.compile(r"tokens\b|tokens_|token_(count|limit|budget|usage)|_tokens", re.IGNORECASE)


def is_secret_key(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in SECRET_KEY_WORDS) and not _NOT_SECRET.search(lowered)


def _mask_member(match: re.Match, quote: bool) -> str:
    head = match.group("head")
    key = re.split(r"\s*[=:]", head.strip().strip('"'), maxsplit=1)[0].strip('"')
    if not is_secret_key(key):
        return match.group(0)
    return head + (json.dumps(MASK) if quote else MASK)


def redact_text(text: str) -> str:
    """Mask credential-shaped values anywhere in free text."""
    if not text:
        return text
    for pattern in _VALUE_PATTERNS:
        text = pattern.sub(_mask_keeping_scheme, text)
    return _PAIR.sub(lambda m: _mask_member(m, quote=False), text)


def _mask_keeping_scheme(match: re.Match) -> str:
    word = match.group(0).split(None, 1)
    if len(word) == 2 and word[0].lower() in {"bearer", "basic", "token"}:
        return f"{word[0]} {MASK}"
    return MASK


def redact_arguments(raw: str) -> str:
    """Redact tool-call arguments, keeping the LLM's exact text everywhere else."""
    if not raw:
        return raw
    text = _JSON_MEMBER.sub(lambda m: _mask_member(m, quote=True), raw)
    text = redact_text(text)
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    if _holds_structured_secret(parsed):
        return json.dumps(redact_value(parsed), ensure_ascii=False)
    return text


def redact_value(value: Any) -> Any:
    """Structured redaction of a parsed JSON value (dict keys, then credential shapes in strings)."""
    if isinstance(value, dict):
        return {key: (MASK if is_secret_key(str(key)) else redact_value(item)) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def _holds_structured_secret(value: Any) -> bool:
    if isinstance(value, dict):
        for key, item in value.items():
            if is_secret_key(str(key)) and item != MASK and item is not None:
                return True
            if _holds_structured_secret(item):
                return True
    elif isinstance(value, list):
        return any(_holds_structured_secret(item) for item in value)
    return False
