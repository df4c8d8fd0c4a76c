"""Slack mrkdwn (https://api.slack.com/reference/surfaces/formatting): *bold*, _italics_,
`code`, ``` blocks, <url|label> links. Only &, < and > are escaped: everything else is literal."""

from __future__ import annotations

from im_app.markup import Emitter, escape, render

MRKDWN = Emitter(
    text=escape,
    code=lambda code: f"`{escape(code)}`",
    bold=lambda text: f"*{escape(text)}*",
    # "|" ends a link's URL part in Slack, so a label cannot hold one: a look-alike stands in.
    link=lambda label, url: f"<{escape(url)}|{escape(label).replace('|', '¦')}>",
    code_block=lambda code: f"```\n{escape(code)}\n```",
    emphasis=lambda text: f"_{escape(text)}_",
    # The model's *x* is left as written: Slack shows it bold, as it always has.
)


def to_mrkdwn(markdown: str) -> str:
    """Slack mrkdwn from the model's Markdown."""
    return render(markdown, MRKDWN)
