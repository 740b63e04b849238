"""The customer's ledger per organisation and currency (after Stripe Billing's customer
balance and Kill Bill's invoice items): invoices owe, payments and credit notes pay.

- A credit note applies first to the invoice it corrects while that is open, at most what
  is still due there (``credit_note_apply``); the rest is the customer's credit balance.
- The balance applies by itself to the next invoice issued in the same currency
  (``credit_balance_apply``, called when an invoice is created): the oldest credit notes
  first.
- Every application is a ``CreditApplication`` row (credit note → invoice, amount), so the
  invoice, its PDF and finance see which credit lowered what; ``Invoice.amount_credited``
  is their sum.

Callers hold the order's lock (credit notes and invoices are written under it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import DecimalField, F, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import Organisation
from billing.models import (
    CreditApplication,
    CreditNote,
    Invoice,
    InvoiceStatus,
    Payment,
    PaymentStatus,
    Refund,
)

ZERO = Decimal("0")


def credit_note_unapplied(note: CreditNote) -> Decimal:
    """What of a credit note (a positive amount) is not applied to any invoice yet."""
    applied = note.applications.aggregate(s=Sum("amount"))["s"] or ZERO
    return -note.gross_total - applied


def credit_balance(*, organisation: Organisation | int, currency: str) -> Decimal:
    """The customer's credit balance in ``currency``: credit notes not yet applied."""
    org_id = organisation if isinstance(organisation, int) else organisation.pk
    applied = (
        CreditApplication.objects.filter(credit_note=OuterRef("pk"))
        .values("credit_note")
        .annotate(s=Sum("amount"))
        .values("s")
    )
    left = (
        CreditNote.objects.filter(organisation_id=org_id, currency=currency)
        .annotate(
            applied=Coalesce(
                Subquery(applied),
                Value(ZERO),
                output_field=DecimalField(max_digits=16, decimal_places=2),
            )
        )
        .aggregate(left=Sum(-F("gross_total") - F("applied")))["left"]
    )  # one query
    return left or ZERO


def invoice_due(invoice: Invoice) -> Decimal:
    """What is still to pay on an issued invoice (from its rows, not its cached fields)."""
    paid = (
        Payment.objects.filter(
            invoice=invoice,
            status__in=(PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED),
            duplicate_of__isnull=True,
        ).aggregate(s=Sum("amount"))["s"]
        or ZERO
    )
    credited = invoice.credit_applications.aggregate(s=Sum("amount"))["s"] or ZERO
    return invoice.gross_total - paid - credited


def _apply(note: CreditNote, invoice: Invoice, amount: Decimal, now: datetime) -> Decimal:
    if amount <= 0:
        return ZERO
    CreditApplication.objects.create(
        credit_note=note, invoice=invoice, amount=amount, applied_at=now
    )
    invoice.amount_credited = invoice.credit_applications.aggregate(s=Sum("amount"))["s"] or ZERO
    invoice.save(update_fields=["amount_credited"])
    return amount


def credit_note_apply(*, note: CreditNote, now: datetime | None = None) -> Decimal:
    """Apply a new credit note to its own invoice while that is open (at most what is
    due); returns the amount applied. The rest stays as the customer's balance."""
    now = now or timezone.now()
    invoice = Invoice.objects.select_for_update().get(pk=note.invoice_id)
    if invoice.status != InvoiceStatus.ISSUED:
        return ZERO
    amount = min(credit_note_unapplied(note), max(invoice_due(invoice), ZERO))
    return _apply(note, invoice, amount, now)


def credit_balance_apply(*, invoice: Invoice, now: datetime | None = None) -> Decimal:
    """Apply the customer's credit balance (oldest credit notes first) to an open invoice
    in the same currency, at most what is due on it; returns the amount applied."""
    now = now or timezone.now()
    if credit_balance(organisation=invoice.organisation_id, currency=invoice.currency) <= 0:
        return ZERO  # the usual case: one query
    invoice = Invoice.objects.select_for_update().get(pk=invoice.pk)
    if invoice.status != InvoiceStatus.ISSUED:
        return ZERO
    due = invoice_due(invoice)
    total = ZERO
    notes = CreditNote.objects.select_for_update().filter(
        organisation_id=invoice.organisation_id, currency=invoice.currency
    )
    for note in notes.order_by("issued_at", "pk"):
        if due <= 0:
            break
        left = credit_note_unapplied(note)
        if left <= 0:
            continue
        amount = min(left, due)
        total += _apply(note, invoice, amount, now)
        due -= amount
    return total


def credit_overlap_release(*, invoice: Invoice) -> Decimal:
    """When payments and applied credits together exceed an invoice's total (the customer
    paid in full before or despite a credit), the excess credit goes back to the balance:
    the latest applications shrink first. Returns the amount released."""
    paid = (
        Payment.objects.filter(
            invoice=invoice,
            status__in=(PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED),
            duplicate_of__isnull=True,
        ).aggregate(s=Sum("amount"))["s"]
        or ZERO
    )
    applications = list(
        CreditApplication.objects.select_for_update()
        .filter(invoice=invoice)
        .order_by("-applied_at", "-pk")
    )
    excess = paid + sum((a.amount for a in applications), ZERO) - invoice.gross_total
    released = ZERO
    for application in applications:
        if excess <= 0:
            break
        take = min(application.amount, excess)
        if take == application.amount:
            application.delete()
        else:
            application.amount -= take
            application.save(update_fields=["amount"])
        excess -= take
        released += take
    if released:
        invoice.amount_credited = (
            invoice.credit_applications.aggregate(s=Sum("amount"))["s"] or ZERO
        )
        invoice.save(update_fields=["amount_credited"])
    return released


# --- The ledger, as finance and the customer read it ----------------------------------


@dataclass(frozen=True)
class LedgerEntry:
    at: datetime
    kind: str  # "invoice" | "payment" | "credit_note" | "refund"
    document: str
    reference: str
    debit: Decimal  # what the customer owes more
    credit: Decimal  # what the customer paid or was credited


def ledger_entries(*, organisation: Organisation, currency: str) -> list[LedgerEntry]:
    """Every invoice, payment, refund and credit note of the customer in ``currency``, by
    time. Σ debit − Σ credit is what the customer owes (negative: their credit balance
    plus any prepayment)."""
    entries: list[LedgerEntry] = []
    for inv in Invoice.objects.filter(organisation=organisation, currency=currency).exclude(
        status=InvoiceStatus.VOID
    ):
        entries.append(
            LedgerEntry(
                inv.issued_at, "invoice", inv.number, inv.bank_reference, inv.gross_total, ZERO
            )
        )
    for pay in Payment.objects.filter(
        invoice__organisation=organisation,
        currency=currency,
        status__in=(PaymentStatus.SUCCEEDED, PaymentStatus.REFUNDED),
        duplicate_of__isnull=True,
    ).select_related("invoice"):
        entries.append(
            LedgerEntry(
                pay.succeeded_at or pay.created_at,
                "payment",
                pay.invoice.number,
                pay.reference or pay.stripe_payment_intent or "",
                ZERO,
                pay.amount,
            )
        )
    for refund in Refund.objects.filter(
        invoice__organisation=organisation, currency=currency
    ).select_related("invoice"):
        entries.append(
            LedgerEntry(
                refund.created_at, "refund", refund.number, refund.reference, refund.amount, ZERO
            )
        )
    for note in CreditNote.objects.filter(organisation=organisation, currency=currency):
        entries.append(
            LedgerEntry(
                note.issued_at,
                "credit_note",
                note.number,
                note.invoice.number,
                ZERO,
                -note.gross_total,
            )
        )
    return sorted(entries, key=lambda e: (e.at, e.kind))
