from django.urls import path

from web_app.audit import api, views

urlpatterns: list = [
    path("audit/", views.session_list, name="audit-sessions"),
    path("audit/sessions/<int:session_id>/", views.session_detail, name="audit-session"),
    path("audit/sessions/<int:session_id>/print/", views.session_print, name="audit-session-print"),
    path("audit/calls/<int:call_id>/", views.call_page, name="audit-call"),
    path("audit/sessions/<int:session_id>/calls/<str:call_id>/", views.call_lookup, name="audit-call-lookup"),
    path("api/audit/sessions/", api.SessionListView.as_view(), name="api-audit-sessions"),
    path("api/audit/sessions/<int:session_id>/tree/", api.SessionTreeView.as_view(), name="api-audit-tree"),
    path(
        "api/audit/sessions/<int:session_id>/export/",
        api.SessionExportView.as_view(),
        name="api-audit-export",
    ),
    path("api/audit/tool-calls/", api.ToolCallListView.as_view(), name="api-audit-calls"),
    path("api/audit/tool-calls/<int:call_id>/", api.ToolCallDetailView.as_view(), name="api-audit-call"),
]
