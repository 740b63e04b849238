"""CSV files in and out, one way for every app: reading an upload, writing a download,
and formula escaping on both sides.

- **Reading** (:func:`read_csv`, :func:`read_csv_dicts`): UTF-8 text (a BOM is dropped),
  the first line names the columns (case and surrounding spaces do not matter), the
  delimiter is a comma, or a semicolon or tab when the header uses one of those; blank
  lines are skipped and each row keeps the line of the file it started on. Anything else
  raises :class:`CSVFileError`, whose ``message`` says what is wrong in words a customer
  or staff member can act on.
- **Writing** (:func:`write_csv`, :func:`csv_download`): UTF-8 with a BOM (so that
  spreadsheets read Chinese), CRLF line ends, a header line.
- **Formulas**: every written cell that a spreadsheet would run as a formula (it starts
  with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) gets a ``'`` in front
  (the OWASP advice against CSV injection), and reading takes that ``'`` off again, so
  an exported file imports back unchanged. :class:`EscapedCSV` does the same for
  django-import-export's exports.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import tablib
from django.conf import settings
from django.http import HttpResponse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from import_export.formats import base_formats

# --- Reading ------------------------------------------------------------------------------


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


def read_csv_dicts(
    data: str | bytes, *, required: Sequence[str], known: Sequence[str], what: str
) -> list[dict[str, str]]:
    """:func:`read_csv`'s rows as dicts, column name to cell (stripped, unescaped)."""
    dataset = read_csv(data, required=required, known=known, what=what)
    return [dict(zip(dataset.headers, row, strict=True)) for row in dataset]


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


# --- Writing --------------------------------------------------------------------------------


def write_csv(
    rows: Iterable[Sequence[Any] | Mapping[str, Any]],
    *,
    columns: Sequence[str],
    verbatim: Collection[str] = (),
) -> str:
    """CSV text for a spreadsheet: a UTF-8 BOM, the header line, CRLF line ends.

    A row is a sequence of cells in ``columns`` order or a mapping by column name (a
    missing key writes an empty cell). Every cell passes through :func:`escape_formula`
    except those of the ``verbatim`` columns (amounts, which may be negative numbers).
    """
    out = io.StringIO()
    out.write("\ufeff")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        cells = [row.get(c, "") for c in columns] if isinstance(row, Mapping) else list(row)
        writer.writerow(
            [
                cell if column in verbatim else escape_formula(cell)
                for column, cell in zip(columns, cells, strict=True)
            ]
        )
    return out.getvalue()


def csv_download(text: str, *, filename: str) -> HttpResponse:
    """``text`` (from :func:`write_csv`) as a file download named ``filename``."""
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
