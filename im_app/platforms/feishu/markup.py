"""Feishu card markdown (https://open.feishu.cn/document/common-capabilities/message-card/
message-cards-content/using-markdown-tags): **bold**, *italics*, `code`, ``` blocks, [label](url).
Cards also read `<at …>` and `<font …>` tags and entities, so &, < and > are escaped: the model's
text can never mention everyone or restyle the card."""

from __future__ import annotations

from im_app.markup import Emitter, escape, render

CARD_MARKDOWN = Emitter(
    text=escape,
    code=lambda code: f"`{code}`",
    bold=lambda text: f"**{escape(text)}**",
    # "]" would end the label early.
    link=lambda label, url: f"[{escape(label).replace(']', '')}]({url})",
    code_block=lambda code: f"```\n{code}\n```",
    emphasis=lambda text: f"*{escape(text)}*",
    # The model's *x* is left as written: card markdown reads it as italics itself.
)


def to_card_markdown(markdown: str) -> str:
    """Card markdown from the model's Markdown."""
    return render(markdown, CARD_MARKDOWN)
