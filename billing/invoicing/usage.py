"""Metered usage (egress traffic): records imported by CSV or posted to the API.

One rule for every way in: the import goes through
:class:`billing.invoicing.resources.UsageRecordResource` (django-import-export), whose
docstring says what is checked. :func:`usage_import` runs it twice in one transaction,
a dry run first and then the import, and when any row is wrong nothing is stored and
every problem is reported with its row number (:class:`UsageImportError`); a row whose
external id was recorded before with the same values is left as it is (idempotent
re-sends); the same external id with other values is refused. Records are billed
monthly in arrears by ``billing.invoicing.services``.

Who may record usage: the metering system's token, or a user with the one permission
``billing.record_usage`` (:func:`may_record_usage`), for the API, the admin's import and
the void action alike. A wrong record is never changed: :func:`usage_record_void` adds a
voiding record with the reason, which the next invoice reflects (a correction line when
the record was billed already); a correction is a void and a new record.

CSV files are read by ``core.csv`` (the header names the columns, in any order): the
columns are ``external_id, order, day, quantity`` and optionally
``metric`` (``egress_tb``, the default) and ``node``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import tablib
from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from import_export.results import RowResult

from billing.invoicing.resources import (
    RowError,
    UsageCSV,
    UsageRecordResource,
    check_row_count,
    dataset_from_records,
    import_errors,
)
from billing.models import UsageRecord
from core.csv import CSVFileError
from core.errors import DomainError
from core.types import Actor


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


def usage_import(*, dataset: tablib.Dataset, source: str, actor: Actor) -> ImportResult:
    """Check every row (a dry run), then store them all or nothing, in one transaction."""
    try:
        check_row_count(dataset)
    except CSVFileError as exc:
        raise UsageImportError([RowError(0, "file", exc.message)]) from None
    with transaction.atomic():
        for dry_run in (True, False):
            resource = UsageRecordResource(source=source, actor=actor)
            result = resource.import_data(dataset, dry_run=dry_run, raise_errors=False)
            errors = import_errors(result)
            if errors:
                raise UsageImportError(errors)
    return ImportResult(
        created=result.totals[RowResult.IMPORT_TYPE_NEW],
        unchanged=result.totals[RowResult.IMPORT_TYPE_SKIP],
    )


def usage_import_csv(*, text: str | bytes, source: str, actor: Actor) -> ImportResult:
    """Import a usage CSV; a file that cannot be read is one error on row 0."""
    try:
        dataset = UsageCSV().create_dataset(text)
    except CSVFileError as exc:
        raise UsageImportError([RowError(0, "file", exc.message)]) from None
    return usage_import(dataset=dataset, source=source, actor=actor)


def usage_import_records(*, records: Sequence[Any], source: str, actor: Actor) -> ImportResult:
    """Import the API's JSON records (dicts by column name)."""
    return usage_import(dataset=dataset_from_records(records), source=source, actor=actor)


#: The permission behind every way a person records or voids usage.
RECORD_USAGE = "billing.record_usage"


def may_record_usage(user: Actor) -> bool:
    """Whether ``user`` may post, import or void usage (``billing.record_usage``)."""
    return bool(user is not None and user.is_active and user.has_perm(RECORD_USAGE))


def usage_record_void(*, record: UsageRecord, reason: str, actor: Actor) -> UsageRecord:
    """Void a usage record: a voiding record with the opposite quantity and the reason,
    on the same order, metric and day. Unbilled, the two cancel out on the next invoice;
    billed already, the next invoice carries a correction line. Once only; a voiding
    record is not voided itself."""
    reason = " ".join((reason or "").split())
    if not reason:
        raise DomainError(_("Say why the record is voided."))
    if len(reason) > 500:
        raise DomainError(_("Keep the reason to 500 characters."))
    with transaction.atomic():
        locked = UsageRecord.objects.select_for_update().get(pk=record.pk)
        if locked.voids_id is not None:
            raise DomainError(_("This record voids another one; it cannot be voided itself."))
        if UsageRecord.objects.filter(voids=locked).exists():
            raise DomainError(_("Record %(id)s is voided already.") % {"id": locked.external_id})
        return UsageRecord.objects.create(
            order_id=locked.order_id,
            metric=locked.metric,
            day=locked.day,
            quantity=-locked.quantity,
            external_id=f"void:{locked.pk}",
            source="void",
            node_hostname=locked.node_hostname,
            recorded_by=actor if getattr(actor, "pk", None) else None,
            voids=locked,
            void_reason=reason,
        )
