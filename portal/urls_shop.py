"""The shop under the language prefix: configure an order, see its instant quote, accept."""

from django.urls import path

from portal import views

urlpatterns = [
    path("configure/", views.configure, name="configure"),
    path("configure/accept", views.configure_accept, name="configure_accept"),
]
