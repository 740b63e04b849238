"""Staff pages for sales: quotes (list, create, edit, approve, send, revise)."""

from django.urls import path

from billing.quotes.views import sales

app_name = "sales"

urlpatterns = [
    path("quotes/", sales.quote_list, name="quote_list"),
    path("quotes/new", sales.quote_create, name="quote_create"),
    path("quotes/preview", sales.quote_preview, name="quote_preview"),
    path("quotes/<int:pk>/", sales.quote_detail, name="quote_detail"),
    path("quotes/<int:pk>/edit", sales.quote_edit, name="quote_edit"),
    path(
        "quotes/<int:pk>/request-approval",
        sales.quote_request_approval,
        name="quote_request_approval",
    ),
    path("quotes/<int:pk>/approve", sales.quote_approve, name="quote_approve"),
    path("quotes/<int:pk>/decline", sales.quote_decline, name="quote_decline"),
    path("quotes/<int:pk>/send", sales.quote_send, name="quote_send"),
    path("quotes/<int:pk>/revise", sales.quote_revise, name="quote_revise"),
    path("quotes/<int:pk>/pdf", sales.quote_pdf, name="quote_pdf"),
]
