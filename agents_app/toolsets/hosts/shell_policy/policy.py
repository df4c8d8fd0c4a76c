"""The check that ties the stages together: lex, split, parse each command, vet its words.

The result of a successful check is a `Script`: the exact structure that will run. Transports
execute that structure (argv lists; SSH quotes every word), never the original text, so a word
can never become an operator after the check.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agents_app.toolsets.hosts.transport import Script

from .families import REFUSED_PROGRAMS
from .grammar import Parsed
from .lexer import check_raw, lex, split
from .local import check_local_command, protected_roots
from .programs import PROGRAMS
from .refusal import PolicyRefusal
from .secrets import check_recursive_root, check_secret_word

MAX_STAGES = 8

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def check(command_line: str, protected: Sequence[str] = ()) -> Script:
    """Return the Script to run for `command_line`, or raise PolicyRefusal saying what and why.

    `protected` lists absolute directories of the Ongrid host no argument may resolve into, nor
    a recursive read cover: the local transport passes Ongrid's data, code and virtualenv folders
    with /proc and /sys. With it, paths are resolved on this machine (symbolic links included)."""
    check_raw(command_line)
    pipelines, operators = split(lex(command_line))
    stages = sum(len(p) for p in pipelines)
    if stages > MAX_STAGES:
        raise PolicyRefusal(command_line[:60], f"at most {MAX_STAGES} commands per line")
    roots = protected_roots(protected)
    for pipeline in pipelines:
        for argv in pipeline:
            parsed = parse_command(argv)
            if roots:
                check_local_command(parsed, argv, roots)
    return Script(tuple(tuple(tuple(a) for a in p) for p in pipelines), tuple(operators))


def parse_command(argv: Sequence[str]) -> Parsed:
    """Check one command on every transport and return it parsed, or raise PolicyRefusal."""
    program, args = argv[0], list(argv[1:])
    if _ASSIGNMENT.match(program):
        raise PolicyRefusal(program, "environment assignments before a command are not allowed")
    if "/" in program:
        raise PolicyRefusal(program, "give the program's name, not a path")
    if program in REFUSED_PROGRAMS:
        raise PolicyRefusal(program, f"`{program}` {REFUSED_PROGRAMS[program]}")
    grammar = PROGRAMS.get(program)
    if grammar is None:
        raise PolicyRefusal(program, f"`{program}` is not on the list of read-only inspection programs")
    for word in args:
        check_secret_word(word)
        if word.startswith("-") and "=" in word:
            check_secret_word(word.partition("=")[2])
    parsed = grammar.parse(program, args)
    for value in parsed.files:
        check_secret_word(value)
    for root, contents in parsed.recursive:
        if contents:
            check_recursive_root(program, root)
    return parsed
