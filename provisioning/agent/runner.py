"""Check results, the guard that turns exceptions into failed checks, subprocess helper."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

COMPLETED = "completed"
FAILED = "failed"
SKIPPED = "skipped"
MAX_RAW_CHARS = 200_000


@dataclass
class CheckResult:
    """One check as reported to the portal (pass/fail is decided there)."""

    name: str
    device: str
    status: str = COMPLETED
    metric: str | None = None
    unit: str | None = None
    value: float | list[float] | None = None
    raw: str = ""
    raw_format: str | None = None
    return_code: int | None = None
    reason: str = ""
    duration_s: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        raw = self.raw
        if len(raw) > MAX_RAW_CHARS:
            raw = raw[:MAX_RAW_CHARS] + "\n[agent: output cut]"
        return {
            "type": "check",
            "name": self.name,
            "device": self.device,
            "status": self.status,
            "metric": self.metric,
            "unit": self.unit,
            "value": self.value,
            "raw": raw,
            "raw_sha256": hashlib.sha256(raw.encode("utf-8")).hexdigest(),
            "raw_format": self.raw_format,
            "return_code": self.return_code,
            "reason": self.reason,
            "duration_s": round(self.duration_s, 3),
            "details": self.details,
        }


def skipped(name: str, device: str, reason: str, **details: Any) -> CheckResult:
    return CheckResult(name=name, device=device, status=SKIPPED, reason=reason, details=details)


def tool_missing(name: str, device: str, tool: str) -> CheckResult:
    """A check whose tool is not on PATH: failed, never skipped (a missing tool would
    otherwise pass by omission)."""
    return CheckResult(
        name=name,
        device=device,
        status=FAILED,
        reason=f"{tool} not found on PATH",
        details={"reason_code": "tool_missing", "tool": tool},
    )


def guarded(name: str, device: str, fn: Callable[[], CheckResult]) -> CheckResult:
    """Run a check; an exception becomes a failed check with its text, never a crash."""
    started = time.perf_counter()
    try:
        result = fn()
    except Exception as exc:
        result = CheckResult(
            name=name,
            device=device,
            status=FAILED,
            reason=f"{type(exc).__name__}: {exc}",
            raw=traceback.format_exc(),
            return_code=1,
        )
    result.duration_s = time.perf_counter() - started
    return result


@dataclass
class CmdResult:
    return_code: int | None
    output: str
    timed_out: bool = False
    error: str = ""


def which(tool: str) -> str | None:
    return shutil.which(tool)


def run_cmd(argv: list[str], timeout: float) -> CmdResult:
    """Run a command with a timeout; stdout and stderr together; never raises."""
    try:
        proc = subprocess.run(  # noqa: S603 - argv built by the agent, no shell
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.output or b""
        text = out.decode("utf-8", "replace") if isinstance(out, bytes) else str(out)
        return CmdResult(None, text, timed_out=True, error=f"timed out after {timeout:g} s")
    except OSError as exc:
        return CmdResult(None, "", error=f"cannot run {argv[0]}: {exc}")
    return CmdResult(proc.returncode, proc.stdout.decode("utf-8", "replace"))


def from_cmd(name: str, device: str, argv: list[str], timeout: float, **kw: Any) -> CheckResult:
    """A check whose raw output is one command's output; failed on timeout or exit != 0."""
    res = run_cmd(argv, timeout)
    check = CheckResult(name=name, device=device, raw=res.output, return_code=res.return_code)
    check.details["command"] = " ".join(argv)
    for key, value in kw.items():
        setattr(check, key, value)
    if res.error:
        check.status = FAILED
        check.reason = res.error
    elif res.return_code != 0:
        check.status = FAILED
        check.reason = f"{argv[0]} exited with status {res.return_code}"
    return check
