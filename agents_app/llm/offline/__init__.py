"""The offline model: a deterministic stand-in so Ongrid runs, demos and tests with no LLM at all.

It plays the same protocol as a real model, from the same inputs a real model sees:

- coordinator (AgentTool among its tools): reads the agent catalog in its system prompt, routes
  the user's words to the specialist whose name, description and when-to-use share the most words
  with them, and dispatches it with a self-contained brief (`routing`); when the specialist's
  result comes back, it relays it (`summaries`).
- worker (or a coordinator with no specialist that fits): calls up to three of its own read tools
  whose names and descriptions fit the request, filling required arguments from the words (device
  names, paths, URLs, numbers, schema defaults; `planning`); when the results come back it
  summarises them.
- nothing fits, or no tools: it answers plainly.
- the reviewer (`review`) and the investigator (`investigation`) have runs of their own.

Every final answer says it comes from the offline model. It is not clever and never pretends to be.
It is also honest about what it did not do (docs/kernel.md, "The offline model"; `honesty`): asked
for a change ("restart nginx on web-1") it says in words that nothing was changed and why; it reads
device names loosely (`web-1` is `web-01`) by listing the devices first, as a real model would; its
fixed phrases (`phrases`, translated in the gettext catalogs) follow the user's language (English,
Spanish, French, Simplified Chinese; `language`); an HTTP status ("returns 502") is never taken for
an incident number; and its tool call ids never repeat within a session, so the audit tree's
dispatch → worker links stay right.

The words it reads to recognise a request are in `vocabulary`; the few tools it knows by name, in
`tool_knowledge`.
"""

from __future__ import annotations

from .language import detect_language
from .phrases import LABEL
from .provider import OfflineProvider, respond
from .reading import match_device
from .routing import best_specialist, parse_catalog
from .summaries import describe, summarise

__all__ = [
    "LABEL",
    "OfflineProvider",
    "best_specialist",
    "describe",
    "detect_language",
    "match_device",
    "parse_catalog",
    "respond",
    "summarise",
]
