"""The customer's dashboard, under ``/<lang>/account/``."""

from django.urls import path

from portal import dashboard

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("orders/<slug:number>/", dashboard.order_detail, name="dashboard_order"),
    path(
        "orders/<slug:number>/progress/", dashboard.order_progress, name="dashboard_order_progress"
    ),
    path("orders/<slug:number>/quote.pdf", dashboard.order_quote_pdf, name="dashboard_quote_pdf"),
    path(
        "orders/<slug:number>/acceptance/<int:run_id>.pdf",
        dashboard.acceptance_report_pdf,
        name="dashboard_acceptance_report",
    ),
    path("invoices/<slug:number>.pdf", dashboard.invoice_pdf, name="dashboard_invoice_pdf"),
]
