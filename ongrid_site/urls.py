from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from django.views.i18n import JavaScriptCatalog

from ongrid_site import views
from ongrid_site.api_docs import DocsView, SchemaView

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    # The translations static/js/*.js use, loaded as a script file (the CSP allows no inline script).
    path("jsi18n/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    # The API's schema and docs, for signed-in users (ongrid_site/api_docs.py). The docs are Swagger
    # UI from the pinned sidecar package (no CDN), its init script served as a file (?script) so
    # the page needs no inline script under the CSP.
    path("api/schema/", SchemaView.as_view(), name="api-schema"),
    path("api/docs/", DocsView.as_view(url_name="api-schema"), name="api-docs"),
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True), name="favicon"),
    path("api/", include("rest_framework.urls")),
    path("", include("agents_app.urls")),
    path("", include("web_app.urls")),
    path("", include("incidents_app.urls")),
    path("", include("ops_app.urls")),
    path("", include("im_app.urls")),
    path("", include("schedules_app.urls")),
]

# JSON error bodies for /api/ paths; Django's pages elsewhere (ongrid_site.api_errors).
handler400 = "ongrid_site.api_errors.bad_request"
handler403 = "ongrid_site.api_errors.permission_denied"
handler404 = "ongrid_site.api_errors.page_not_found"
handler500 = "ongrid_site.api_errors.server_error"
