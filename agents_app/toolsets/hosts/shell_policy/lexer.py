"""From text to argv lists, the way a POSIX shell would split the line.

Quotes and backslashes make data; only unquoted runs of `();<>|&` are operators, and of those
only `|`, `;`, `&&` and `||` survive. Everything the shell would expand (substitutions,
variables) and every character that starts another command (newline) is refused before the
line is split, so no word can change meaning between the check and the run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .refusal import PolicyRefusal

MAX_LENGTH = 2000
CHAIN_OPERATORS = {";", "&&", "||"}
PUNCTUATION = set("();<>|&")

_VARIABLE = re.compile(r"\$(\{[^}]*\}?|\w+|[@*#?$!-])")
_UNCLOSED = "cannot parse the command line (no closing quotation)"


def check_raw(line: str) -> None:
    """Refuse what no quoting makes harmless: empty or overlong lines, newlines, NUL bytes,
    command substitution and parameter expansion (even inside double quotes)."""
    if not line.strip():
        raise PolicyRefusal("", "the command line is empty")
    if len(line) > MAX_LENGTH:
        raise PolicyRefusal(line[:40] + "…", f"command lines are limited to {MAX_LENGTH} characters")
    for char, why in (
        ("\n", "newlines would start another command; send one command line"),
        ("\r", "carriage returns are not allowed"),
        ("\0", "NUL bytes are not allowed"),
        ("`", "command substitution (backticks) is not allowed"),
    ):
        if char in line:
            raise PolicyRefusal(repr(char)[1:-1], why)
    if "$(" in line:
        raise PolicyRefusal("$(", "command substitution is not allowed")
    match = _VARIABLE.search(line)
    if match:
        raise PolicyRefusal(match.group(0), "variable and parameter expansion is not allowed")


@dataclass(frozen=True)
class Token:
    text: str
    operator: bool = False


def _double_quoted(line: str, index: int, word: list[str]) -> int:
    """Append the body of the double-quoted string opening at `index - 1`; return the index past
    its closing quote. Inside, a backslash only escapes `$`, a backtick, `"` and itself."""
    length = len(line)
    while True:
        if index >= length:
            raise PolicyRefusal(line[-40:], _UNCLOSED)
        char = line[index]
        if char == '"':
            return index + 1
        if char == "\\" and index + 1 < length and line[index + 1] in '$`"\\':
            word.append(line[index + 1])
            index += 2
            continue
        word.append(char)
        index += 1


def lex(line: str) -> list[Token]:
    """Split a command line as a POSIX shell would: quotes and backslashes make data, and only
    unquoted runs of `();<>|&` are operators."""
    tokens: list[Token] = []
    word: list[str] = []
    started = False
    index, length = 0, len(line)

    def flush() -> None:
        nonlocal started
        if started:
            tokens.append(Token("".join(word)))
        word.clear()
        started = False

    while index < length:
        char = line[index]
        if char in " \t":
            flush()
            index += 1
        elif char in PUNCTUATION:
            flush()
            end = index
            while end < length and line[end] in PUNCTUATION:
                end += 1
            tokens.append(Token(line[index:end], operator=True))
            index = end
        elif char == "'":
            end = line.find("'", index + 1)
            if end < 0:
                raise PolicyRefusal(line[index:][:40], _UNCLOSED)
            word.append(line[index + 1 : end])
            started, index = True, end + 1
        elif char == '"':
            started, index = True, _double_quoted(line, index + 1, word)
        elif char == "\\":
            if index + 1 >= length:
                raise PolicyRefusal("\\", "cannot parse the command line (it ends with a backslash)")
            word.append(line[index + 1])
            started, index = True, index + 2
        else:
            word.append(char)
            started, index = True, index + 1
    flush()
    return tokens


def split(tokens: Sequence[Token]) -> tuple[list[list[list[str]]], list[str]]:
    """Group tokens into pipelines of commands; refuse every operator except | ; && ||."""
    pipelines: list[list[list[str]]] = [[[]]]
    operators: list[str] = []
    for token in tokens:
        if not token.operator:
            pipelines[-1][-1].append(token.text)
            continue
        text = token.text
        if text == "|":
            if not pipelines[-1][-1]:
                raise PolicyRefusal("|", "a pipe needs a command on both sides")
            pipelines[-1].append([])
        elif text in CHAIN_OPERATORS:
            if not pipelines[-1][-1]:
                raise PolicyRefusal(text, f"`{text}` needs a command before it")
            operators.append(text)
            pipelines.append([[]])
        else:
            raise PolicyRefusal(text, _operator_reason(text))
    if not pipelines[-1][-1]:
        if operators and operators[-1] == ";" and len(pipelines[-1]) == 1:
            pipelines.pop()
            operators.pop()
        else:
            raise PolicyRefusal(tokens[-1].text if tokens else "", "the command line ends without a command")
    return pipelines, operators


def _operator_reason(token: str) -> str:
    if "<" in token or ">" in token:
        return "redirections are not allowed (they read or write files outside the policy)"
    if token.startswith("|&") or token.endswith("|&"):
        return "`|&` is not allowed; use a plain pipe"
    if "(" in token or ")" in token:
        return "subshells and grouping are not allowed (quote a literal parenthesis)"
    if "&" in token:
        return "background jobs are not allowed"
    return "this shell operator is not allowed"
