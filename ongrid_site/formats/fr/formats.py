"""Dates as this language writes them, day first with the month's short name ("1 déc. 2026 19:26",
"1 dic. 2026 19:26"), 24-hour, in the viewer's zone; never ambiguous between 1/12 and 12/1."""

DATE_FORMAT = "j N Y"
DATETIME_FORMAT = "j N Y H:i"
TIME_FORMAT = "H:i"
SHORT_DATE_FORMAT = "j N Y"
SHORT_DATETIME_FORMAT = "j N Y H:i"
