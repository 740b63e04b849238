"""``/telemetry/``: what Prometheus reads from the portal."""

from django.urls import path

from provisioning.telemetry import views

urlpatterns = [
    path("targets", views.service_discovery, name="telemetry_targets"),
    path(
        "simulated/<str:hostname>/metrics",
        views.simulated_metrics,
        name="telemetry_simulated_metrics",
    ),
]
