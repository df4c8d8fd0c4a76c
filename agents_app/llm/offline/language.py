"""Which of the offline model's languages a request is written in."""

from __future__ import annotations

import re

from .vocabulary import LANGUAGE_LETTERS, LANGUAGE_WORDS

# The languages its fixed phrases are translated into (locale/*/LC_MESSAGES/django.po); English
# is the source and the fallback.
LANGUAGES = ("en", "es", "fr", "zh-hans")
# Han ideographs (the CJK Unified Ideographs block and its extension A): a question written in
# Chinese, whatever Latin device or tool names it quotes.
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def detect_language(text: str) -> str:
    """'en', 'es', 'fr' or 'zh-hans' for a message: Chinese when it holds at least two Han
    characters and they outnumber the Latin stop words (so "磁盘满了 on web-01" is Chinese and an
    English question quoting one Chinese word is not); otherwise by counting stop words and
    telltale letters; ties → 'en'."""
    han = len(_HAN.findall(text))
    lowered = text.lower()
    tokens = re.findall(r"\w+", lowered)
    scores = {
        language: sum(token in vocabulary for token in tokens)
        for language, vocabulary in LANGUAGE_WORDS.items()
    }
    for language, letters in LANGUAGE_LETTERS.items():
        scores[language] += 2 * sum(lowered.count(letter) for letter in letters)
    best = max(scores.values())
    if han >= 2 and han > best:
        return "zh-hans"
    if best == 0 or scores["en"] == best:
        return "en"
    return max(("es", "fr"), key=lambda language: scores[language])
