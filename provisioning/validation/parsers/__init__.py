"""Parsers of validation-tool output: pure functions over text, standard library only.

Each ``parse_<kind>(text) -> dict`` never raises on bad input. Every result carries:

- ``kind``: the parser's name;
- ``ok``: True only when the output is complete *and* shows no failure;
- ``damaged``: True when the output cannot be trusted as a complete run (empty, garbage,
  truncated, inconsistent): the run must be treated as not measured;
- ``errors``: plain-English reasons (empty when ``ok``).

A complete run that reports failures (a nonzero ``#wrong``, ``Out of bounds values : N
FAILED``, a DCGM ``Fail``) is *not* damaged: ``ok`` is False and ``damaged`` False.

Command line (no Django needed)::

    python -m provisioning.validation.parsers KIND FILE   # FILE may be "-" for stdin

prints the result as JSON on stdout; exit status 0 when parsed and ok, 1 when the run is
complete but shows failures, 2 when the input is damaged or unreadable (with a message on
stderr). A damaged input never exits 0.

One module per tool (``nccl``, ``dcgmi``, ``smi``, ``nvbandwidth``, ``ib``: ib_write_bw and
ibstat), what they share in ``common``, the command line in ``cli``.
"""

from provisioning.validation.parsers.cli import KINDS, main
from provisioning.validation.parsers.common import ParseError
from provisioning.validation.parsers.dcgmi import parse_dcgmi
from provisioning.validation.parsers.ib import parse_ib_write_bw, parse_ibstat
from provisioning.validation.parsers.nccl import parse_nccl_tests
from provisioning.validation.parsers.nvbandwidth import parse_nvbandwidth
from provisioning.validation.parsers.smi import parse_nvidia_smi_csv

__all__ = [
    "KINDS",
    "ParseError",
    "main",
    "parse_dcgmi",
    "parse_ib_write_bw",
    "parse_ibstat",
    "parse_nccl_tests",
    "parse_nvbandwidth",
    "parse_nvidia_smi_csv",
]
