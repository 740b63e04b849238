"""The shop under the language prefix: configure an order, see its instant quote, accept."""

from django.urls import path

from portal.shop import views

urlpatterns = [
    path("configure/", views.configure, name="configure"),
    path("configure/accept", views.configure_accept, name="configure_accept"),
    path("configure/estimate", views.configure_estimate, name="configure_estimate"),
    path("estimate/<slug:key>/", views.estimate_status, name="estimate_status"),
    path("estimate/<slug:key>/pdf", views.estimate_pdf, name="estimate_pdf"),
]
