"""The usage import as a django-import-export resource: one rule for every way in.

The admin's upload (preview, then confirm), ``manage.py import_usage`` and
``POST /api/usage/`` all import through :class:`UsageRecordResource`:

* A CSV file is read by :class:`UsageCSV` (through :func:`core.csv.read_csv`: the header
  names the columns, in any order; cells are stripped and a spreadsheet's formula escape
  ``'`` is taken off); the API's JSON records become the same dataset
  (:func:`dataset_from_records`: a record that is not an object, or a value that is
  neither text nor a number, is that row's error). The columns are ``external_id,
  order, day, quantity`` and optionally ``metric`` (``egress_tb``, the default) and
  ``node``. No cell may hold a control character (a NUL would be stored and exported).
* Each row is checked field by field (an order by its number, and one that ran; a day
  within the order, written exactly ``YYYY-MM-DD``; a quantity of TB with at most 3
  decimals; a node name of at most 100 characters, never cut), then across rows: the
  same external id twice in one file is refused.
* A row whose external id was recorded before (for the same order) with the same values
  is left as it is (skipped, "unchanged": re-sends are idempotent); with other values it
  is refused. Records are never updated by an import.
* Any bad row means nothing is stored (the import rolls back on validation errors too);
  :func:`import_errors` turns a result into :class:`RowError` s: the row (1 = the first
  data row), the column and the reason, in the active language.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

import tablib
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError
from django.db.models import Model
from django.utils import timezone
from django.utils.translation import gettext as _
from import_export import fields, resources, widgets
from import_export.instance_loaders import BaseInstanceLoader
from import_export.results import Result

from billing.models import ORDER_PAID_STATUSES, Order, UsageMetric, UsageRecord
from core.csv import CSVFileError, EscapedCSV, LineNumberedDataset, read_csv
from core.types import Actor, actor_or_none

#: The columns, in the order errors are listed within a row.
COLUMNS = ("external_id", "order", "metric", "day", "quantity", "node")
REQUIRED = ("external_id", "order", "day", "quantity")
MAX_ROWS = 20_000
#: The largest body the API takes and the largest file the admin's upload takes.
MAX_UPLOAD_BYTES = 5 * 1024 * 1024
MAX_QUANTITY = Decimal("1000000")
#: Usage is recorded for orders that ran (not for lapsed or cancelled ones).
METERED_STATUSES = ORDER_PAID_STATUSES


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


# --- Reading: a CSV file or the API's records ---------------------------------------------


def check_row_count(dataset: tablib.Dataset) -> None:
    """Raise :class:`CSVFileError` for an empty dataset or one of more than ``MAX_ROWS``."""
    if not dataset.height:
        raise CSVFileError(_("There are no rows to import."))
    if dataset.height > MAX_ROWS:
        raise CSVFileError(_("At most %(n)s rows at once.") % {"n": MAX_ROWS})


class UsageCSV(EscapedCSV):
    """A usage CSV read by :func:`core.csv.read_csv` (columns checked before any row)."""

    def create_dataset(self, in_stream: str | bytes, **kwargs: Any) -> LineNumberedDataset:
        dataset = read_csv(
            in_stream,
            required=REQUIRED,
            known=COLUMNS,
            what=str(UsageRecord._meta.verbose_name),
        )
        check_row_count(dataset)
        return dataset


class RecordsDataset(tablib.Dataset):
    """The API's JSON records as a dataset; ``not_objects`` are the rows (1-based) that
    were not JSON objects (their cells are blank); ``not_scalars`` the (row, column)
    pairs whose value was an object, a list or true/false (their cells are blank)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.not_objects: set[int] = set()
        self.not_scalars: dict[int, list[str]] = {}


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def dataset_from_records(records: Sequence[Any]) -> RecordsDataset:
    """The records (dicts by column name; other keys are ignored) as a dataset of text."""
    dataset = RecordsDataset(headers=list(COLUMNS))
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            dataset.not_objects.add(number)
            record = {}
        cells = []
        for column in COLUMNS:
            value = record.get(column)
            if value is not None and not _scalar(value):
                dataset.not_scalars.setdefault(number, []).append(column)
                value = None
            cells.append("" if value is None else str(value))
        dataset.append(cells)
    return dataset


# --- Widgets ---------------------------------------------------------------------------


def _cell(value: Any) -> str:
    return "" if value is None else str(value).strip()


def has_control_characters(text: str) -> bool:
    """NUL, escapes, line breaks inside a cell…: nothing a usage cell may hold."""
    return any(unicodedata.category(c) == "Cc" for c in text)


def control_characters_message() -> str:
    return _("Remove the control characters (such as NUL) from this value.")


#: Exactly ISO 8601's calendar date: ``date.fromisoformat`` also takes 20261220 and
#: 2026-W52-1, which a metering system writing them has most likely mixed up.
ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


class ExternalIdWidget(widgets.Widget):
    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> str:
        text = _cell(value)
        if not text or len(text) > 100:
            raise ValueError(_("Give an id of 1 to 100 characters."))
        return text


class OrderWidget(widgets.Widget):
    """An order given by its number; only an order that ran has usage."""

    def __init__(self) -> None:
        super().__init__()
        self._cache: dict[str, Order | None] = {}

    def lookup(self, number: str) -> Order | None:
        if number not in self._cache:
            self._cache[number] = (
                Order.objects.filter(number=number).select_related("site").first()
                if number
                else None
            )
        return self._cache[number]

    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> Order:
        number = _cell(value)
        order = self.lookup(number)
        if order is None:
            raise ValueError(_("No order %(n)s.") % {"n": number or "—"})
        if order.status not in METERED_STATUSES:
            raise ValueError(
                _("Order %(n)s is %(status)s: it has no usage.")
                % {"n": order.number, "status": order.get_status_display()}
            )
        return order

    def render(self, value: Order | None, obj: Model | None = None, **kwargs: Any) -> str:
        return value.number if value is not None else ""


class MetricWidget(widgets.Widget):
    """One of :class:`UsageMetric`; blank is egress."""

    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> str:
        metric = _cell(value) or UsageMetric.EGRESS_TB
        if metric not in UsageMetric.values:
            raise ValueError(
                _("Unknown metric %(m)s (use %(ok)s).")
                % {"m": metric, "ok": ", ".join(UsageMetric.values)}
            )
        return str(metric)


class DayWidget(widgets.Widget):
    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> date:
        text = _cell(value)
        try:
            if not ISO_DAY.fullmatch(text):
                raise ValueError
            return date.fromisoformat(text)
        except ValueError:
            raise ValueError(_("Write the day as YYYY-MM-DD.")) from None


class QuantityWidget(widgets.Widget):
    """TB from 0 to ``MAX_QUANTITY`` with at most 3 decimals."""

    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> Decimal:
        try:
            quantity = Decimal(_cell(value))
            if not quantity.is_finite() or quantity < 0 or quantity > MAX_QUANTITY:
                raise InvalidOperation
            if quantity != quantity.quantize(Decimal("0.001")):
                raise InvalidOperation
        except (InvalidOperation, ValueError):
            raise ValueError(
                _("Give a number of TB from 0 to 1,000,000 with at most 3 decimals.")
            ) from None
        return quantity


class NodeWidget(widgets.Widget):
    """The node's hostname, as given (at most 100 characters; never cut)."""

    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> str:
        text = _cell(value)
        if len(text) > 100:
            raise ValueError(
                _("A node name has at most 100 characters; this one has %(n)s.") % {"n": len(text)}
            )
        return text


# --- The resource ------------------------------------------------------------------------


class UsageInstanceLoader(BaseInstanceLoader):
    """Finds the records already stored for the dataset's (order, external id) pairs in
    one query, not one per row."""

    def __init__(
        self, resource: UsageRecordResource, dataset: tablib.Dataset | None = None
    ) -> None:
        super().__init__(resource, dataset)
        keys = {
            key
            for key in (_key(row) for row in (dataset.dict if dataset is not None else []))
            if not has_control_characters("".join(key))  # refused by the row's checks
        }
        stored = UsageRecord.objects.filter(
            order__number__in={number for number, _id in keys},
            external_id__in={external_id for _number, external_id in keys},
        ).select_related("order")
        self.stored = {(r.order.number, r.external_id): r for r in stored}

    def get_instance(self, row: dict[str, Any]) -> UsageRecord | None:
        return self.stored.get(_key(row))


def _key(row: dict[str, Any]) -> tuple[str, str]:
    return _cell(row.get("order")), _cell(row.get("external_id"))


class UsageRecordResource(resources.ModelResource):
    """Usage records from a CSV file or the API's records; never updates a record."""

    external_id = fields.Field(
        attribute="external_id", column_name="external_id", widget=ExternalIdWidget()
    )
    order = fields.Field(attribute="order", column_name="order", widget=OrderWidget())
    metric = fields.Field(attribute="metric", column_name="metric", widget=MetricWidget())
    day = fields.Field(attribute="day", column_name="day", widget=DayWidget())
    quantity = fields.Field(attribute="quantity", column_name="quantity", widget=QuantityWidget())
    node = fields.Field(attribute="node_hostname", column_name="node", widget=NodeWidget())

    class Meta:
        model = UsageRecord
        name = "Usage records"
        fields = COLUMNS
        import_order = COLUMNS
        import_id_fields = ("order", "external_id")
        instance_loader_class = UsageInstanceLoader
        use_transactions = True
        use_bulk = True
        batch_size = 1000
        skip_unchanged = True
        report_skipped = True
        clean_model_instances = False
        # No copy of each stored record to show what changed (records never change): an
        # import of 20,000 rows takes half the time. The admin's preview shows the rows.
        skip_diff = True

    def __init__(self, *, source: str = "csv", actor: Actor = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source
        self.actor = actor_or_none(actor)
        self._seen: set[tuple[str, str]] = set()
        self._not_objects: set[int] = set()
        self._not_scalars: dict[int, list[str]] = {}

    @classmethod
    def column_of(cls) -> dict[str, str]:
        """Column names by field attribute (``node_hostname`` is the ``node`` column)."""
        return {f.attribute: f.column_name for f in cls.fields.values()}

    def import_data(self, dataset: tablib.Dataset, **kwargs: Any) -> Result:
        # A file goes in whole or not at all: roll back on a row that fails validation too.
        kwargs["rollback_on_validation_errors"] = True
        kwargs.setdefault("use_transactions", True)
        return super().import_data(dataset, **kwargs)

    def before_import(self, dataset: tablib.Dataset, **kwargs: Any) -> None:
        super().before_import(dataset, **kwargs)
        self._seen = set()
        self._not_objects = set(getattr(dataset, "not_objects", ()))
        self._not_scalars = dict(getattr(dataset, "not_scalars", {}))
        if kwargs.get("user") is not None:
            self.actor = actor_or_none(kwargs["user"])

    def import_instance(self, instance: UsageRecord, row: dict[str, Any], **kwargs: Any) -> None:
        if kwargs.get("row_number") in self._not_objects:
            raise ValidationError({"row": [_("Each record must be an object.")]})
        stored = (
            None if instance._state.adding else (instance.metric, instance.day, instance.quantity)
        )
        errors: dict[str, list[str]] = {}
        # An optional column that the file leaves out is blank: the default metric.
        row = {column: row.get(column, "") for column in COLUMNS}
        attribute_of = {c: a for a, c in self.column_of().items()}
        refused: dict[str, str] = {}
        for column in self._not_scalars.get(kwargs.get("row_number") or 0, []):
            refused[column] = _("Give text or a number, not an object, a list or true/false.")
        for column in COLUMNS:
            if column not in refused and has_control_characters(str(row[column] or "")):
                refused[column] = control_characters_message()
        for column in refused:
            row[column] = ""  # checked no further: its own message says what is wrong
        try:
            super().import_instance(instance, row, **kwargs)
        except ValidationError as exc:
            errors = {k: list(v) for k, v in exc.message_dict.items()}
        for column, message in refused.items():
            errors[attribute_of[column]] = [message]
        for field, messages in self.row_checks(instance, row, stored, errors).items():
            errors.setdefault(field, []).extend(messages)
        if errors:
            order = [f.attribute for f in self.get_import_fields()]
            raise ValidationError(
                {f: errors[f] for f in sorted(errors, key=lambda f: order.index(f))}
            )

    def row_checks(
        self,
        instance: UsageRecord,
        row: dict[str, Any],
        stored: tuple[str, date, Decimal] | None,
        errors: dict[str, list[str]],
    ) -> dict[str, list[str]]:
        """Checks across columns and rows, after each field's own; ``{field: [messages]}``."""
        found: dict[str, list[str]] = {}
        number, external_id = _key(row)
        order = self.fields["order"].widget.lookup(number)
        if order is not None and "day" not in errors:
            tz = order.site.tzinfo
            first = timezone.localtime(order.start_at, tz).date()
            last = (timezone.localtime(order.end_at, tz) - timedelta(microseconds=1)).date()
            if not first <= instance.day <= last:
                found["day"] = [
                    _("%(day)s is outside order %(n)s (%(first)s – %(last)s).")
                    % {"day": instance.day, "n": order.number, "first": first, "last": last}
                ]
        if order is not None and external_id:
            if (number, external_id) in self._seen:
                found["external_id"] = [_("The same id appears twice in this file.")]
            self._seen.add((number, external_id))
        if stored is not None and not errors and not found:
            day, quantity = stored[1], stored[2]
            if (instance.metric, instance.day, instance.quantity) != stored:
                found["external_id"] = [
                    _("Id %(id)s was recorded before with other values (%(day)s, %(q)s).")
                    % {"id": external_id, "day": day, "q": quantity}
                ]
        return found

    def skip_row(
        self,
        instance: UsageRecord,
        original: UsageRecord | None,
        row: dict[str, Any],
        import_validation_errors: dict[str, Any] | None = None,
    ) -> bool:
        # A stored record that passed the checks has the same values: it stays as it is.
        return not import_validation_errors and not instance._state.adding

    def before_save_instance(
        self, instance: UsageRecord, row: dict[str, Any], **kwargs: Any
    ) -> None:
        super().before_save_instance(instance, row, **kwargs)
        instance.source = self.source
        instance.recorded_by = self.actor

    def after_import(self, dataset: tablib.Dataset, result: Result, **kwargs: Any) -> None:
        # Not ModelResource's: it resets the id sequence (meant for imported ids), which
        # could hand out an id that a concurrent insert already holds.
        resources.Resource.after_import(self, dataset, result, **kwargs)


class UsageRecordPreviewResource(UsageRecordResource):
    """The resource of the admin's import, whose preview shows each row's values."""

    class Meta:
        skip_diff = False


# --- Errors ------------------------------------------------------------------------------


def concurrent_message() -> str:
    return _("These records were being stored at the same time; send again.")


def import_errors(result: Result) -> list[RowError]:
    """Every problem of an import's result, sorted by row (file-wide ones are row 0).

    A unique-key clash while storing (the same ids sent twice at the same moment: the
    other import stored them) is one file-wide error; any other unexpected error is
    raised again, not shown as a row's problem.
    """
    column_of = UsageRecordResource.column_of()
    errors: list[RowError] = []
    failed_rows = [e for _number, row_errors in result.row_errors() for e in row_errors]
    for failure in [*result.base_errors, *failed_rows]:
        if not isinstance(failure.error, IntegrityError):
            raise failure.error
        errors.append(RowError(0, "file", concurrent_message()))
    for invalid in result.invalid_rows:
        for field, messages in invalid.error_dict.items():
            column = "row" if field == NON_FIELD_ERRORS else column_of.get(field, field)
            errors.extend(RowError(invalid.number, column, str(m)) for m in messages)
    return sorted(dict.fromkeys(errors), key=lambda e: e.row)
