"""The customer's side of a quote, under the language prefix: the link from the email,
its PDF, accept (which makes the order) and reject."""

from django.urls import path

from billing.orders import views

urlpatterns = [
    path("q/<slug:token>/", views.quote_public, name="quote_public"),
    path("q/<slug:token>/accept", views.quote_public_accept, name="quote_public_accept"),
    path("q/<slug:token>/reject", views.quote_public_reject, name="quote_public_reject"),
    path("q/<slug:token>/pdf", views.quote_public_pdf, name="quote_public_pdf"),
]
