"""The fixed phrases the offline model writes into its replies, translated by gettext.

The messages are marked here (`gettext_noop`, so `makemessages` finds them) and translated when
a reply is written, in the language of the request rather than the one active around the call:
the model answers in the user's language whoever runs it.
"""

from __future__ import annotations

from typing import Any

from django.utils import translation
from django.utils.translation import gettext, gettext_noop

from .language import LANGUAGES

LABEL = gettext_noop("(Answer from Ongrid's offline model — a deterministic stand-in, not a real LLM.)")
FOUND = gettext_noop("Here is what the specialist found:")
RAN = gettext_noop("I ran %(count)s tool call(s). What they returned:")
ENDED = gettext_noop("(the specialist ended %(status)s)")
HELLO = gettext_noop("Hello. Ask me about your systems.")
CANNOT = gettext_noop(
    'You asked: "%(request)s". I cannot answer that on my own because %(why)s; '
    "configure a real LLM (OPENAI_API_KEY) for open questions."
)
WHY_NO_FIT = gettext_noop("none of my tools fits it")
WHY_NO_TOOLS = gettext_noop("I have no tools here")
READ_AS = gettext_noop("I read `%(asked)s` as the device `%(found)s`.")
NOT_DONE = gettext_noop(
    "**I did not %(action)s.** This is Ongrid's offline model, which never makes changes: a change "
    "goes through the review gate (the reviewer agent, and for some agents a person, must approve it) "
    "and needs a real LLM to propose it — configure OPENAI_API_KEY. Nothing was changed."
)


def phrase(language: str, message: str, **fields: Any) -> str:
    """`message` in `language` (English for a language the model does not write), fields filled in."""
    with translation.override(language if language in LANGUAGES else "en"):
        text = gettext(message)
    return text % fields if fields else text


def labels() -> tuple[str, ...]:
    """The closing label in every language, to take out of a specialist's report when relaying it."""
    return tuple(phrase(language, LABEL) for language in LANGUAGES)
