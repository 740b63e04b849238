"""The labels of the tasks the outbox carries (``core.task_labels``), in one table."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from core import task_labels

LABELS = {
    "accounts.tasks.email_verification_email": _("Email: verify the address"),
    "accounts.tasks.invitation_email": _("Email: invitation"),
    "accounts.tasks.password_reset_email": _("Email: password reset"),
    "accounts.tasks.signup_taken_email": _("Email: address already signed up"),
    "billing.tasks.document_render_contract": _("Render the contract PDF"),
    "billing.tasks.document_render_credit_note": _("Render the credit note PDF"),
    "billing.tasks.document_render_estimate": _("Render the estimate PDF"),
    "billing.tasks.document_render_invoice": _("Render the invoice PDF"),
    "billing.tasks.document_render_quote": _("Render the quote PDF"),
    "billing.tasks.document_seal_contract": _("Seal the contract PDF"),
    "billing.tasks.document_render_contract_audit": _("Render the contract's audit record"),
    "billing.tasks.contract_ready_email": _("Email: contract ready to sign"),
    "billing.tasks.contract_sealed_email": _("Email: the sealed contract"),
    "billing.tasks.dunning_notice_email": _("Email: payment reminder"),
    "billing.tasks.payment_intents_cancel": _("Cancel open card payments"),
    "billing.tasks.quote_email": _("Email: the quote"),
    "billing.tasks.renewal_email": _("Email: renewal offer"),
    "billing.tasks.stripe_event_process_task": _("Process a Stripe event"),
    "billing.tasks.suspension_email": _("Email: suspension notice"),
    "billing.tasks.catalog_calendar_refresh_task": _("Refresh the availability calendar"),
    "billing.tasks.documents_sweep_task": _("Sweep: missing documents and emails"),
    "core.tasks.outbox_relay_task": _("Publish waiting outbox messages"),
    "inventory.tasks.import_job_run_task": _("Import an inventory CSV"),
    "portal.operations.tasks.maintenance_notify_task": _("Tell the customers about maintenance"),
    "portal.operations.tasks.maintenance_email_task": _("Email: maintenance notice"),
    "portal.operations.tasks.maintenance_due_task": _("Sweep: maintenance notices due"),
    "provisioning.tasks.order_power_sync": _("Power an order's nodes off or on"),
    "provisioning.tasks.provisioning_clean_finish": _("Finish cleaning the nodes"),
    "provisioning.tasks.provisioning_deliver": _("Deliver the access details"),
    "provisioning.tasks.provisioning_email": _("Email: provisioning progress"),
    "provisioning.tasks.provisioning_launch": _("Launch the provisioning run"),
    "provisioning.tasks.provisioning_slot_advance": _("Provision a node"),
    "provisioning.tasks.provisioning_start": _("Start provisioning an order"),
    "provisioning.tasks.provisioning_validate": _("Validate the cluster"),
    "provisioning.validation.tasks.document_render_acceptance_report": _(
        "Render the acceptance report PDF"
    ),
    "provisioning.validation.tasks.validation_run_execute_task": _("Run a validation"),
    "portal.support.tasks.ticket_email": _("Email: support ticket"),
    "portal.support.tasks.ticket_from_low_utilisation": _("Open a ticket: low utilisation"),
    "portal.support.tasks.ticket_from_replacement": _("Open a ticket: node replacement"),
}

task_labels.register(LABELS)
