"""The customer's dashboard, under ``/<lang>/account/``."""

from django.urls import path

from portal.dashboard.views import (
    api,
    cancellation,
    continuity,
    contracts,
    documents,
    monitoring,
    orders,
)

urlpatterns = [
    path("", orders.dashboard, name="dashboard"),
    path("api-keys/", api.api_keys_page, name="dashboard_api_keys"),
    path("api-keys/new", api.api_key_create, name="dashboard_api_key_create"),
    path("api-keys/<int:key_id>/revoke", api.api_key_revoke, name="dashboard_api_key_revoke"),
    path("webhooks/", api.webhooks_page, name="dashboard_webhooks"),
    path("webhooks/new", api.webhook_create, name="dashboard_webhook_create"),
    path("webhooks/<int:endpoint_id>/rotate", api.webhook_rotate, name="dashboard_webhook_rotate"),
    path("webhooks/<int:endpoint_id>/delete", api.webhook_delete, name="dashboard_webhook_delete"),
    path(
        "webhooks/deliveries/<int:delivery_id>/replay",
        api.webhook_replay,
        name="dashboard_webhook_replay",
    ),
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
    path(
        "orders/<slug:number>/monitoring/",
        monitoring.order_monitoring,
        name="dashboard_order_monitoring",
    ),
    path(
        "orders/<slug:number>/monitoring/chart/<slug:metric>/",
        monitoring.order_monitoring_chart,
        name="dashboard_order_monitoring_chart",
    ),
    path(
        "orders/<slug:number>/monitoring/export.<slug:fmt>",
        monitoring.order_monitoring_export,
        name="dashboard_order_monitoring_export",
    ),
    path(
        "orders/<slug:number>/replacement-policy",
        monitoring.order_replacement_policy,
        name="dashboard_order_replacement_policy",
    ),
    path(
        "orders/<slug:number>/incidents/<int:incident_id>/approve",
        monitoring.order_incident_approve,
        name="dashboard_order_incident_approve",
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
