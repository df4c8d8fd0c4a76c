"""The engine that reads a program's command line against its declared grammar.

A program's options are declared, not guessed: which take a value (separate word, `--opt=value`,
attached `-ovalue`), which are flags that cluster, which are denied with a reason. An option's
value is therefore never taken for a verb, an operand or an operator. Unknown options are
refused, and so are abbreviated long options: the policy never guesses how a program would
expand them. Programs whose conventions are not getopt_long's bring their own parser (`Custom`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from .refusal import PolicyRefusal

UNKNOWN = "unknown option: only options the policy knows to be read-only are accepted"
NEEDS_VALUE = "this option needs a value"


@dataclass
class Parsed:
    """One command after its program's grammar: options with their values, operands, and which
    words name files. Rules add what the command reads recursively."""

    program: str
    options: list[tuple[str, str | None]] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    # (root, reads file contents?) of every recursive walk the command makes
    recursive: list[tuple[str, bool]] = field(default_factory=list)
    follows_links: bool = False

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    def values(self, *names: str) -> list[str]:
        return [value for name, value in self.options if name in names and value is not None]


def refuse_option(program: str, option: str, reason: str = UNKNOWN) -> PolicyRefusal:
    return PolicyRefusal(f"{program} {option}", reason)


FLAG, REQUIRED, OPTIONAL = 0, 1, 2  # how an option takes its value


def short_table(spec: str) -> dict[str, int]:
    """getopt's notation: `a` a flag, `b:` takes a value, `c::` takes an optional attached value."""
    table: dict[str, int] = {}
    index = 0
    while index < len(spec):
        letter = spec[index]
        index += 1
        arity = FLAG
        if spec[index : index + 2] == "::":
            arity, index = OPTIONAL, index + 2
        elif spec[index : index + 1] == ":":
            arity, index = REQUIRED, index + 1
        table[letter] = arity
    return table


def long_table(spec: str) -> dict[str, int]:
    """`name` a flag, `name=` takes a value (`--name=v` or `--name v`), `name?` only `--name=v`."""
    table: dict[str, int] = {}
    for word in spec.split():
        if word.endswith("="):
            table["--" + word[:-1]] = REQUIRED
        elif word.endswith("?"):
            table["--" + word[:-1]] = OPTIONAL
        else:
            table["--" + word] = FLAG
    return table


class Grammar:
    """A GNU getopt_long command line: clustered short options, `-ovalue`, `--long=value`,
    `--long value`, options anywhere before `--` (argument permutation)."""

    def __init__(
        self,
        short: str = "",
        long: str = "",
        *,
        denied: dict[str, str] | None = None,
        files: Iterable[str] = (),
        operands: str = "files",
        numeric: bool = False,
        lookahead: dict[str, str] | None = None,
        rule: Callable[[Parsed], None] | None = None,
    ) -> None:
        self.short = short_table(short)
        self.long = long_table(long + " help version")
        self.denied = dict(denied or {})
        self.file_options = set(files)
        self.operands_are_files = operands == "files"
        self.numeric = numeric
        # options with an optional value that, like journalctl's -n and -b, also take the next
        # word when it looks like their value
        self.lookahead = {name: re.compile(pattern) for name, pattern in (lookahead or {}).items()}
        self.rule = rule

    def parse(self, program: str, args: Sequence[str]) -> Parsed:
        parsed = Parsed(program)
        index = 0
        while index < len(args):
            word = args[index]
            index += 1
            if word == "--":
                for operand in args[index:]:
                    self._operand(parsed, operand)
                break
            if word.startswith("--"):
                index = self._long(parsed, word, args, index)
            elif word.startswith("-") and len(word) > 1:
                index = self._cluster(parsed, word, args, index)
            else:
                self._operand(parsed, word)
        if self.rule is not None:
            self.rule(parsed)
        return parsed

    def _operand(self, parsed: Parsed, word: str) -> None:
        parsed.operands.append(word)
        if self.operands_are_files:
            parsed.files.append(word)

    def _value(self, parsed: Parsed, name: str, value: str | None) -> None:
        parsed.options.append((name, value))
        if value is not None and name in self.file_options:
            parsed.files.append(value)

    def _long(self, parsed: Parsed, word: str, args: Sequence[str], index: int) -> int:
        program = parsed.program
        name, has_value, value = word.partition("=")
        if name in self.denied:
            raise refuse_option(program, name, self.denied[name])
        arity = self.long.get(name)
        if arity is None:
            denied = [option for option in self.denied if option.startswith(name) and option.startswith("--")]
            if denied:
                raise refuse_option(program, name, self.denied[denied[0]])
            known = sorted(option for option in self.long if option.startswith(name))
            if known:
                raise refuse_option(
                    program, name, f"abbreviated options are not accepted; write `{known[0]}` in full"
                )
            raise refuse_option(program, name)
        if arity == FLAG:
            if has_value:
                raise refuse_option(program, name, "this option takes no value")
            self._value(parsed, name, None)
        elif has_value:
            self._value(parsed, name, value)
        elif arity == REQUIRED:
            if index >= len(args):
                raise refuse_option(program, name, NEEDS_VALUE)
            self._value(parsed, name, args[index])
            index += 1
        else:
            value, index = self._look_ahead(name, args, index)
            self._value(parsed, name, value)
        return index

    def _look_ahead(self, name: str, args: Sequence[str], index: int) -> tuple[str | None, int]:
        pattern = self.lookahead.get(name)
        if pattern is not None and index < len(args) and pattern.fullmatch(args[index]):
            return args[index], index + 1
        return None, index

    def _cluster(self, parsed: Parsed, word: str, args: Sequence[str], index: int) -> int:
        program = parsed.program
        if self.numeric and word[1:].isdigit():
            parsed.options.append(("-NUM", word[1:]))
            return index
        position = 1
        while position < len(word):
            letter = word[position]
            position += 1
            option = "-" + letter
            if option in self.denied:
                raise refuse_option(program, option, self.denied[option])
            arity = self.short.get(letter)
            if arity is None:
                raise refuse_option(program, option)
            if arity == FLAG:
                self._value(parsed, option, None)
                continue
            value: str | None = word[position:]
            if not value:
                value = None
                if arity == REQUIRED:
                    if index >= len(args):
                        raise refuse_option(program, option, NEEDS_VALUE)
                    value = args[index]
                    index += 1
                else:
                    value, index = self._look_ahead(option, args, index)
            self._value(parsed, option, value)
            break
        return index


class Custom:
    """A program whose command line does not follow getopt_long; `parse` is its own parser."""

    def __init__(self, parse: Callable[[str, Sequence[str]], Parsed]) -> None:
        self.parse = parse
