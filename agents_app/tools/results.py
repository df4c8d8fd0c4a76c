"""A tool's answer as the model reads it: compact JSON, and long lists shortened with their counts.

Tool results are most of a turn's tokens. JSON is sent without padding, and a structured answer
longer than ONGRID_TOOL_RESULT_LIMIT keeps its shape: its longest lists are cut, each ending with
a note of how many items were left out of how many, until it fits; a model reads "… 480 more items
(500 in all)" and can narrow its query, where a cut in the middle of a JSON document leaves it
guessing. What still does not fit is cut by the audit recorder's `truncate`. docs/kernel.md.
"""

from __future__ import annotations

import json
from typing import Any

# A list keeps at least this many items when it is shortened.
MIN_ITEMS = 3
MORE = "… {left} more items ({total} in all)"


def render(value: Any, limit: int | None = None) -> str:
    """`value` as text for the model: strings as they are, structures as compact JSON within `limit`."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict | list | tuple | int | float | bool):
        return str(value)
    text = _dumps(value)
    if limit is None or len(text) <= limit:
        return text
    return _dumps(shorten(value, limit))


def shorten(value: Any, limit: int) -> Any:
    """A copy of `value` whose longest lists are halved (down to MIN_ITEMS) until its JSON fits."""
    kept: dict[int, int] = {}  # id of an original list -> items kept
    while True:
        shaped = _shape(value, kept)
        if len(_dumps(shaped)) <= limit:
            return shaped
        longest = _longest(value, kept)
        if longest is None:
            return shaped
        kept[id(longest)] = max(MIN_ITEMS, kept.get(id(longest), len(longest)) // 2)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _shape(value: Any, kept: dict[int, int]) -> Any:
    if isinstance(value, dict):
        return {key: _shape(item, kept) for key, item in value.items()}
    if isinstance(value, list | tuple):
        keep = kept.get(id(value), len(value))
        items = [_shape(item, kept) for item in value[:keep]]
        if keep < len(value):
            items.append(MORE.format(left=len(value) - keep, total=len(value)))
        return items
    return value


def _longest(value: Any, kept: dict[int, int]) -> list | tuple | None:
    """The list with the most items still shown that can be shortened further, or None."""
    best, best_count = None, MIN_ITEMS
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            shown = kept.get(id(item), len(item))
            if shown > best_count:
                best, best_count = item, shown
            stack.extend(item[:shown])
    return best
