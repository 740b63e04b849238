"""The customer's dashboard, under ``/<lang>/account/``."""

from django.urls import path

from portal import dashboard, dashboard_contracts, dashboard_money, dashboard_service

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("orders/<slug:number>/", dashboard.order_detail, name="dashboard_order"),
    path("orders/<slug:number>/access", dashboard.order_access, name="dashboard_order_access"),
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
    path(
        "credit-notes/<slug:number>.pdf",
        dashboard_money.credit_note_pdf_view,
        name="dashboard_credit_note_pdf",
    ),
    path(
        "orders/<slug:number>/usage.csv",
        dashboard_money.order_usage_csv,
        name="dashboard_order_usage",
    ),
    path(
        "orders/<slug:number>/contract/",
        dashboard_contracts.contract_page,
        name="dashboard_contract",
    ),
    path(
        "orders/<slug:number>/contract.pdf",
        dashboard_contracts.contract_pdf_view,
        name="dashboard_contract_pdf",
    ),
    path(
        "orders/<slug:number>/contract/code",
        dashboard_contracts.contract_code,
        name="dashboard_contract_code",
    ),
    path(
        "orders/<slug:number>/contract/sign",
        dashboard_contracts.contract_sign,
        name="dashboard_contract_sign",
    ),
    path(
        "orders/<slug:number>/terms", dashboard_contracts.order_terms, name="dashboard_order_terms"
    ),
    path(
        "orders/<slug:number>/suspension/",
        dashboard_service.order_suspension,
        name="dashboard_order_suspension",
    ),
    path(
        "orders/<slug:number>/renewal/",
        dashboard_service.order_renewal,
        name="dashboard_order_renewal",
    ),
]
