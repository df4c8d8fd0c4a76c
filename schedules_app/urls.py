from django.urls import path

from schedules_app import views

urlpatterns = [
    path("reports/", views.report_list, name="reports"),
    path("reports/<int:report_id>/", views.report_detail, name="report"),
    path("reports/<int:report_id>/print/", views.report_print, name="report-print"),
    path("reports/<int:report_id>/report.md", views.report_markdown, name="report-markdown"),
    path("schedules/runs/<int:run_id>/", views.run_detail, name="schedule-run"),
]
