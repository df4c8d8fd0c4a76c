"""Reasons and rules more than one family of programs shares."""

from __future__ import annotations

from ..grammar import Parsed
from ..refusal import PolicyRefusal

FOLLOW = "following output never ends"
WRITES = "this option writes a file"
RUNS = "this option runs another program"
OTHER_HOST = "reaching other hosts, containers or images is not allowed"


def no_operands(parsed: Parsed) -> None:
    """For programs whose operands would set something or mean nothing read-only."""
    if parsed.operands:
        raise PolicyRefusal(f"{parsed.program} {parsed.operands[0]}", "this program takes no operands here")


def recursive_walk(parsed: Parsed, contents: bool, default: str = ".") -> None:
    """Record the walks the command makes, so the secret and local-device checks can vet them."""
    for root in parsed.operands or [default]:
        parsed.recursive.append((root, contents))
