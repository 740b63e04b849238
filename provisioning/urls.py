"""Staff pages of provisioning runs, under ``/<lang>/staff/provisioning/``."""

from django.urls import path

from provisioning import views

urlpatterns = [
    path("runs/<int:run_id>/", views.run_detail, name="provisioning_run"),
    path(
        "runs/<int:run_id>/steps/<int:step_id>/retry/",
        views.step_retry,
        name="provisioning_step_retry",
    ),
    path(
        "runs/<int:run_id>/nodes/<int:node_id>/swap/",
        views.node_swap,
        name="provisioning_node_swap",
    ),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="provisioning_run_cancel"),
]
