"""ops_app in the admin site. Django's autodiscovery imports `ops_app.admin`; the registrations live
in one module per concern, imported here so that they happen."""

from ops_app.admin import alerting, estate, integrations, knowledge, tenancy  # noqa: F401 - registers the models
