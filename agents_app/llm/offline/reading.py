"""Reading a request: its content words, the concepts its symptoms stand for, and the facts (devices,
URLs, paths, numbers) a tool argument could need."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .vocabulary import (
    COMMON_STATUSES,
    CONCEPTS,
    DOMAIN_CONCEPTS,
    FAILURE_CONCEPTS,
    ID_BEFORE,
    STATUS_AFTER,
    STATUS_BEFORE,
    STOPWORDS,
)

DEVICE = re.compile(r"\b[a-z][a-z0-9]*(?:[-.][a-z0-9]+)*-\d+[a-z0-9-]*\b", re.IGNORECASE)
_IP = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")
_URL = re.compile(r"https?://[^\s\"'<>)]+")
_PATH = re.compile(r"(?<![\w:/.])/(?:[\w.\-]+/?)*")
_DOMAIN = re.compile(r"\b(?:[a-z0-9-]+\.)+[a-z]{2,}\b", re.IGNORECASE)
_HAN = re.compile(r"[\u3400-\u9fff]")
_CJK_TERMS = frozenset(term for symptoms in CONCEPTS for term in symptoms if _HAN.search(term))
_NUMBER = re.compile(r"(?<![\w-])(#?)(\d+)\b")
# "on web", "host db-primary", "server ongrid-manager": the word after such a cue names a device even
# without the digits `DEVICE` expects.
_DEVICE_CUE = re.compile(
    r"\b(?:on|host|server|device|node|machine)\s+([a-z][a-z0-9]*(?:[-.][a-z0-9]+)+)\b"
    r"|\b([a-z][a-z0-9]*(?:[-.][a-z0-9]+)+)\s*(?:上|的)",  # Chinese puts the cue after: "web 上", "web 的"
    re.IGNORECASE,
)


def words(text: str) -> set[str]:
    """Lower-cased content words, crudely singularised, so 'disks' meets 'disk'; in Chinese, which
    puts no spaces between words, the vocabulary's own terms found anywhere in the text."""
    found = {term for term in _CJK_TERMS if term in text}
    for word in re.findall(r"\w+", text.lower()):
        if word in STOPWORDS or len(word) < 2:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.add(word)
    return found


def request_words(text: str) -> set[str]:
    """`words` plus the concepts its symptoms stand for, so "checkout is failing" meets "incident"."""
    found = words(text)
    for symptoms, concepts in CONCEPTS.items():
        if found & symptoms:
            found |= concepts
    return found


def routing_words(text: str) -> set[str]:
    """The concepts a request implies for routing. A domain symptom outranks a generic one: in
    "certificate error" the error is the certificate's, so the request does not also read as an
    incident to investigate; "checkout is failing" alone does."""
    found = words(text)
    implied = _implied(found, DOMAIN_CONCEPTS) or _implied(found, FAILURE_CONCEPTS)
    return implied - found


def _implied(found: set[str], concepts: dict[frozenset[str], set[str]]) -> set[str]:
    implied: set[str] = set()
    for symptoms, meant in concepts.items():
        if found & symptoms:
            implied |= meant
    return implied


def plain_numbers(text: str) -> list[int]:
    """The numbers in `text` that may fill an argument; HTTP statuses are not among them."""
    return [value for value, _explicit in _numbers(text)]


def explicit_ids(text: str) -> list[int]:
    """The numbers written as ids ("#12", "incident 12"): only these fill an id argument, so the
    24 of "the last 24 hours" is never taken for incident 24."""
    return [value for value, explicit in _numbers(text) if explicit]


def _numbers(text: str) -> list[tuple[int, bool]]:
    found = []
    for match in _NUMBER.finditer(text):
        value = int(match.group(2))
        before = re.findall(r"[\w°º]+", text[: match.start()].lower())[-1:]
        after = re.findall(r"\w+", text[match.end() :].lower())[:1]
        explicit_id = match.group(1) == "#" or bool(before and before[0] in ID_BEFORE)
        if 100 <= value <= 599 and not explicit_id:
            cued = (before and before[0] in STATUS_BEFORE) or (after and after[0] in STATUS_AFTER)
            if cued or value in COMMON_STATUSES:
                continue
        found.append((value, explicit_id))
    return found


@dataclass(frozen=True)
class Facts:
    """What the request mentions that a tool argument could need."""

    text: str
    devices: list[str]
    urls: list[str]
    paths: list[str]
    domains: list[str]
    numbers: list[int]
    ids: list[int]

    @classmethod
    def of(cls, text: str) -> Facts:
        urls = _URL.findall(text)
        without_urls = _URL.sub(" ", text)
        cued = [before or after for before, after in _DEVICE_CUE.findall(without_urls)]
        devices = DEVICE.findall(without_urls) + _IP.findall(without_urls) + cued
        return cls(
            text=text,
            devices=list(dict.fromkeys(devices)),
            urls=urls,
            paths=_PATH.findall(without_urls),
            domains=[d for d in _DOMAIN.findall(without_urls) if not _IP.fullmatch(d)],
            numbers=plain_numbers(DEVICE.sub(" ", without_urls)),
            ids=explicit_ids(DEVICE.sub(" ", without_urls)),
        )


def device_key(name: str) -> tuple[str, ...]:
    """The parts of a device name that matter: letters lower-cased, numbers as numbers, separators
    dropped, so `web-1`, `WEB_01` and `web01` are one key."""
    return tuple(
        str(int(part)) if part.isdigit() else part for part in re.findall(r"[a-z]+|\d+", name.lower())
    )


def match_device(asked: str, known: list[str]) -> str | None:
    """The known device `asked` means: an exact name first, else one with the same `device_key`."""
    for name in known:
        if name == asked:
            return name
    key = device_key(asked)
    return next((name for name in known if device_key(name) == key), None)
