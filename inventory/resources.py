"""CSV import and export of nodes and switches (django-import-export resources).

What the admin's import does with these resources:

* The file is read by :class:`InventoryCSV`, which refuses anything that is not UTF-8
  CSV text with the expected columns (a clear form error, never a traceback) and keeps
  the line of the file that each row came from.
* Every row is checked in a dry run first (the preview); the confirm step imports again
  inside one transaction that is rolled back if any row fails, so a file goes in whole
  or not at all.
* Foreign keys are given by name: a site by its code, a rack and a switch by their name
  within the row's site, a node type by its code. Each failed lookup is a row error that
  says what was not found, and errors carry the *file* line (the header is line 1).
* Node statuses move only through :func:`inventory.services.node_transition`; new nodes
  are added through :func:`inventory.services.node_create` (which writes their first
  ``NodeEvent``).
* A file of more rows than ``INVENTORY_CSV_IMPORT_MAX_SYNC_ROWS`` is refused on the admin
  page (:class:`TooManyRowsError`); :mod:`inventory.csv_jobs` imports it in the background.

What an export does: every cell that a spreadsheet would run as a formula (it starts with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return) gets a ``'`` in front
(:class:`EscapedCSV`); the import takes that ``'`` off again, so an exported file imports
back unchanged.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import tablib
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db.models import Model, QuerySet
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from import_export import fields, resources, widgets
from import_export.formats import base_formats
from import_export.results import Result, RowResult

from core.errors import DomainError
from inventory import services
from inventory.models import (
    Fabric,
    Node,
    NodeStatus,
    NodeType,
    Rack,
    Site,
    Switch,
    SwitchRole,
)

# --- Reading the file -------------------------------------------------------------------


class CSVFileError(ValueError):
    """The uploaded file cannot be read as the expected CSV; ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def not_csv_message() -> str:
    return _(
        "This file is not UTF-8 text, so it cannot be read as CSV. If it is a spreadsheet, "
        "save it as “CSV UTF-8 (comma delimited)” and upload that file."
    )


class LineNumberedDataset(tablib.Dataset):
    """A dataset that remembers the line of the file each of its rows started on."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.line_numbers: list[int] = []


def read_csv(
    data: str | bytes, *, required: Sequence[str], known: Sequence[str], what: str
) -> LineNumberedDataset:
    """Parse CSV text into a dataset, or raise :class:`CSVFileError` saying what is wrong.

    The first line names the columns (case and surrounding spaces do not matter); the
    delimiter is a comma, or a semicolon or tab when the header uses one of those.
    Blank lines are skipped; each row keeps the line of the file it started on.
    """
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise CSVFileError(not_csv_message()) from exc
    text = data.removeprefix("\ufeff")
    if "\x00" in text:
        raise CSVFileError(not_csv_message())
    if not text.strip():
        raise CSVFileError(_("The file is empty."))
    first_line = text.splitlines()[0]
    delimiter = ","
    if "," not in first_line:
        delimiter = next((d for d in (";", "\t") if d in first_line), ",")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except csv.Error as exc:
        raise CSVFileError(
            _("Line 1 (the header) cannot be read as CSV: %(error)s.") % {"error": exc}
        ) from exc
    headers = [h.strip().lower() for h in header]
    while headers and not headers[-1]:
        headers.pop()
    columns_help = _("A %(what)s CSV has these columns, named on its first line: %(columns)s.") % {
        "what": what,
        "columns": ", ".join(known),
    }
    duplicated = sorted({h for h in headers if headers.count(h) > 1})
    if duplicated:
        raise CSVFileError(
            _("The header names these columns more than once: %(columns)s.")
            % {"columns": ", ".join(duplicated)}
        )
    missing = [c for c in required if c not in headers]
    if missing:
        raise CSVFileError(
            ngettext(
                "The file lacks the column %(columns)s.",
                "The file lacks the columns %(columns)s.",
                len(missing),
            )
            % {"columns": ", ".join(missing)}
            + " "
            + columns_help
        )
    unknown = [h or _("(blank)") for h in headers if h not in known]
    if unknown:
        raise CSVFileError(
            ngettext(
                "Unknown column %(columns)s.",
                "Unknown columns %(columns)s.",
                len(unknown),
            )
            % {"columns": ", ".join(unknown)}
            + " "
            + columns_help
        )
    dataset = LineNumberedDataset(headers=headers)
    width = len(headers)
    while True:
        line = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise CSVFileError(
                _("Line %(line)d cannot be read as CSV: %(error)s.") % {"line": line, "error": exc}
            ) from exc
        cells = [unescape_formula(c.strip()) for c in record]
        if not any(cells):
            continue
        if len(cells) > width:
            if any(cells[width:]):
                raise CSVFileError(
                    _("Line %(line)d has %(cells)d cells but the header names %(width)d columns.")
                    % {"line": line, "cells": len(cells), "width": width}
                )
            cells = cells[:width]
        cells += [""] * (width - len(cells))
        dataset.append(cells)
        dataset.line_numbers.append(line)
    if not dataset.height:
        raise CSVFileError(_("The file has a header but no rows to import."))
    return dataset


class TooManyRowsError(CSVFileError):
    """The file has more rows than an import on the admin page takes at once."""

    def __init__(self, *, rows: int, limit: int) -> None:
        super().__init__(
            ngettext(
                "This file has %(rows)s rows; an import on this page takes at most %(limit)s "
                "row. Nothing was imported. Import larger files with “Import in the "
                "background”.",
                "This file has %(rows)s rows; an import on this page takes at most %(limit)s "
                "rows. Nothing was imported. Import larger files with “Import in the "
                "background”.",
                limit,
            )
            % {
                "rows": number_format(rows, force_grouping=True),
                "limit": number_format(limit, force_grouping=True),
            }
        )
        self.rows = rows
        self.limit = limit


def sync_import_max_rows() -> int:
    """How many rows an import on the admin page (preview, then confirm) takes at most."""
    return settings.INVENTORY_CSV_IMPORT_MAX_SYNC_ROWS


# --- Formulas in cells: escaped on export -------------------------------------------------

#: A spreadsheet runs a cell that starts with one of these as a formula (or a DDE call).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def escape_formula(value: Any) -> Any:
    """Text that a spreadsheet would run as a formula, with a ``'`` in front (the OWASP
    advice against CSV injection), so that it shows as the text it is. Anything else
    (blank, numbers, ordinary text) is returned unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def unescape_formula(text: str) -> str:
    """Undo :func:`escape_formula` on import, so that an exported file imports back as it
    was: a ``'`` is dropped only in front of a formula trigger."""
    if text.startswith("'") and text[1:].startswith(FORMULA_TRIGGERS):
        return text[1:]
    return text


def escape_formulae_on_export() -> bool:
    """django-import-export's setting, on unless explicitly set to ``False``."""
    return settings.IMPORT_EXPORT_ESCAPE_FORMULAE_ON_EXPORT is not False


def escaped_dataset(dataset: tablib.Dataset) -> tablib.Dataset:
    """A copy of ``dataset`` with every cell passed through :func:`escape_formula`."""
    copy = tablib.Dataset(headers=dataset.headers, title=dataset.title)
    for row in dataset:
        copy.append([escape_formula(cell) for cell in row])
    return copy


class EscapedCSV(base_formats.CSV):
    """CSV whose exported cells never start a formula (see :func:`escape_formula`).

    It honours ``IMPORT_EXPORT_ESCAPE_FORMULAE_ON_EXPORT`` but with the full rule: the
    library's own escape only drops a leading ``=`` (which changes the data) and leaves
    ``+``, ``-``, ``@``, tab and carriage return as they are.
    """

    def export_data(self, dataset: tablib.Dataset, **kwargs: Any) -> str:
        if escape_formulae_on_export():
            dataset = escaped_dataset(dataset)
        return dataset.export(self.get_title(), **kwargs)


class InventoryCSV(EscapedCSV):
    """CSV import for one resource: its columns are checked before any row is, and a file
    of more rows than :func:`sync_import_max_rows` is refused (``max_rows=None`` lifts the
    limit: the background import)."""

    resource_class: ClassVar[type[InventoryResource]]

    def create_dataset(self, in_stream: str | bytes, **kwargs: Any) -> LineNumberedDataset:
        resource = self.resource_class
        dataset = read_csv(
            in_stream,
            required=resource.required_columns,
            known=resource.column_names(),
            what=str(resource._meta.model._meta.verbose_name),
        )
        max_rows = kwargs.get("max_rows", sync_import_max_rows())
        if max_rows is not None and dataset.height > max_rows:
            raise TooManyRowsError(rows=dataset.height, limit=max_rows)
        return dataset


# --- Widgets: foreign keys by name --------------------------------------------------------


def _cell(value: Any) -> str:
    return "" if value is None else str(value).strip()


class SiteWidget(widgets.Widget):
    """A site given by its code."""

    def __init__(self) -> None:
        super().__init__()
        self._cache: dict[str, Site] = {}

    def lookup(self, code: str) -> Site | None:
        if code not in self._cache:
            site = Site.objects.filter(code=code).first()
            if site is None:
                return None
            self._cache[code] = site
        return self._cache[code]

    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> Site:
        code = _cell(value)
        if not code:
            raise ValueError(_("Give the site code."))
        site = self.lookup(code)
        if site is None:
            known = ", ".join(Site.objects.order_by("code").values_list("code", flat=True))
            raise ValueError(
                _("Unknown site “%(code)s”. Known sites: %(known)s.")
                % {"code": code, "known": known or _("none yet")}
            )
        return site

    def render(self, value: Site | None, obj: Model | None = None, **kwargs: Any) -> str:
        return value.code if value is not None else ""


class InSiteWidget(widgets.Widget):
    """A rack or switch given by its name within the site named in the row's site column."""

    model: ClassVar[type[Model]]

    def __init__(self, *, required: bool = True) -> None:
        super().__init__()
        self.required = required
        self._cache: dict[tuple[str, str], Model] = {}

    def queryset(self) -> QuerySet:
        return self.model._default_manager.select_related("site")

    def missing_message(self, name: str, site_code: str) -> str:
        raise NotImplementedError

    def check(self, obj: Model, site_code: str) -> None:
        """Raise ``ValueError`` if the object found is not acceptable here."""

    def blank_message(self) -> str:
        raise NotImplementedError

    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> Model | None:
        name = _cell(value)
        if not name:
            if self.required:
                raise ValueError(self.blank_message())
            return None
        site_code = _cell((row or {}).get("site"))
        key = (site_code, name)
        if key not in self._cache:
            obj = self.queryset().filter(site__code=site_code, name=name).first()
            if obj is None:
                raise ValueError(self.missing_message(name, site_code))
            self._cache[key] = obj
        obj = self._cache[key]
        self.check(obj, site_code)
        return obj

    def render(self, value: Any, obj: Model | None = None, **kwargs: Any) -> str:
        return value.name if value is not None else ""


class RackWidget(InSiteWidget):
    model = Rack

    def blank_message(self) -> str:
        return _("Give the rack name.")

    def missing_message(self, name: str, site_code: str) -> str:
        return _("Unknown rack “%(name)s” in site “%(site)s”.") % {"name": name, "site": site_code}


class LeafSwitchWidget(InSiteWidget):
    model = Switch

    def blank_message(self) -> str:
        return _("Give the leaf switch name.")

    def missing_message(self, name: str, site_code: str) -> str:
        return _("Unknown leaf switch “%(name)s” in site “%(site)s”.") % {
            "name": name,
            "site": site_code,
        }

    def check(self, obj: Model, site_code: str) -> None:
        if obj.role != SwitchRole.LEAF:
            raise ValueError(
                _("“%(name)s” in site “%(site)s” is a spine switch; a node hangs under a leaf.")
                % {"name": obj.name, "site": site_code}
            )


class NodeTypeWidget(widgets.Widget):
    """A node type given by its code."""

    def __init__(self) -> None:
        super().__init__()
        self._cache: dict[str, NodeType] = {}

    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> NodeType:
        code = _cell(value)
        if not code:
            raise ValueError(_("Give the node type code."))
        if code not in self._cache:
            node_type = NodeType.objects.filter(code=code).first()
            if node_type is None:
                known = ", ".join(NodeType.objects.order_by("code").values_list("code", flat=True))
                raise ValueError(
                    _("Unknown node type “%(code)s”. Known node types: %(known)s.")
                    % {"code": code, "known": known or _("none yet")}
                )
            self._cache[code] = node_type
        return self._cache[code]

    def render(self, value: NodeType | None, obj: Model | None = None, **kwargs: Any) -> str:
        return value.code if value is not None else ""


class ChoiceWidget(widgets.Widget):
    """One value of a ``TextChoices`` (its value, or its label in any case).

    Blank gives ``None`` when not required: the resource decides what that means.
    """

    def __init__(self, choices: Any, what: str, *, required: bool = True) -> None:
        super().__init__()
        self.values: list[str] = [str(v) for v in choices.values]
        self.by_text: dict[str, str] = {str(v).lower(): str(v) for v in choices.values}
        self.labels = choices
        self.what = what
        self.required = required

    def allowed(self) -> str:
        return ", ".join(self.values)

    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> str | None:
        text = _cell(value)
        if not text:
            if self.required:
                raise ValueError(
                    _("Give the %(what)s. Allowed values: %(allowed)s.")
                    % {"what": self.what, "allowed": self.allowed()}
                )
            return None
        by_text = dict(self.by_text)
        by_text.update({str(label).lower(): str(v) for v, label in self.labels.choices})
        if text.lower() not in by_text:
            raise ValueError(
                _("“%(value)s” is not a valid %(what)s. Allowed values: %(allowed)s.")
                % {"value": text, "what": self.what, "allowed": self.allowed()}
            )
        return by_text[text.lower()]


class UplinksWidget(widgets.ManyToManyWidget):
    """Spine switches of the row's site, named in one cell, separated by commas or semicolons."""

    def __init__(self) -> None:
        super().__init__(Switch, separator=";", field="name")

    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> list[Switch]:
        names = [n.strip() for n in re.split(r"[;,]", _cell(value)) if n.strip()]
        if not names:
            return []
        site_code = _cell((row or {}).get("site"))
        found = {
            s.name: s
            for s in Switch.objects.filter(site__code=site_code, name__in=names).order_by("name")
        }
        missing = [n for n in names if n not in found]
        if missing:
            raise ValueError(
                ngettext(
                    "Unknown spine switch %(names)s in site “%(site)s”.",
                    "Unknown spine switches %(names)s in site “%(site)s”.",
                    len(missing),
                )
                % {"names": ", ".join(f"“{n}”" for n in missing), "site": site_code}
                + " "
                + _("List spines above the leaves that uplink to them.")
            )
        leaves = [n for n in names if found[n].role != SwitchRole.SPINE]
        if leaves:
            raise ValueError(
                _("Uplinks go to spine switches; %(names)s is a leaf.")
                % {"names": ", ".join(f"“{n}”" for n in leaves)}
            )
        return [found[n] for n in dict.fromkeys(names)]

    def render(self, value: Any, obj: Model | None = None, **kwargs: Any) -> str:
        if value is None:
            return ""
        return ";".join(sorted(s.name for s in value.all()))


class TextWidget(widgets.CharWidget):
    """Text with surrounding spaces removed; blank is an empty string."""

    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> str:
        return _cell(value)


class PositiveIntegerWidget(widgets.Widget):
    def __init__(self, what: str, *, required: bool = True) -> None:
        super().__init__()
        self.what = what
        self.required = required

    def clean(self, value: Any, row: dict[str, Any] | None = None, **kwargs: Any) -> int | None:
        text = _cell(value)
        if not text:
            if self.required:
                raise ValueError(_("Give the %(what)s.") % {"what": self.what})
            return None
        try:
            number = int(text)
        except ValueError:
            raise ValueError(_("“%(value)s” is not a whole number.") % {"value": text}) from None
        if number <= 0:
            raise ValueError(_("Give a number above 0."))
        return number


# --- Resources --------------------------------------------------------------------------


class InventoryResource(resources.ModelResource):
    """What node and switch imports share: line numbers, all-or-nothing, clear errors."""

    required_columns: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *, progress: Callable[[int], None] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._line_numbers: list[int] = []
        self._actor: AbstractBaseUser | None = None
        self._file_name = ""
        # Told the number of rows checked so far after each row (the background import).
        self._progress = progress

    @classmethod
    def column_names(cls) -> list[str]:
        return [f.column_name for f in cls.fields.values()]

    def import_data(self, dataset: tablib.Dataset, **kwargs: Any) -> Result:
        # A file goes in whole or not at all: roll back on a row that fails validation too.
        kwargs["rollback_on_validation_errors"] = True
        kwargs.setdefault("use_transactions", True)
        return super().import_data(dataset, **kwargs)

    def before_import(self, dataset: tablib.Dataset, **kwargs: Any) -> None:
        super().before_import(dataset, **kwargs)
        self._line_numbers = list(getattr(dataset, "line_numbers", []))
        user = kwargs.get("user")
        self._actor = user if getattr(user, "is_authenticated", False) else None
        self._file_name = str(kwargs.get("file_name") or "")

    def import_row(self, row: dict[str, Any], instance_loader: Any, **kwargs: Any) -> RowResult:
        result = super().import_row(row, instance_loader, **kwargs)
        if self._progress is not None:
            self._progress(int(kwargs.get("row_number") or 0))
        return result

    def line_of(self, row_number: int | None) -> int:
        """The file line of the dataset row ``row_number`` (1-based; the header is line 1)."""
        if row_number is None:
            return 0
        if 0 < row_number <= len(self._line_numbers):
            return self._line_numbers[row_number - 1]
        return row_number + 1

    def reason(self, row_number: int | None) -> str:
        return _("CSV import of %(file)s, line %(line)d.") % {
            "file": self._file_name or _("a file"),
            "line": self.line_of(row_number),
        }

    def get_instance(self, instance_loader: Any, row: dict[str, Any]) -> Model | None:
        # A bad key (an unknown site, say) means no existing row; the field check that
        # follows reports it against its column.
        try:
            return super().get_instance(instance_loader, row)
        except ValueError:
            return None

    def row_checks(
        self, instance: Model, row: dict[str, Any], new: bool, line: int
    ) -> dict[str, list[str]]:
        """Checks across rows or columns; ``{field: [messages]}``."""
        return {}

    def import_instance(self, instance: Model, row: dict[str, Any], **kwargs: Any) -> None:
        errors: dict[str, list[str]] = {}
        try:
            super().import_instance(instance, row, **kwargs)
        except ValidationError as exc:
            errors = {k: list(v) for k, v in exc.message_dict.items()}
        new = instance._state.adding
        for field, messages in self.row_checks(
            instance, row, new, self.line_of(kwargs.get("row_number"))
        ).items():
            if field not in errors:
                errors.setdefault(field, []).extend(messages)
        if errors:
            raise ValidationError(errors)

    def after_import(self, dataset: tablib.Dataset, result: Result, **kwargs: Any) -> None:
        super().after_import(dataset, result, **kwargs)
        # Report the line of the file, not the position among the data rows.
        for invalid in result.invalid_rows:
            invalid.number = self.line_of(invalid.number)
        for row in result.rows:
            for error in row.errors:
                error.number = self.line_of(error.number)

    @classmethod
    def get_result_class(cls) -> type[Result]:
        return LineNumberedResult


class LineNumberedResult(Result):
    """A result whose row errors are numbered by the line of the file."""

    def row_errors(self) -> list[tuple[int, list[Any]]]:
        return [
            (row.errors[0].number or i + 1, row.errors)
            for i, row in enumerate(self.rows)
            if row.errors
        ]


def error_lines(result: Result, column_of: dict[str, str] | None = None) -> list[str]:
    """One readable line per failed row, with its line in the file and its reasons."""
    column_of = column_of or {}
    lines: list[str] = [str(error.error) for error in result.base_errors]
    found: list[tuple[int, str]] = []
    for number, errors in result.row_errors():
        found.append(
            (
                number,
                _("Line %(line)d: %(reason)s")
                % {"line": number, "reason": " ".join(str(e.error) for e in errors)},
            )
        )
    for invalid in result.invalid_rows:
        reasons = []
        for field, messages in invalid.error_dict.items():
            for message in messages:
                if field == NON_FIELD_ERRORS:
                    reasons.append(str(message))
                else:
                    reasons.append(
                        _("column “%(column)s”: %(message)s")
                        % {"column": column_of.get(field, field), "message": message}
                    )
        found.append(
            (
                invalid.number,
                _("Line %(line)d: %(reason)s")
                % {"line": invalid.number, "reason": " ".join(reasons)},
            )
        )
    lines += [text for _number, text in sorted(found, key=lambda item: item[0])]
    return lines


class NodeResource(InventoryResource):
    hostname = fields.Field(attribute="hostname", column_name="hostname", widget=TextWidget())
    serial = fields.Field(attribute="serial", column_name="serial", widget=TextWidget())
    bmc_address = fields.Field(
        attribute="bmc_address", column_name="bmc_address", widget=TextWidget()
    )
    site = fields.Field(attribute="site", column_name="site", widget=SiteWidget())
    rack = fields.Field(attribute="rack", column_name="rack", widget=RackWidget())
    leaf_switch = fields.Field(
        attribute="leaf_switch", column_name="leaf_switch", widget=LeafSwitchWidget()
    )
    node_type = fields.Field(
        attribute="node_type", column_name="node_type", widget=NodeTypeWidget()
    )
    status = fields.Field(
        attribute="status",
        column_name="status",
        widget=ChoiceWidget(NodeStatus, what=gettext_lazy("node status"), required=False),
    )

    required_columns = ("hostname", "serial", "site", "rack", "leaf_switch", "node_type")

    class Meta:
        model = Node
        name = "Nodes"
        fields = (
            "hostname",
            "serial",
            "bmc_address",
            "site",
            "rack",
            "leaf_switch",
            "node_type",
            "status",
        )
        export_order = fields
        import_id_fields = ("hostname",)
        use_transactions = True
        skip_unchanged = True
        report_skipped = True
        clean_model_instances = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._serial_lines: dict[str, int] = {}
        self._hostname_lines: dict[str, int] = {}
        self._stored_status: dict[int, str] = {}

    def get_queryset(self) -> QuerySet[Node]:
        return Node.objects.select_related("site", "rack", "leaf_switch", "node_type")

    def filter_export(self, queryset: QuerySet, **kwargs: Any) -> QuerySet:
        return queryset.select_related("site", "rack", "leaf_switch", "node_type")

    def after_init_instance(
        self, instance: Node, new: bool, row: dict[str, Any], **kwargs: Any
    ) -> None:
        super().after_init_instance(instance, new, row, **kwargs)
        if not new:
            self._stored_status[instance.pk] = instance.status

    def import_field(
        self,
        field: fields.Field,
        instance: Node,
        row: dict[str, Any],
        is_m2m: bool = False,
        **kwargs: Any,
    ) -> None:
        if field.attribute == "status" and not _cell(row.get(field.column_name)):
            # A blank status leaves an existing node as it is; a new node starts available.
            if instance._state.adding:
                instance.status = NodeStatus.AVAILABLE
            return
        super().import_field(field, instance, row, is_m2m, **kwargs)

    def row_checks(
        self, instance: Node, row: dict[str, Any], new: bool, line: int
    ) -> dict[str, list[str]]:
        errors: dict[str, list[str]] = {}
        hostname = _cell(row.get("hostname"))
        serial = _cell(row.get("serial"))
        if hostname in self._hostname_lines:
            errors["hostname"] = [
                _("Hostname “%(hostname)s” is also on line %(line)d of this file.")
                % {"hostname": hostname, "line": self._hostname_lines[hostname]}
            ]
        elif hostname:
            self._hostname_lines[hostname] = line
        if serial in self._serial_lines:
            errors["serial"] = [
                _("Duplicate serial “%(serial)s”: it is also on line %(line)d of this file.")
                % {"serial": serial, "line": self._serial_lines[serial]}
            ]
        elif serial:
            self._serial_lines[serial] = line
            holder = (
                Node.objects.filter(serial=serial)
                .exclude(pk=instance.pk)
                .values_list("hostname", flat=True)
                .first()
            )
            if holder is not None:
                errors["serial"] = [
                    _("Duplicate serial “%(serial)s”: node %(hostname)s already has it.")
                    % {"serial": serial, "hostname": holder}
                ]
        if not new and "status" not in errors:
            stored = self._stored_status.get(instance.pk, instance.status)
            if instance.status != stored:
                try:
                    Node.lifecycle.check(instance, instance.status, source=stored)
                except DomainError as exc:
                    errors["status"] = [exc.message]
        return errors

    def save_instance(
        self, instance: Node, is_create: bool, row: dict[str, Any], **kwargs: Any
    ) -> None:
        if self._is_dry_run(kwargs) and not self._is_using_transactions(kwargs):
            return
        reason = self.reason(kwargs.get("row_number"))
        if is_create:
            created = services.node_create(
                site_id=instance.site_id,
                node_type_id=instance.node_type_id,
                rack_id=instance.rack_id,
                leaf_switch_id=instance.leaf_switch_id,
                hostname=instance.hostname,
                serial=instance.serial,
                bmc_address=instance.bmc_address,
                status=instance.status,
                actor=self._actor,
                reason=reason,
            )
            instance.pk = created.pk
            instance.status_changed_at = created.status_changed_at
            instance._state.adding = False
            instance._state.db = created._state.db
            return
        try:
            services.node_update(
                node_id=instance.pk,
                changes={name: getattr(instance, name) for name in services.NODE_EDITABLE},
                status=instance.status,
                actor=self._actor,
                reason=reason,
            )
        except DomainError as exc:
            raise ValidationError(exc.message) from exc


class SwitchResource(InventoryResource):
    site = fields.Field(attribute="site", column_name="site", widget=SiteWidget())
    name = fields.Field(attribute="name", column_name="name", widget=TextWidget())
    role = fields.Field(
        attribute="role",
        column_name="role",
        widget=ChoiceWidget(SwitchRole, what=gettext_lazy("switch role")),
    )
    fabric = fields.Field(
        attribute="fabric",
        column_name="fabric",
        widget=ChoiceWidget(Fabric, what=gettext_lazy("fabric")),
    )
    port_speed_gbps = fields.Field(
        attribute="port_speed_gbps",
        column_name="port_speed_gbps",
        widget=PositiveIntegerWidget(gettext_lazy("port speed in Gb/s")),
    )
    port_count = fields.Field(
        attribute="port_count",
        column_name="port_count",
        widget=PositiveIntegerWidget(gettext_lazy("port count"), required=False),
    )
    rack = fields.Field(attribute="rack", column_name="rack", widget=RackWidget(required=False))
    uplinks = fields.Field(attribute="uplinks", column_name="uplinks", widget=UplinksWidget())

    required_columns = ("site", "name", "role", "fabric", "port_speed_gbps")

    class Meta:
        model = Switch
        name = "Switches"
        fields = (
            "site",
            "name",
            "role",
            "fabric",
            "port_speed_gbps",
            "port_count",
            "rack",
            "uplinks",
        )
        export_order = fields
        import_id_fields = ("site", "name")
        use_transactions = True
        skip_unchanged = True
        report_skipped = True
        clean_model_instances = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._name_lines: dict[tuple[str, str], int] = {}

    def import_field(
        self,
        field: fields.Field,
        instance: Switch,
        row: dict[str, Any],
        is_m2m: bool = False,
        **kwargs: Any,
    ) -> None:
        if field.attribute == "port_count" and not _cell(row.get(field.column_name)):
            return  # blank: keep the stored count (a new switch gets the default)
        super().import_field(field, instance, row, is_m2m, **kwargs)

    def get_queryset(self) -> QuerySet[Switch]:
        return Switch.objects.select_related("site", "rack")

    def filter_export(self, queryset: QuerySet, **kwargs: Any) -> QuerySet:
        return queryset.select_related("site", "rack").prefetch_related("uplinks")

    def row_checks(
        self, instance: Switch, row: dict[str, Any], new: bool, line: int
    ) -> dict[str, list[str]]:
        errors: dict[str, list[str]] = {}
        key = (_cell(row.get("site")), _cell(row.get("name")))
        if key in self._name_lines:
            errors["name"] = [
                _("Switch “%(name)s” of site “%(site)s” is also on line %(line)d of this file.")
                % {"name": key[1], "site": key[0], "line": self._name_lines[key]}
            ]
        elif key[1]:
            self._name_lines[key] = line
        if "uplinks" in row:
            field = self.fields["uplinks"]
            try:
                uplinks = field.clean(row)
            except ValueError as exc:
                errors["uplinks"] = [str(exc)]
            else:
                if uplinks and instance.role == SwitchRole.SPINE:
                    errors["uplinks"] = [_("Only a leaf switch has uplinks.")]
        return errors


class NodeCSV(InventoryCSV):
    """Node CSV: the columns of :class:`NodeResource`."""

    resource_class = NodeResource


class SwitchCSV(InventoryCSV):
    """Switch CSV: the columns of :class:`SwitchResource`."""

    resource_class = SwitchResource
