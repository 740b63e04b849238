"""``python -m provisioning.agent [--profile quick|acceptance] [--sizes K=V ...] [--timeout S]``

Prints ONE JSON document on stdout: ``agent_version``, ``profile``, ``started_at``,
``host`` (facts) and ``checks`` (each: name, device, status completed/failed/skipped,
metric, unit, value, raw, raw_format, return_code, reason, duration_s, details).
Exit status 0 whenever the document was written (judging is the portal's job).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from typing import Any

from . import __version__, gpu, host
from .checks import CHECKS, make_settings, run_checks

_SUFFIX = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_SIZE_KEYS = {"gemm": "gemm_n", "copy": "copy_bytes", "allreduce": "allreduce_bytes"}


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


def build_report(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m provisioning.agent", description=__doc__)
    ap.add_argument("--profile", choices=["quick", "acceptance"], default="quick")
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
    settings.inventory = inventory
    checks = run_checks(settings, only or None)
    return {
        "agent_version": __version__,
        "profile": args.profile,
        "started_at": started.isoformat(),
        "finished_at": dt.datetime.now(dt.UTC).isoformat(),
        "host": host.facts(device, inventory),
        "checks": [c.as_dict() for c in checks],
    }


def main(argv: list[str] | None = None) -> int:
    report = build_report(argv)
    json.dump(report, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
