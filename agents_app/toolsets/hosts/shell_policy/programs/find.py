"""`find`, whose command line is an expression rather than options.

Its primaries have fixed arities, so the expression is read word by word; the actions that
delete, write or run programs are refused by name, and every walk is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..grammar import NEEDS_VALUE, Custom, Grammar, Parsed, refuse_option
from .common import recursive_walk

# find: global options, start paths, then an expression of primaries with fixed arities.
_FIND_FILE_ARGUMENTS = {"-anewer", "-cnewer", "-newer", "-samefile", "-files0-from"}
_FIND_PRIMARIES: dict[str, int] = {
    # options
    "-daystart": 0, "-depth": 0, "-d": 0, "-follow": 0, "-ignore_readdir_race": 0, "-maxdepth": 1,
    "-mindepth": 1, "-mount": 0, "-noignore_readdir_race": 0, "-noleaf": 0, "-regextype": 1,
    "-warn": 0, "-nowarn": 0, "-xdev": 0, "-files0-from": 1, "-help": 0, "-version": 0,
    # tests
    "-amin": 1, "-anewer": 1, "-atime": 1, "-cmin": 1, "-cnewer": 1, "-ctime": 1, "-empty": 0,
    "-executable": 0, "-false": 0, "-fstype": 1, "-gid": 1, "-group": 1, "-ilname": 1, "-iname": 1,
    "-inum": 1, "-ipath": 1, "-iregex": 1, "-iwholename": 1, "-links": 1, "-lname": 1, "-mmin": 1,
    "-mtime": 1, "-name": 1, "-newer": 1, "-nogroup": 0, "-nouser": 0, "-path": 1, "-perm": 1,
    "-readable": 0, "-regex": 1, "-samefile": 1, "-size": 1, "-true": 0, "-type": 1, "-uid": 1,
    "-used": 1, "-user": 1, "-wholename": 1, "-writable": 0, "-xtype": 1, "-context": 1,
    # actions that only print to standard output
    "-print": 0, "-print0": 0, "-printf": 1, "-ls": 0, "-prune": 0, "-quit": 0,
    # operators
    "(": 0, ")": 0, "!": 0, "-not": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0, ",": 0,
}  # fmt: skip
_FIND_DENIED = {
    name: "this action deletes, writes files or runs programs"
    for name in ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls")
}
_FIND_NEWER = re.compile(r"-newer[aBcmt][aBcmt]")


def _parse_find(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    words = list(args)
    while words and (words[0] in {"-H", "-L", "-P"} or re.fullmatch(r"-O\d", words[0]) or words[0] == "-D"):
        option = words.pop(0)
        value = words.pop(0) if option == "-D" and words else None
        if option == "-D" and value is None:
            raise refuse_option(program, option, NEEDS_VALUE)
        parsed.options.append((option, value))
    while (
        words
        and not (words[0].startswith("-") and len(words[0]) > 1)
        and words[0] not in {"(", ")", "!", ","}
    ):
        root = words.pop(0)
        parsed.operands.append(root)
        parsed.files.append(root)
    while words:
        primary = words.pop(0)
        if primary in _FIND_DENIED:
            raise refuse_option(program, primary, _FIND_DENIED[primary])
        arity = 1 if _FIND_NEWER.fullmatch(primary) else _FIND_PRIMARIES.get(primary)
        if arity is None:
            raise refuse_option(program, primary, "unknown find primary (or a path after the expression)")
        value = None
        if arity:
            if not words:
                raise refuse_option(program, primary, NEEDS_VALUE)
            value = words.pop(0)
            if primary in _FIND_FILE_ARGUMENTS or _FIND_NEWER.fullmatch(primary):
                parsed.files.append(value)
        parsed.options.append((primary, value))
    parsed.follows_links = parsed.has("-L", "-follow")
    recursive_walk(parsed, contents=False)
    return parsed


PROGRAMS: dict[str, Grammar | Custom] = {
    "find": Custom(_parse_find),
}
