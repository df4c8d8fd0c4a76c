"""Programs that show processes, load and memory.

Most of them can repeat forever (`top`, `vmstat 1`, `free -s`, `lsof -r`): only forms that end
are accepted. `ps` must not print process environments, which hold secrets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..grammar import (
    FLAG,
    NEEDS_VALUE,
    OPTIONAL,
    REQUIRED,
    Custom,
    Grammar,
    Parsed,
    long_table,
    refuse_option,
    short_table,
)
from ..refusal import PolicyRefusal
from .common import no_operands


def _numbers_need_a_count(parsed: Parsed) -> None:
    """vmstat/iostat: `DELAY` alone repeats forever; `DELAY COUNT` ends."""
    numbers = [word for word in parsed.operands if word.isdigit()]
    if len(numbers) == 1:
        raise PolicyRefusal(
            f"{parsed.program} {numbers[0]}", "a delay without a count never ends; add a count (e.g. `1 5`)"
        )


def _vmstat(parsed: Parsed) -> None:
    for word in parsed.operands:
        if not word.isdigit():
            raise PolicyRefusal(f"vmstat {word}", "vmstat takes a delay and a count (numbers)")
    _numbers_need_a_count(parsed)


def _top(parsed: Parsed) -> None:
    if not parsed.has("-b") or not parsed.has("-n"):
        raise PolicyRefusal(
            "top " + " ".join(name + (value or "") for name, value in parsed.options),
            "only batch mode with an iteration count (`top -b -n 1`) is allowed",
        )
    if parsed.operands:
        raise PolicyRefusal(f"top {parsed.operands[0]}", "top takes no operands")


# ps: UNIX options (`-eo pid`), BSD letters (`aux`), GNU long options (`--sort=-pcpu`).
_PS_UNIX = short_table("AadeNTrxcfFjlMyZHwLmVC:G:g:p:q:s:t:u:U:O:o:")
_PS_BSD = short_table("acfhjlmrsuvwxSTXLHnZo:O:p:t:U:k:")
_PS_LONG = long_table(
    "sort= pid= ppid= user= User= group= Group= format= cols= columns= rows= lines= sid= tty= "
    "quick-pid= no-headers no-heading headers forest width= cumulative deselect info context help version"
)
_PS_ENVIRONMENT = "the BSD `e` option shows process environments, which hold secrets"


def _parse_ps(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word.startswith("--"):
            name, has_value, value = word.partition("=")
            arity = _PS_LONG.get(name)
            if arity is None:
                raise refuse_option(program, name)
            if arity == REQUIRED and not has_value:
                if index >= len(args):
                    raise refuse_option(program, name, NEEDS_VALUE)
                value, index = args[index], index + 1
            parsed.options.append((name, value if arity else None))
            continue
        unix = word.startswith("-") and len(word) > 1
        letters, table = (word[1:], _PS_UNIX) if unix else (word, _PS_BSD)
        if not unix and re.fullmatch(r"[\d,]+", word):
            parsed.operands.append(word)  # a pid list
            continue
        if not unix and not re.fullmatch(r"[A-Za-z]+", word):
            raise PolicyRefusal(f"ps {word}", "not a ps option or a process id list")
        for position, letter in enumerate(letters):
            if not unix and letter == "e":
                raise PolicyRefusal(f"ps {word}", _PS_ENVIRONMENT)
            arity = table.get(letter)
            if arity is None:
                raise refuse_option(program, ("-" if unix else "") + letter)
            if arity == FLAG:
                parsed.options.append((letter, None))
                continue
            value = letters[position + 1 :]
            if not value:
                if index >= len(args):
                    raise refuse_option(program, letter, NEEDS_VALUE)
                value, index = args[index], index + 1
            parsed.options.append((letter, value))
            break
    return parsed


# lsof: `-x` and `+x` options; some take a value, some an optional one (attached, or the next
# word when it does not start with - or +).
_LSOF_FLAGS = set("abChlnNOPRtUvVwXxQHE")
_LSOF_REQUIRED = set("cdpuke")
_LSOF_OPTIONAL = set("iFgLosSTK")
_LSOF_PLUS = {"D": REQUIRED, "d": REQUIRED, "c": REQUIRED, "e": REQUIRED, "L": OPTIONAL, "f": OPTIONAL,
              "E": FLAG, "w": FLAG, "M": FLAG}  # fmt: skip
_LSOF_DENIED = {"r": "repeat mode never ends", "D": "-D builds or updates a device cache file"}


def _parse_lsof(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    words = list(args)
    while words:
        word = words.pop(0)
        if word == "--":
            parsed.operands += words
            parsed.files += words
            break
        if word.startswith("+") and len(word) > 1:
            letter = word[1]
            if letter == "r":
                raise refuse_option(program, "+r", _LSOF_DENIED["r"])
            arity = _LSOF_PLUS.get(letter)
            if arity is None:
                raise refuse_option(program, word[:2])
            value = word[2:] or None
            if arity == REQUIRED and value is None:
                if not words:
                    raise refuse_option(program, word, NEEDS_VALUE)
                value = words.pop(0)
            if letter in "Dd" and value is not None:
                parsed.files.append(value)
            parsed.options.append(("+" + letter, value))
            continue
        if not word.startswith("-") or word == "-":
            parsed.operands.append(word)
            parsed.files.append(word)
            continue
        for position, letter in enumerate(word[1:], start=1):
            if letter in _LSOF_DENIED:
                raise refuse_option(program, "-" + letter, _LSOF_DENIED[letter])
            if letter in _LSOF_FLAGS:
                parsed.options.append(("-" + letter, None))
                continue
            if letter not in _LSOF_REQUIRED | _LSOF_OPTIONAL:
                raise refuse_option(program, "-" + letter)
            value = word[position + 1 :] or None
            if value is None and words and (letter in _LSOF_REQUIRED or not words[0].startswith(("-", "+"))):
                value = words.pop(0)
            if value is None and letter in _LSOF_REQUIRED:
                raise refuse_option(program, "-" + letter, NEEDS_VALUE)
            parsed.options.append(("-" + letter, value))
            break
    return parsed


PROGRAMS: dict[str, Grammar | Custom] = {
    "ps": Custom(_parse_ps),
    "top": Grammar("bcHiSs1n:d:p:u:U:o:O:w::E:e:", rule=_top, operands="data"),
    "free": Grammar(
        "bkmgtphlwvLc:",
        "bytes kilo mega giga tera peta kibi mebi gibi tebi pebi human si lohi total wide committed line "
        "count=",
        denied={"-s": "repeating output never ends", "--seconds": "repeating output never ends"},
        operands="data",
        rule=no_operands,
    ),
    "uptime": Grammar("phsV", "pretty since container", rule=no_operands),
    "vmstat": Grammar(
        "afmnsdDp:S:twyV",
        "active forks slabs one-header stats disk disk-sum partition= unit= timestamp wide no-first",
        operands="data",
        rule=_vmstat,
    ),
    "iostat": Grammar("cdhkmNtxyzV", "human pretty compact", operands="data", rule=_numbers_need_a_count),
    "lsof": Custom(_parse_lsof),
}
