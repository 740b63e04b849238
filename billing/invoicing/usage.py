"""Metered usage (egress traffic): records imported by CSV or posted to the API.

One rule for every way in (``usage_import``): all rows are checked first and, when any
is wrong, nothing is stored and every problem is reported with its row number; a row
whose external id was recorded before with the same values is left as it is
(idempotent re-sends); the same external id with other values is refused. Records are
billed monthly in arrears by ``billing.invoicing.services``.

CSV files are read by ``core.csv`` (the header names the columns, in any order): the
columns are ``external_id, order, day, quantity`` and optionally
``metric`` (``egress_tb``, the default) and ``node``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from billing.models import Order, OrderStatus, UsageMetric, UsageRecord
from core.csv import CSVFileError, read_csv_dicts
from core.errors import DomainError
from core.types import Actor

REQUIRED = ("external_id", "order", "day", "quantity")
OPTIONAL = ("metric", "node")
MAX_ROWS = 20_000
MAX_QUANTITY = Decimal("1000000")
# Usage is recorded for orders that ran (not for lapsed or cancelled ones).
METERED_STATUSES = (
    OrderStatus.PAID,
    OrderStatus.PROVISIONING,
    OrderStatus.VALIDATING,
    OrderStatus.READY,
    OrderStatus.ENDED,
)


@dataclass(frozen=True)
class RowError:
    row: int  # 1 = the first data row (the header is row 0)
    field: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"row": self.row, "field": self.field, "message": self.message}

    def __str__(self) -> str:
        return _("Row %(row)s, %(field)s: %(message)s") % {
            "row": self.row,
            "field": self.field,
            "message": self.message,
        }


class UsageImportError(DomainError):
    """Some rows are wrong: nothing was stored."""

    def __init__(self, errors: list[RowError]) -> None:
        self.errors = errors
        super().__init__(
            ngettext(
                "Nothing was imported: %(count)s problem. %(first)s",
                "Nothing was imported: %(count)s problems. %(first)s",
                len(errors),
            )
            % {"count": len(errors), "first": "; ".join(str(e) for e in errors[:5])}
        )


@dataclass(frozen=True)
class ImportResult:
    created: int
    unchanged: int


def rows_from_csv(text: str | bytes) -> list[dict[str, str]]:
    """The CSV's rows as dicts, read by ``core.csv`` (cells stripped, a spreadsheet's
    formula escape undone); a file that cannot be read is one error on row 0."""
    try:
        return read_csv_dicts(
            text,
            required=REQUIRED,
            known=REQUIRED + OPTIONAL,
            what=str(UsageRecord._meta.verbose_name),
        )
    except CSVFileError as exc:
        raise UsageImportError([RowError(0, "file", exc.message)]) from None


def _check(
    index: int, raw: dict[str, Any], orders: dict[str, Order], seen: set[tuple[str, str]]
) -> tuple[dict[str, Any] | None, list[RowError]]:
    errors: list[RowError] = []
    values = {
        k: ("" if raw.get(k) is None else str(raw.get(k)).strip()) for k in REQUIRED + OPTIONAL
    }
    external_id = values["external_id"]
    if not external_id or len(external_id) > 100:
        errors.append(RowError(index, "external_id", _("Give an id of 1 to 100 characters.")))
    order = orders.get(values["order"])
    if order is None:
        errors.append(
            RowError(index, "order", _("No order %(n)s.") % {"n": values["order"] or "—"})
        )
    elif order.status not in METERED_STATUSES:
        errors.append(
            RowError(
                index,
                "order",
                _("Order %(n)s is %(status)s: it has no usage.")
                % {"n": order.number, "status": order.get_status_display()},
            )
        )
    metric = values["metric"] or UsageMetric.EGRESS_TB
    if metric not in UsageMetric.values:
        errors.append(
            RowError(
                index,
                "metric",
                _("Unknown metric %(m)s (use %(ok)s).")
                % {"m": metric, "ok": ", ".join(UsageMetric.values)},
            )
        )
    day: date | None = None
    try:
        day = date.fromisoformat(values["day"])
    except ValueError:
        errors.append(RowError(index, "day", _("Write the day as YYYY-MM-DD.")))
    if day is not None and order is not None:
        tz = order.site.tzinfo
        first = timezone.localtime(order.start_at, tz).date()
        last = (timezone.localtime(order.end_at, tz) - timedelta(microseconds=1)).date()
        if not first <= day <= last:
            errors.append(
                RowError(
                    index,
                    "day",
                    _("%(day)s is outside order %(n)s (%(first)s – %(last)s).")
                    % {"day": day, "n": order.number, "first": first, "last": last},
                )
            )
    quantity: Decimal | None = None
    try:
        quantity = Decimal(values["quantity"])
        if not quantity.is_finite() or quantity < 0 or quantity > MAX_QUANTITY:
            raise InvalidOperation
        if quantity != quantity.quantize(Decimal("0.001")):
            raise InvalidOperation
    except (InvalidOperation, ValueError):
        quantity = None
        errors.append(
            RowError(
                index,
                "quantity",
                _("Give a number of TB from 0 to 1,000,000 with at most 3 decimals."),
            )
        )
    if order is not None and external_id:
        key = (order.number, external_id)
        if key in seen:
            errors.append(
                RowError(index, "external_id", _("The same id appears twice in this file."))
            )
        seen.add(key)
    if errors:
        return None, errors
    return {
        "order": order,
        "external_id": external_id,
        "metric": metric,
        "day": day,
        "quantity": quantity,
        "node_hostname": values["node"][:100],
    }, []


def usage_import(*, rows: list[dict[str, Any]], source: str, actor: Actor) -> ImportResult:
    """Check every row, then store them all or nothing (see the module docstring)."""
    if not rows:
        raise UsageImportError([RowError(0, "file", _("There are no rows to import."))])
    if len(rows) > MAX_ROWS:
        raise UsageImportError(
            [RowError(0, "file", _("At most %(n)s rows at once.") % {"n": MAX_ROWS})]
        )
    numbers = {str(r.get("order") or "").strip() for r in rows}
    orders = {o.number: o for o in Order.objects.filter(number__in=numbers).select_related("site")}
    seen: set[tuple[str, str]] = set()
    checked: list[dict[str, Any]] = []
    errors: list[RowError] = []
    for i, raw in enumerate(rows, start=1):
        if not isinstance(raw, dict):
            errors.append(RowError(i, "row", _("Each record must be an object.")))
            continue
        row, problems = _check(i, raw, orders, seen)
        errors.extend(problems)
        if row is not None:
            checked.append(row)
    existing = {
        (r.order_id, r.external_id): r
        for r in UsageRecord.objects.filter(
            order__in=[o.pk for o in orders.values()],
            external_id__in=[r["external_id"] for r in checked],
        )
    }
    new = []
    unchanged = 0
    for i, row in enumerate(checked, start=1):
        known = existing.get((row["order"].pk, row["external_id"]))
        if known is None:
            new.append(row)
        elif (known.metric, known.day, known.quantity) == (
            row["metric"],
            row["day"],
            row["quantity"],
        ):
            unchanged += 1
        else:
            errors.append(
                RowError(
                    i,
                    "external_id",
                    _("Id %(id)s was recorded before with other values (%(day)s, %(q)s).")
                    % {"id": row["external_id"], "day": known.day, "q": known.quantity},
                )
            )
    if errors:
        raise UsageImportError(sorted(errors, key=lambda e: e.row))
    try:
        with transaction.atomic():
            UsageRecord.objects.bulk_create(
                [
                    UsageRecord(
                        source=source,
                        recorded_by=actor if getattr(actor, "pk", None) else None,
                        **r,
                    )
                    for r in new
                ]
            )
    except IntegrityError:
        # The same ids sent twice at the same moment: the other request stored them.
        raise UsageImportError(
            [
                RowError(
                    0, "file", _("These records were being stored at the same time; send again.")
                )
            ]
        ) from None
    return ImportResult(created=len(new), unchanged=unchanged)


def usage_import_csv(*, text: str | bytes, source: str, actor: Actor) -> ImportResult:
    return usage_import(rows=rows_from_csv(text), source=source, actor=actor)
