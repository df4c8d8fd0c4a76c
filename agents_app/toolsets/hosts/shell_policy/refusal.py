"""The policy's one exception, shared by every stage so that a refusal always reads the same:
the offending piece of the command line and the reason in plain words."""

from __future__ import annotations


class PolicyRefusal(Exception):
    """A command line the policy will not run. `part` is the offending piece, `reason` the why."""

    def __init__(self, part: str, reason: str) -> None:
        self.part = part
        self.reason = reason
        super().__init__(f"refused `{part}`: {reason}")
