"""Dates as Simplified Chinese writes them: 2026年12月1日 19:26, 24-hour, in the viewer's zone."""

DATE_FORMAT = "Y年n月j日"
DATETIME_FORMAT = "Y年n月j日 H:i"
TIME_FORMAT = "H:i"
SHORT_DATE_FORMAT = "Y年n月j日"
SHORT_DATETIME_FORMAT = "Y年n月j日 H:i"
