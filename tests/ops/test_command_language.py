"""Ongrid's management commands speak the terminal's language (docs/i18n.md): LANG=fr_FR.UTF-8
gives French help, a locale Ongrid does not ship or `C` gives English."""

from __future__ import annotations

import pytest
from django.utils import translation

from ops_app.core.commands import terminal_language
from ops_app.management.commands.ongrid_token import Command


@pytest.mark.parametrize(
    ("environ", "language"),
    [
        ({"LANG": "fr_FR.UTF-8"}, "fr"),
        ({"LANG": "es_MX.UTF-8"}, "es"),
        ({"LANG": "zh_CN.UTF-8"}, "zh-hans"),
        ({"LC_ALL": "es_ES.UTF-8", "LANG": "fr_FR.UTF-8"}, "es"),
        ({"LANGUAGE": "fr:en", "LANG": "es_ES.UTF-8"}, "fr"),
        ({"LANG": "de_DE.UTF-8"}, "en"),
        ({"LC_ALL": "C", "LANG": "fr_FR.UTF-8"}, "en"),
        ({}, "en"),
    ],
)
def test_the_terminals_locale_picks_a_shipped_language(environ, language):
    assert terminal_language(environ) == language


def test_a_commands_help_is_in_the_terminals_language(monkeypatch):
    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LANG", "fr_FR.UTF-8")
    before = translation.get_language()
    french = " ".join(Command().create_parser("manage.py", "ongrid_token").format_help().split())
    assert "Émet un jeton d’API pour USERNAME" in french
    assert "Supprime d’abord les jetons existants de l’utilisateur." in french
    assert translation.get_language() == before  # only the parser was built in French
    monkeypatch.setenv("LANG", "C.UTF-8")
    english = " ".join(Command().create_parser("manage.py", "ongrid_token").format_help().split())
    assert "Issue an API token for USERNAME" in english
