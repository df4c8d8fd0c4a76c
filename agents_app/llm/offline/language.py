"""Which of the offline model's languages a request is written in (the project's one detector,
`ops_app.knowledge.languages.detect_language`, with English as the fallback)."""

from __future__ import annotations

from ops_app.knowledge.languages import LANGUAGES
from ops_app.knowledge.languages import detect_language as _detect

__all__ = ["LANGUAGES", "detect_language"]


def detect_language(text: str) -> str:
    """'en', 'es', 'fr' or 'zh-hans' for a message; English (the source language) when nothing tells."""
    return _detect(text, fallback="en")
