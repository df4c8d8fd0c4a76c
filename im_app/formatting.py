"""Cutting a long answer into messages a platform accepts, without cutting through markup: the
Markdown is split between lines (a code block stays whole, or is re-fenced in parts), each part
is then converted on its own, so every message is well-formed on its own."""

from __future__ import annotations

from collections.abc import Callable

from im_app.markup import CODE_BLOCK


def _pieces(markdown: str) -> list[str]:
    pieces: list[str] = []
    position = 0
    for block in CODE_BLOCK.finditer(markdown):
        pieces.extend(markdown[position : block.start()].splitlines(keepends=True))
        pieces.append(block.group(0))
        position = block.end()
    pieces.extend(markdown[position:].splitlines(keepends=True))
    return pieces


def _cut(piece: str, render: Callable[[str], str], limit: int) -> list[str]:
    """A single line or code block longer than a message: hard slices, code re-fenced."""
    fenced = piece.startswith("```")
    body = piece.strip("`") if fenced else piece
    if fenced and "\n" in body:
        body = body.split("\n", 1)[1]  # drop the language tag line

    def wrap(part: str) -> str:
        return f"```\n{part}\n```" if fenced else part

    out: list[str] = []
    while body:
        size = min(len(body), limit)
        while size > 1 and len(render(wrap(body[:size]))) > limit:
            size = size * 3 // 4
        out.append(render(wrap(body[:size])))
        body = body[size:]
    return out


def split_rendered(markdown: str, render: Callable[[str], str], limit: int) -> list[str]:
    """`markdown` rendered by `render` into messages of at most `limit` characters each."""
    chunks: list[str] = []
    current = ""
    for piece in _pieces(markdown):
        if len(render(current + piece)) <= limit:
            current += piece
            continue
        if current.strip():
            chunks.append(render(current))
        current = ""
        if len(render(piece)) <= limit:
            current = piece
        else:
            chunks.extend(_cut(piece, render, limit))
    if current.strip():
        chunks.append(render(current))
    return chunks or [render(markdown)]
