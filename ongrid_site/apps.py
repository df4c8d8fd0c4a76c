"""The admin app with Ongrid's site as `admin.site` (ongrid_site/admin_site.py)."""

from django.contrib.admin.apps import AdminConfig


class OngridAdminConfig(AdminConfig):
    default_site = "ongrid_site.admin_site.OngridAdminSite"
