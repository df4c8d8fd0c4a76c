"""The same ISO-style times in every language (see ongrid_site/formats/en/formats.py)."""

from ongrid_site.formats.en.formats import *  # noqa: F403
