"""Alert-time notifications (docs/alerts.md, "Notifications when an alert fires"): an
organization's rules decide which new incidents are announced on which channels (an IM app's
channel, e-mail, a signed webhook); every message is a persisted delivery row, retried with
backoff, and IM cards are redrawn in place as the investigation and the buttons move on."""
