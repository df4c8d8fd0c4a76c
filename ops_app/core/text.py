"""Cutting long text for display without cutting a word in two.

An error cut mid-word ("…or choose t") reads like a bug, and hides how much is missing. Surfaces
that show a bounded excerpt (a worker's report, an approval card, a proposal's error) cut here:
at the last space before the limit, with how many characters were left out, so a reader knows to
open the audit record, which keeps the full text.
"""

from __future__ import annotations

from django.utils.translation import ngettext

# A word longer than this share of the limit (a URL, a base64 blob) is cut where the limit falls.
_SHORTEST_HEAD = 0.5


def cut_at_word(text: str, limit: int) -> str:
    """`text` when it fits in `limit` characters; else its head up to the last space before the
    limit, then "… (N more characters)" (N counts what the head leaves out)."""
    if len(text) <= limit:
        return text
    space = max(text.rfind(" ", 0, limit + 1), text.rfind("\n", 0, limit + 1))
    end = space if space >= limit * _SHORTEST_HEAD else limit
    head = text[:end].rstrip()
    left = len(text) - len(head)
    note = ngettext("(%(count)d more character)", "(%(count)d more characters)", left) % {"count": left}
    return f"{head}… {note}"
