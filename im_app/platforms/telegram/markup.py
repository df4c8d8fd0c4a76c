"""Telegram's HTML subset (https://core.telegram.org/bots/api#html-style): <b>, <i>, <code>,
<pre>, <a href>. Text is HTML-escaped (&, <, >), and a link's URL also its quotes."""

from __future__ import annotations

import html

from im_app.markup import Emitter, escape, render

HTML = Emitter(
    text=escape,
    code=lambda code: f"<code>{escape(code)}</code>",
    bold=lambda text: f"<b>{escape(text)}</b>",
    link=lambda label, url: f'<a href="{html.escape(url)}">{escape(label)}</a>',
    code_block=lambda code: f"<pre>{escape(code)}</pre>",
    emphasis=lambda text: f"<i>{escape(text)}</i>",
    italic=lambda text: f"<i>{escape(text)}</i>",
)


def to_html(markdown: str) -> str:
    """Telegram HTML from the model's Markdown."""
    return render(markdown, HTML)
