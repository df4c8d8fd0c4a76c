"""The base of Ongrid's own management commands: their help (and the messages they mark for
translation) in the operator's terminal language (docs/i18n.md).

Django runs a command in `LANGUAGE_CODE` (English). An operator whose shell says `LANG=es_ES.UTF-8`
reads `manage.py ongrid_token --help` in Spanish instead; a locale Ongrid does not ship, or `C`,
stays English. Only the help changes: the command runs, and writes its rows, in English.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import translation
from django.utils.functional import Promise

# The POSIX order of precedence for the language of messages.
LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def terminal_language(environ: dict | None = None) -> str:
    """The shipped language the terminal's locale names (`es_ES.UTF-8` → `es`, `zh_CN` →
    `zh-hans`), else `settings.LANGUAGE_CODE`."""
    environ = os.environ if environ is None else environ
    for variable in LOCALE_VARIABLES:
        value = (environ.get(variable) or "").split(":")[0].split(".")[0].split("@")[0]
        if not value:
            continue
        if value in ("C", "POSIX"):
            break
        code = translation.to_language(value)
        if code.startswith("zh") and code not in ("zh-hant", "zh-tw", "zh-hk", "zh-mo"):
            code = "zh-hans"  # the Chinese Ongrid ships is Simplified
        try:
            return translation.get_supported_language_variant(code)
        except LookupError:
            continue
    return settings.LANGUAGE_CODE


class LocalizedCommand(BaseCommand):
    """A management command whose help follows the terminal's language.

    Only the parser is built in that language: the command itself runs in `LANGUAGE_CODE`, so the
    rows and messages it writes (change events, a chat turn's refusals) are what any other
    background process writes."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs):
        # argparse wants plain strings: the lazy help texts, rendered now in the terminal's language.
        with translation.override(terminal_language()):
            self.help = str(self.help)
            parser = super().create_parser(prog_name, subcommand, **kwargs)
            for action in parser._actions:
                if isinstance(action.help, Promise):
                    action.help = str(action.help)
        return parser
