"""English dates on Ongrid's pages: 2026-12-01 19:26, 24-hour, in the viewer's zone
(web_app.timezones). Overrides Django's English "Dec. 1, 2026, 12:55 a.m.": English is read by
on-call engineers everywhere, and an ISO-style date is the one no English reader misreads.
The other languages write dates their own way (their formats.py); only the clock is shared."""

DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i"
TIME_FORMAT = "H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
