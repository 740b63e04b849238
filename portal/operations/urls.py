"""Staff pages of the operations console, under ``/<lang>/staff/operations/``."""

from django.urls import path

from portal.operations import views

app_name = "operations"

urlpatterns = [
    path("", views.home, name="home"),
    path("calendar/", views.calendar, name="calendar"),
    path("maintenance/", views.maintenance_list, name="maintenance_list"),
    path("maintenance/new/", views.maintenance_new, name="maintenance_new"),
    path("maintenance/<int:plan_id>/", views.maintenance_detail, name="maintenance_detail"),
    path("maintenance/<int:plan_id>/cancel/", views.maintenance_cancel, name="maintenance_cancel"),
    path(
        "maintenance/<int:plan_id>/complete/",
        views.maintenance_complete,
        name="maintenance_complete",
    ),
    path("reports/", views.reports_page, name="reports"),
]
