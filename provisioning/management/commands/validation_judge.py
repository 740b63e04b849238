"""``manage.py validation_judge --node-type CODE FILE``: judge a saved agent document.

FILE is what the agent wrote (``--out FILE``) or its stdout saved (JSON Lines, or a
single JSON document from an older agent); ``-`` reads stdin. The document is judged with
the stored rules for a node of that node type, by the same code a provisioning run uses
(``interface.judge_report``). Prints one JSON object on stdout: ``accepted``, ``reasons``
(each ``code``, ``text``, ``params``), ``notes``, ``metrics`` (derived from the raw
outputs), ``results`` (every rule: measured, expected, source).

Exit status: 0 accepted, 1 rejected, 2 the file or the node type cannot be read.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from provisioning.validation.interface import fold_lines
from provisioning.validation.selectors import node_type_by_code
from provisioning.validation.services import validation_judge_document


class Command(BaseCommand):
    help = (
        "Judge a saved node-agent document for a node type "
        "(exit 0 accepted, 1 rejected, 2 unreadable)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--node-type", required=True, help="the node type's code")
        parser.add_argument(
            "--burn-in-hours",
            type=float,
            default=None,
            help="the burn-in the order bought: its rules apply, and it must have run this long",
        )
        parser.add_argument("file", help='the agent document, or "-" for stdin')

    def _fail(self, message: str) -> None:
        self.stderr.write(f"error: {message}")
        raise SystemExit(2)

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["file"]
        try:
            if path == "-":
                text = sys.stdin.read()
            else:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            self._fail(f"cannot read {path}: {exc}")
        document = fold_lines(text)
        if document is None:
            self._fail(f"{path} holds no agent document (JSON Lines with a start line)")
        node_type = node_type_by_code(options["node_type"])
        if node_type is None:
            self._fail(f"no node type with code {options['node_type']!r}")
        assert document is not None and node_type is not None
        judged = validation_judge_document(
            node_type=node_type, document=document, burn_in_hours=options["burn_in_hours"]
        )
        self.stdout.write(json.dumps(judged, indent=1, default=str, allow_nan=False))
        if not judged["accepted"]:
            raise SystemExit(1)
