"""``python -m provisioning.agent [--profile quick|acceptance|burn_in] [--sizes K=V ...]``
``[--out FILE]``

Writes JSON Lines on stdout (and, with ``--out``, to FILE, flushed and synced line by
line), so that an agent killed or timed out keeps every check that finished:

1. ``{"type": "start", "agent_version", "profile", "started_at", "planned": [check
   names], "time_limit_s", "host": {facts}}``;
2. per check, ``{"type": "check_start", "name", "started_at"}`` when it starts (the
   portal shows what runs now: ``dcgmi diag -r 3`` alone takes about 15 minutes) and one
   ``{"type": "check", "name", "device", "status" (completed/failed/skipped), "raw",
   "raw_sha256", "raw_format", "return_code", "reason", "duration_s", "details",
   "metric", "unit", "value"}`` as soon as it finished;
3. ``{"type": "end", "finished_at"}``: its absence means the agent did not finish.

The portal (``provisioning.validation.interface.agent_document``) folds the lines into
one document and derives every metric from the raw outputs. Exit status 0 whenever the
lines were written (judging is the portal's job).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
from collections.abc import Callable
from typing import IO, Any

from . import __version__, gpu, host, lifeline
from .checks import CHECKS, make_settings, planned_checks, run_checks
from .gpu import INJECT_ENV
from .profiles import PROFILES

_SUFFIX = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_SIZE_KEYS = {
    "gemm": "gemm_n",
    "copy": "copy_bytes",
    "allreduce": "allreduce_bytes",
    "burn_in": "burn_in_seconds",  # seconds (a shorter burn-in: simulated nodes, tests)
}


def parse_size(text: str) -> int:
    """``1024``, ``64M``, ``16G`` (binary multiples)."""
    m = re.fullmatch(r"(\d+)\s*([KMG]?)(?:i?B)?", text.strip(), re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}")
    return int(m.group(1)) * _SUFFIX[m.group(2).upper()]


def parse_sizes(items: list[str]) -> dict[str, int]:
    sizes = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in _SIZE_KEYS:
            raise argparse.ArgumentTypeError(
                f"--sizes takes KEY=SIZE with KEY one of {', '.join(_SIZE_KEYS)}; got {item!r}"
            )
        sizes[_SIZE_KEYS[key]] = parse_size(value)
    return sizes


def detect_device(requested: str, inventory: dict[str, Any]) -> str:
    if requested != "auto":
        return requested
    return "cuda" if inventory["gpus"] or gpu.cuda_available() else "cpu"


class LineWriter:
    """One JSON object per line to stdout and, optionally, a file (synced per line)."""

    def __init__(self, stream: IO[str], path: str | None) -> None:
        self.streams = [stream]
        self.file = open(path, "a", encoding="utf-8") if path else None
        if self.file is not None:
            self.streams.append(self.file)

    def __call__(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, default=str) + "\n"
        for stream in self.streams:
            stream.write(line)
            stream.flush()
        if self.file is not None:
            os.fsync(self.file.fileno())

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m provisioning.agent", description=__doc__)
    ap.add_argument("--profile", choices=sorted(PROFILES), default="quick")
    ap.add_argument(
        "--sizes",
        nargs="*",
        default=[],
        metavar="KEY=SIZE",
        help="gemm=N (matrix side), copy=BYTES, allreduce=BYTES; e.g. copy=64M allreduce=16G",
    )
    ap.add_argument("--timeout", type=float, default=None, help="seconds per check/command")
    ap.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    ap.add_argument("--only", default="", help=f"comma list of checks: {', '.join(CHECKS)}")
    ap.add_argument(
        "--gemm-seconds",
        type=float,
        default=None,
        help="sustained GEMM duration (default: the profile's, 60 s for acceptance)",
    )
    ap.add_argument("--out", default=None, help="also append the JSON lines to this file")
    return ap


def run(argv: list[str] | None, emit: Callable[[dict[str, Any]], None]) -> None:
    ap = _parser()
    args = ap.parse_args(argv)
    try:
        sizes = parse_sizes(args.sizes)
    except argparse.ArgumentTypeError as exc:
        ap.error(str(exc))
    only = [c for c in args.only.split(",") if c]
    unknown = [c for c in only if c not in CHECKS]
    if unknown:
        ap.error(f"unknown checks: {', '.join(unknown)}")

    started = dt.datetime.now(dt.UTC)
    inventory = host.gpu_inventory(timeout=min(args.timeout or 60.0, 60.0))
    device = detect_device(args.device, inventory)
    settings = make_settings(args.profile, device, args.timeout)
    for key, value in sizes.items():
        setattr(settings, key, value)
    if args.gemm_seconds is not None:
        settings.gemm_seconds = args.gemm_seconds
    settings.inventory = inventory
    facts = host.facts(device, inventory)
    facts["injected_figures"] = bool(os.environ.get(INJECT_ENV))
    emit(
        {
            "type": "start",
            "agent_version": __version__,
            "profile": args.profile,
            "started_at": started.isoformat(),
            "planned": planned_checks(settings, only or None),
            "time_limit_s": PROFILES[args.profile].time_limit_s,
            "gemm_seconds": settings.gemm_seconds,
            "host": facts,
        }
    )
    run_checks(
        settings,
        only or None,
        emit=lambda c: emit(c.as_dict()),
        on_start=lambda name: emit(
            {
                "type": "check_start",
                "name": name,
                "started_at": dt.datetime.now(dt.UTC).isoformat(),
            }
        ),
    )
    emit({"type": "end", "finished_at": dt.datetime.now(dt.UTC).isoformat()})


def main(argv: list[str] | None = None) -> int:
    out = None
    if argv is None:
        argv = sys.argv[1:]
    if "--out" in argv:
        out = argv[argv.index("--out") + 1] if argv.index("--out") + 1 < len(argv) else None
    writer = LineWriter(sys.stdout, out)
    lifeline.watch_parent()  # a dead reader (a killed worker) ends the agent and its tools
    try:
        run(argv, writer)
    finally:
        writer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
