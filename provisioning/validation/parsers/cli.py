"""The command line: ``python -m provisioning.validation.parsers KIND FILE``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from provisioning.validation.parsers.common import ParseError
from provisioning.validation.parsers.dcgmi import parse_dcgmi
from provisioning.validation.parsers.ib import parse_ib_write_bw, parse_ibstat
from provisioning.validation.parsers.nccl import parse_nccl_tests
from provisioning.validation.parsers.nvbandwidth import parse_nvbandwidth
from provisioning.validation.parsers.smi import parse_nvidia_smi_csv

KINDS: dict[str, Callable[[str], dict[str, Any]]] = {
    "nccl-tests": parse_nccl_tests,
    "dcgmi": parse_dcgmi,
    "nvidia-smi-csv": parse_nvidia_smi_csv,
    "nvbandwidth": parse_nvbandwidth,
    "ib-write-bw": parse_ib_write_bw,
    "ibstat": parse_ibstat,
}


def _read(path: str) -> str:
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                data = fh.read()
    except OSError as exc:
        raise ParseError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"{path} is not UTF-8 text: {exc}") from exc


def main(argv: list[str] | None = None) -> int:
    """Parse one file; print JSON; exit 0 ok, 1 complete but failing, 2 damaged."""
    ap = argparse.ArgumentParser(
        prog="python -m provisioning.validation.parsers",
        description="Parse validation-tool output into JSON (exit 0 ok, 1 failed, 2 damaged).",
    )
    ap.add_argument("kind", choices=sorted(KINDS))
    ap.add_argument("file", help='file to parse, or "-" for stdin')
    args = ap.parse_args(argv)
    try:
        text = _read(args.file)
    except ParseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = KINDS[args.kind](text)
    print(json.dumps(result, indent=2, allow_nan=False))
    if result["damaged"]:
        print(
            f"error: {args.file}: damaged {args.kind} output: " + "; ".join(result["errors"]),
            file=sys.stderr,
        )
        return 2
    if not result["ok"]:
        print(
            f"{args.file}: {args.kind} run failed: " + "; ".join(result["errors"]), file=sys.stderr
        )
        return 1
    return 0
