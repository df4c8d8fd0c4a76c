"""Keep secrets out of audit rows, events and logs.

Tool arguments are stored as the LLM sent them, so redaction works on the raw text and leaves
everything else byte-for-byte intact: JSON members whose key looks secret lose their value, and
well-known credential shapes (bearer tokens, API keys, `password=...` pairs) are masked anywhere.
When the text is valid JSON and a secret key holds a structured value the textual pass cannot
reach, the JSON is re-serialised with that value masked: losing formatting beats leaking.

The corpus (tests/test_redaction_corpus.py, one line per shape) records the choices: a key is
secret by its words (`db_pass`, `privateKey`, `sessionid`, `creds`) unless its last word names a
setting about a secret (`password_policy_days`, `token_count`, `secret_name` keep their values);
`-pSECRET` is masked only on MySQL/MariaDB command lines; `-u user:pass` keeps the user.
"""

from __future__ import annotations

import json
import re
from typing import Any

MASK = "[REDACTED]"

# A key is secret when, with "_", "-", "." and spaces removed and lower-cased, it contains one of
# these (so `privateKey`, `private_key` and `PRIVATE-KEY` all match "privatekey")...
SECRET_KEY_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "authorization",
    "apikey",
    "privatekey",
    "accesskey",
    "credential",
    "cookie",
    "sessionid",
)
# ...or when one of its words (split at separators and camelCase humps) is one of these, which
# are too short to match inside other words: `db_pass`, `mysqlPwd`, `creds`, but not `passed`.
SECRET_WHOLE_WORDS = frozenset({"pass", "pwd", "creds"})
# A key whose last word is one of these names a setting *about* a secret, not the secret:
# `password_policy_days`, `token_count`, `secret_name`, `password_min_length` stay readable.
METADATA_WORDS = frozenset(
    {
        "policy",
        "days",
        "age",
        "length",
        "len",
        "count",
        "limit",
        "budget",
        "usage",
        "expiry",
        "expires",
        "expiration",
        "required",
        "enabled",
        "rotation",
        "strength",
        "complexity",
        "type",
        "name",
        "names",
        "file",
        "path",
        "env",
        "url",
        "ttl",
    }
)

# Candidate keys for the textual passes; `is_secret_key` makes the decision.
_KEY_HINT = r"(?:pass|pwd|secret|token|auth|key|cred|cookie|session)"
_KEY = r"[^\"\\]*" + _KEY_HINT + r"[^\"\\]*"
# "key": "string value" | "key": scalar; an unterminated string (invalid JSON) runs to the end
_JSON_MEMBER = re.compile(
    r'(?P<head>"' + _KEY + r'"\s*:\s*)(?P<value>"(?:[^"\\]|\\.)*"?|[^\s,{}\[\]"]+)', re.IGNORECASE
)
# key=value / key: value in free text (command lines, URLs, env dumps, headers)
_PAIR = re.compile(
    r"(?P<head>\b[\w.-]*" + _KEY_HINT + r"[\w.-]*"
    r"\s*[=:]\s*)(?P<value>(?!\[REDACTED\]|(?:bearer|basic|token)\s+\[REDACTED\])[^\s&,;\"'}]+)",
    re.IGNORECASE,
)
_VALUE_PATTERNS = [
    re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),  # OpenAI and compatible
    re.compile(r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{10,}"),  # Stripe
    re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"),  # Google API keys
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),  # GitHub
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),  # Slack
    re.compile(r"\bxapp-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"\bog[at]_[A-Za-z0-9_-]{20,}"),  # Ongrid's own API and receiver tokens
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b"),  # JWT
    re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"),  # user:password@ in URLs
    # a private key block, or its beginning when the text was cut before the END line
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:.*?-----END [A-Z ]*PRIVATE KEY-----|.*)", re.DOTALL),
]
# `mysql -pSECRET` (and the other MySQL/MariaDB clients): the password glued to -p. Elsewhere
# `-p` means a port or "parents" (`ssh -p2222`, `mkdir -p`) and is left alone.
_MYSQL_COMMAND = re.compile(r"\b(?:mysql\w*|mariadb\w*)\b[^\n;|&]*", re.IGNORECASE)
_MYSQL_PASSWORD = re.compile(r"(?<=\s)-p(?=[^\s-])[^\s\"'\\]+")
# `curl -u user:pass`, `--user user:pass`, `--user=user:pass`: the user stays, the password goes.
_USER_PASSWORD = re.compile(
    r"(?<!\S)(?P<head>(?:-u|--user|--proxy-user)(?:\s+|=)['\"]?[^\s:'\"\\]+:)(?P<pw>[^\s'\"\\]+)"
)


# Keys that contain a secret word but hold counts, not credentials (`max_tokens`, `token_count`).
_NOT_SECRET = re.compile(r"tokens\b|tokens_|token_(count|limit|budget|usage)|_tokens", re.IGNORECASE)
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def is_secret_key(key: str) -> bool:
    lowered = key.lower()
    words = [word.lower() for word in _WORDS.findall(key)]
    if _NOT_SECRET.search(lowered) or (words and words[-1] in METADATA_WORDS):
        return False
    squashed = re.sub(r"[\s._-]", "", lowered)
    return any(word in squashed for word in SECRET_KEY_WORDS) or any(w in SECRET_WHOLE_WORDS for w in words)


def _mask_member(match: re.Match, quote: bool) -> str:
    head = match.group("head")
    key = re.split(r"\s*[=:]", head.strip().strip('"'), maxsplit=1)[0].strip('"')
    if not is_secret_key(key):
        return match.group(0)
    return head + (json.dumps(MASK) if quote else MASK)


def redact_text(text: str) -> str:
    """Mask credential-shaped values anywhere in free text (JSON members included)."""
    if not text:
        return text
    text = _JSON_MEMBER.sub(lambda m: _mask_member(m, quote=True), text)
    for pattern in _VALUE_PATTERNS:
        text = pattern.sub(_mask_keeping_scheme, text)
    text = _MYSQL_COMMAND.sub(lambda m: _MYSQL_PASSWORD.sub("-p" + MASK, m.group(0)), text)
    text = _USER_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
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
    text = redact_text(raw)
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    # A secret the textual pass could not reach: a structured value under a secret key, or one
    # inside a JSON-encoded string (`{"cmd": "curl -d '{\"password\": 1}'"}`).
    redacted = redact_value(parsed)
    if redacted != parsed:
        return json.dumps(redacted, ensure_ascii=False)
    return text


def redact_value(value: Any) -> Any:
    """Structured redaction of a parsed JSON value (dict keys, then credential shapes in strings)."""
    if isinstance(value, dict):
        return {
            key: (MASK if is_secret_key(str(key)) and item is not None else redact_value(item))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
