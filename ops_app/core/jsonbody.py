"""Request bodies read under an explicit cap, and JSON decoded with a nesting limit.

Django refuses any body over DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) with an HTML 400 the first time
`request.body` is touched. Endpoints with a larger documented limit (the Alertmanager webhook, the
knowledge upload) read the stream themselves through `read_body`, and every JSON body goes through
`decode_json`, so a deeply nested document is a clear 400 instead of a RecursionError.
"""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import BaseParser

MAX_DEPTH = 32


class BodyTooLarge(Exception):
    def __init__(self, limit: int, size: int | None = None):
        self.limit = limit
        self.size = size
        shown = f"{size} bytes" if size is not None else f"more than {limit} bytes"
        super().__init__(f"the request body is {shown}; the limit is {limit} bytes")


class JSONBodyError(ValueError):
    """The body is not acceptable JSON; the message says why."""


def read_body(request, limit: int, stream=None) -> bytes:
    """The raw body of `request` (or of `stream`, read on its behalf), refusing more than `limit`
    bytes: by the Content-Length header first, then by what actually arrives."""
    try:
        size = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        size = 0
    if size > limit:
        raise BodyTooLarge(limit, size)
    data = (request if stream is None else stream).read(limit + 1)
    if len(data) > limit:
        raise BodyTooLarge(limit)
    return data


def _no_constants(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def decode_json(raw: bytes | str, *, max_depth: int = MAX_DEPTH, strip_nul: bool = False) -> object:
    """Decode strict JSON (no NaN/Infinity), refusing nesting deeper than `max_depth`; optionally
    drop NUL characters from every string (PostgreSQL's jsonb and text columns cannot store them)."""
    try:
        data = json.loads(raw, parse_constant=_no_constants)
    except RecursionError:
        raise JSONBodyError(f"the JSON is nested too deeply (the limit is {max_depth} levels)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise JSONBodyError(f"body is not JSON: {exc}") from None
    return _checked(data, max_depth, strip_nul)


def _checked(data: object, max_depth: int, strip_nul: bool) -> object:
    """Walk the decoded value without recursion: check the depth, clean the strings in place."""
    if strip_nul and isinstance(data, str):
        return data.replace("\x00", "")
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if depth > max_depth:
            raise JSONBodyError(f"the JSON is nested too deeply (the limit is {max_depth} levels)")
        if isinstance(node, list):
            for index, item in enumerate(node):
                if strip_nul and isinstance(item, str):
                    node[index] = item.replace("\x00", "")
                else:
                    stack.append((item, depth + 1))
        else:
            if strip_nul and any("\x00" in key for key in node):
                for key in [key for key in node if "\x00" in key]:
                    node[key.replace("\x00", "")] = node.pop(key)
            for key, value in node.items():
                if strip_nul and isinstance(value, str):
                    node[key] = value.replace("\x00", "")
                else:
                    stack.append((value, depth + 1))
    return data


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "the request body is too large"
    default_code = "payload_too_large"


class LimitedJSONParser(BaseParser):
    """DRF's JSON parser, with a body cap (`max_bytes`, default DATA_UPLOAD_MAX_MEMORY_SIZE) and a
    nesting limit. Deliberately not a JSONParser subclass: DRF reads `request.body` (and so Django's
    2.5 MB limit) for those before parsing."""

    media_type = "application/json"
    max_bytes: int | None = None

    def parse(self, stream, media_type=None, parser_context=None):
        limit = self.max_bytes or settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 2_621_440
        if stream is None:
            return {}
        request = (parser_context or {}).get("request")
        try:
            raw = read_body(request, limit, stream) if request is not None else stream.read()
        except BodyTooLarge as exc:
            raise PayloadTooLarge(str(exc)) from None
        try:
            return decode_json(raw)
        except JSONBodyError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
