"""The customer's dashboard, under ``/<lang>/account/``."""

from django.urls import path

from portal.dashboard.views import cancellation, continuity, contracts, documents, orders

urlpatterns = [
    path("", orders.dashboard, name="dashboard"),
    path("orders/<slug:number>/", orders.order_detail, name="dashboard_order"),
    path("orders/<slug:number>/access", orders.order_access, name="dashboard_order_access"),
    path("orders/<slug:number>/cancel", cancellation.order_cancel, name="dashboard_order_cancel"),
    path("orders/<slug:number>/progress/", orders.order_progress, name="dashboard_order_progress"),
    path("orders/<slug:number>/quote.pdf", documents.order_quote_pdf, name="dashboard_quote_pdf"),
    path(
        "orders/<slug:number>/acceptance/<int:run_id>.pdf",
        documents.acceptance_report_pdf,
        name="dashboard_acceptance_report",
    ),
    path("invoices/<slug:number>.pdf", documents.invoice_pdf, name="dashboard_invoice_pdf"),
    path(
        "credit-notes/<slug:number>.pdf",
        documents.credit_note_pdf_view,
        name="dashboard_credit_note_pdf",
    ),
    path(
        "orders/<slug:number>/usage.csv",
        documents.order_usage_csv,
        name="dashboard_order_usage",
    ),
    path(
        "orders/<slug:number>/contract/",
        contracts.contract_page,
        name="dashboard_contract",
    ),
    path(
        "orders/<slug:number>/contract.pdf",
        contracts.contract_pdf_view,
        name="dashboard_contract_pdf",
    ),
    path(
        "orders/<slug:number>/contract/code",
        contracts.contract_code,
        name="dashboard_contract_code",
    ),
    path(
        "orders/<slug:number>/contract/sign",
        contracts.contract_sign,
        name="dashboard_contract_sign",
    ),
    path("orders/<slug:number>/terms", contracts.order_terms, name="dashboard_order_terms"),
    path(
        "orders/<slug:number>/suspension/",
        continuity.order_suspension,
        name="dashboard_order_suspension",
    ),
    path(
        "orders/<slug:number>/renewal/",
        continuity.order_renewal,
        name="dashboard_order_renewal",
    ),
]
