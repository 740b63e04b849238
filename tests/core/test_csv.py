"""core.csv: one way to read an uploaded CSV and write a download, formulas escaped on the
way out and unescaped on the way in."""

from __future__ import annotations

import csv
import io

import pytest
import tablib

from core.csv import (
    CSVFileError,
    EscapedCSV,
    csv_download,
    escape_formula,
    not_csv_message,
    read_csv,
    read_csv_dicts,
    unescape_formula,
    write_csv,
)

KNOWN = ("external_id", "day", "quantity", "node")
REQUIRED = ("external_id", "day", "quantity")


def read(text: str | bytes):
    return read_csv(text, required=REQUIRED, known=KNOWN, what="usage")


def test_reads_a_spreadsheets_file_keeping_each_rows_line():
    data = "\ufeffExternal_ID ; Day;QUANTITY\r\n\r\na1;2026-01-01; 3 \r\n'=SUM(A1);2026-01-02;4\r\n"
    dataset = read(data.encode("utf-8"))
    assert dataset.headers == ["external_id", "day", "quantity"]
    assert [list(row) for row in dataset] == [
        ["a1", "2026-01-01", "3"],
        ["=SUM(A1)", "2026-01-02", "4"],  # the export's escape taken off again
    ]
    assert dataset.line_numbers == [3, 4]


def test_rows_as_dicts_and_short_rows_filled_in():
    rows = read_csv_dicts(
        "external_id,day,quantity,node\na1,2026-01-01,3\n",
        required=REQUIRED,
        known=KNOWN,
        what="usage",
    )
    assert rows == [{"external_id": "a1", "day": "2026-01-01", "quantity": "3", "node": ""}]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff\xfe\x00a", "NOT_CSV"),
        ("a\x00b", "NOT_CSV"),
        ("  \n", "The file is empty."),
        ("external_id,day\n1,2\n", "The file lacks the column quantity."),
        ("external_id,day,quantity,colour\n1,2,3,red\n", "Unknown column colour."),
        ("external_id,day,day,quantity\n", "The header names these columns more than once: day."),
        ("external_id,day,quantity\n1,2,3,4\n", "Line 2 has 4 cells but the header names 3"),
        ("external_id,day,quantity\n\n", "The file has a header but no rows to import."),
    ],
)
def test_a_file_that_cannot_be_read_says_why(data, message):
    with pytest.raises(CSVFileError) as excinfo:
        read(data)
    if message == "NOT_CSV":  # read in the test's language, not at collection
        message = not_csv_message()
    assert excinfo.value.message.startswith(message)


@pytest.mark.parametrize(
    ("value", "escaped"),
    [("=1+1", "'=1+1"), ("-2", "'-2"), ("@x", "'@x"), ("\tx", "'\tx"), ("ok", "ok"), (3, 3)],
)
def test_formula_escape_and_its_undoing(value, escaped):
    assert escape_formula(value) == escaped
    if isinstance(value, str):
        assert unescape_formula(escaped) == value


def test_write_csv_escapes_every_cell_but_the_verbatim_columns():
    text = write_csv(
        [{"id": "=cmd", "amount": "-5.00"}, ["ok", "7"], {"id": "+x"}],
        columns=("id", "amount"),
        verbatim={"amount"},
    )
    assert text.startswith("\ufeffid,amount\r\n")
    rows = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))
    assert rows == [["id", "amount"], ["'=cmd", "-5.00"], ["ok", "7"], ["'+x", ""]]


def test_what_write_csv_writes_read_csv_reads_back_unchanged():
    cells = ['=HYPERLINK("http://evil.example")', "2026-01-01", "1.5"]
    text = write_csv([cells], columns=REQUIRED)
    assert [list(row) for row in read(text)] == [cells]


def test_csv_download():
    response = csv_download("a\r\n", filename="x-usage.csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="x-usage.csv"'
    assert response.content == b"a\r\n"


def test_escaped_csv_export_honours_the_setting(settings):
    dataset = tablib.Dataset(["=1", "plain"], headers=["a", "b"])
    assert EscapedCSV().export_data(dataset).splitlines()[1] == "'=1,plain"
    settings.IMPORT_EXPORT_ESCAPE_FORMULAE_ON_EXPORT = False
    assert EscapedCSV().export_data(dataset).splitlines()[1] == "=1,plain"
