"""Ongrid writes dates one way everywhere (chat, audit, admin): 2026-12-01 19:26, 24-hour, in the
viewer's zone (web_app.timezones). Overrides Django's English "Dec. 1, 2026, 12:55 a.m."."""

DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i"
TIME_FORMAT = "H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
