"""The one reading of the Markdown the agents write, for every platform.

The subset read: fenced code blocks, headings (written as bold lines: no platform's message has
headings), inline code, **bold**, [label](http(s) link), and *italics* where the platform's
emitter asks for them. Everything else (lists, quotes, tables, stray markup) is text, which the
emitter escapes, so nothing the model writes can form a mention, a link or broken markup.

An `Emitter` (one per platform, in `platforms/<name>/markup.py`) says how each piece is written
in that platform's markup and escapes what it is given; `render` walks the Markdown once and
calls it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

CODE_BLOCK = re.compile(r"```[\w+-]*\n?(.*?)```", re.S)
HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.M)
_SPANS = r"`([^`\n]+)`|\*\*(.+?)\*\*|\[([^\]\n]+)\]\((https?://[^)\s]+)\)"
_ITALIC = r"|(?<![\w*])\*([^*\n]+)\*(?!\w)"
SPANS = re.compile(_SPANS)
SPANS_AND_ITALICS = re.compile(_SPANS + _ITALIC)


def escape(text: str) -> str:
    """&, < and >: the characters every platform's markup reads as markup (HTML tags, Slack's
    `<…|…>` links and mentions, Feishu's `<at>` and `<font>` tags, entities)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass(frozen=True)
class Emitter:
    """One platform's way of writing each piece; every function gets the raw text and escapes it."""

    text: Callable[[str], str]
    code: Callable[[str], str]
    bold: Callable[[str], str]
    link: Callable[[str, str], str]  # (label, url)
    code_block: Callable[[str], str]
    # An emphasised line Ongrid writes itself (the placeholder), in the platform's italics.
    emphasis: Callable[[str], str]
    # Set: the model's *italics* are rendered with it. None: they stay text, as they were written.
    italic: Callable[[str], str] | None = None


def render(markdown: str, emitter: Emitter) -> str:
    """`markdown` in the emitter's markup: code blocks first (nothing inside them is markup),
    then the spans of the text between them; surrounding whitespace is dropped."""
    parts: list[str] = []
    position = 0
    for block in CODE_BLOCK.finditer(markdown):
        parts.append(_spans(markdown[position : block.start()], emitter))
        parts.append(emitter.code_block(block.group(1).rstrip()))
        position = block.end()
    parts.append(_spans(markdown[position:], emitter))
    return "".join(parts).strip()


def _spans(text: str, emitter: Emitter) -> str:
    text = HEADING.sub(lambda m: f"**{m.group(1)}**", text)
    pattern = SPANS if emitter.italic is None else SPANS_AND_ITALICS
    out: list[str] = []
    position = 0
    for match in pattern.finditer(text):
        out.append(emitter.text(text[position : match.start()]))
        out.append(_span(match, emitter))
        position = match.end()
    out.append(emitter.text(text[position:]))
    return "".join(out)


def _span(match: re.Match, emitter: Emitter) -> str:
    code, bold, label, url = match.group(1, 2, 3, 4)
    if code is not None:
        return emitter.code(code)
    if bold is not None:
        return emitter.bold(bold)
    if label is not None:
        return emitter.link(label, url)
    return emitter.italic(match.group(5))  # matched only when the emitter has italics
