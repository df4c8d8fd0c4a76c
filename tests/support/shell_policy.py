"""Row checks for the host_bash policy's test tables (tests/agents/shell_policy/).

A table is two lists: ALLOWED rows `(command line, argv lists or None)`, where None means "runs,
whatever its words", and REFUSED rows `(command line, fragment)`, where the fragment is a piece
of the refusal message the user reads: the refused part in backticks, or the reason's key words.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agents_app.toolsets.hosts.shell_policy import PROGRAMS, PolicyRefusal, check
from agents_app.toolsets.hosts.transport import Script

Allowed = tuple[str, list[list[str]] | None]
Refused = tuple[str, str]


def ids(rows: Sequence[tuple[str, object]]) -> list[str]:
    """Readable, unique test ids: the command line itself (shortened, newlines shown)."""
    return [f"{index}:{repr(line)[1:-1][:50]}" for index, (line, _) in enumerate(rows)]


def assert_allowed(line: str, argv: list[list[str]] | None, protected: Sequence[str] = ()) -> Script:
    """The line runs, as the argv lists given (when given), and only allowlisted programs run."""
    script = check(line, protected=protected)
    commands = [list(command) for pipeline in script.pipelines for command in pipeline]
    if argv is not None:
        assert commands == argv
    assert all(command[0] in PROGRAMS for command in commands)
    return script


def assert_refused(line: str, fragment: str, protected: Sequence[str] = ()) -> PolicyRefusal:
    """The line is refused, and the message names the fragment and always gives a reason."""
    with pytest.raises(PolicyRefusal) as refusal:
        check(line, protected=protected)
    assert fragment in str(refusal.value)
    assert refusal.value.reason
    return refusal.value


def policy_table(allowed: Sequence[Allowed], refused: Sequence[Refused]) -> tuple[object, object]:
    """The two parametrised tests of a table module: `test_allowed, test_refused = policy_table(...)`."""

    @pytest.mark.parametrize("line,argv", allowed, ids=ids(allowed))
    def test_allowed(line: str, argv: list[list[str]] | None) -> None:
        assert_allowed(line, argv)

    @pytest.mark.parametrize("line,fragment", refused, ids=ids(refused))
    def test_refused(line: str, fragment: str) -> None:
        assert_refused(line, fragment)

    return test_allowed, test_refused
