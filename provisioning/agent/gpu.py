"""Measurements on NVIDIA GPUs with torch (optional dependency)."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional on a node
    torch = None


def cuda_available() -> bool:
    try:
        return torch is not None and torch.cuda.is_available() and torch.cuda.device_count() > 0
    except Exception:
        return False


def cuda_devices() -> list[dict[str, Any]]:
    """The CUDA devices torch sees, by index and name (none without torch or CUDA)."""
    if not cuda_available():
        return []
    return [
        {"index": i, "name": str(torch.cuda.get_device_name(i))}
        for i in range(torch.cuda.device_count())
    ]


def cuda_runtime() -> str | None:
    """The CUDA runtime torch was built with (None without torch, or for a CPU build)."""
    cuda = torch.version.cuda if torch is not None else None
    return cuda if isinstance(cuda, str) else None


def torch_version() -> str | None:
    return str(torch.__version__) if torch is not None else None


def _require_cuda() -> None:
    if torch is None:
        raise RuntimeError("torch is not importable: cannot measure the GPUs")
    if not cuda_available():
        raise RuntimeError("torch sees no CUDA device")


INJECT_ENV = "PROVISIONING_AGENT_INJECT_FIGURES"


def injected_figures() -> dict[str, Any] | None:
    """Figures injected in place of torch's (tests only: no GPU on a CI machine). The
    variable names a JSON file ``{"gemm": {...}, "hbm_gbps": [...]}``; the document says
    so (``host.injected_figures``) and the portal refuses such a document outside tests."""
    path = os.environ.get(INJECT_ENV)
    if not path:
        return None
    with open(path, encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def gemm_sustained(
    n: int, warmup: int, iters: int, seconds: float, timeout: float
) -> dict[str, Any]:
    """torch.matmul n³ on every GPU at once (one thread per GPU) for at least ``seconds``
    after ``warmup`` warm-ups, timed with CUDA events over the whole sustained window, in
    batches of ``iters``.

    bf16 on compute capability ≥ 8.0, fp16 below (V100/V100S). Each GPU's result is then
    checked on a slice (256 rows) against float64 (``max_rel_error``: the relative
    Frobenius error of the slice). On Hopper (capability ≥ 9.0) fp8 (e4m3,
    ``torch._scaled_mm``) TFLOPS are recorded too. Returns per-GPU lists ``tflops``,
    ``max_rel_error``, ``fp8_tflops`` (None where not measured), and ``dtype``,
    ``allow_tf32``, ``capabilities``, ``seconds``. Not run on a GPU in this project yet
    (no GPU machine was available): see README, validation.
    """
    injected = injected_figures()
    if injected is not None:
        time.sleep(seconds)  # the sampler runs meanwhile, as on a GPU
        return {**injected["gemm"], "seconds": seconds, "injected": True}
    _require_cuda()
    ngpu = torch.cuda.device_count()
    tflops: list[float | None] = [None] * ngpu
    errors_rel: list[float | None] = [None] * ngpu
    fp8: list[float | None] = [None] * ngpu
    dtypes: list[str | None] = [None] * ngpu
    errors: dict[int, str] = {}
    barrier = threading.Barrier(ngpu)

    def work(i: int) -> None:
        try:
            torch.cuda.set_device(i)
            cap = torch.cuda.get_device_capability(i)
            dtype = torch.bfloat16 if cap >= (8, 0) else torch.float16
            a = torch.randn(n, n, device=f"cuda:{i}", dtype=dtype)
            b = torch.randn(n, n, device=f"cuda:{i}", dtype=dtype)
            c = torch.empty(n, n, device=f"cuda:{i}", dtype=dtype)
            for _ in range(warmup):
                torch.matmul(a, b, out=c)
            torch.cuda.synchronize(i)
            barrier.wait(timeout)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            done = 0
            started = time.monotonic()
            start.record()
            while True:
                for _ in range(iters):
                    torch.matmul(a, b, out=c)
                done += iters
                torch.cuda.synchronize(i)
                if time.monotonic() - started >= seconds:
                    break
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
            tflops[i] = 2 * n**3 * done / (ms / 1e3) / 1e12
            dtypes[i] = "bf16" if dtype == torch.bfloat16 else "fp16"
            rows = min(256, n)
            exact = a[:rows].double() @ b.double()
            got = c[:rows].double()
            errors_rel[i] = float(torch.linalg.norm(got - exact) / torch.linalg.norm(exact))
            if cap >= (9, 0):
                fp8[i] = _fp8_tflops(a, b, n, iters)
        except Exception as exc:
            errors[i] = f"{type(exc).__name__}: {exc}"
            barrier.abort()

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(ngpu)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + seconds)
    if any(t.is_alive() for t in threads):
        raise RuntimeError(f"GEMM did not finish within {timeout + seconds:g} s")
    if errors:
        raise RuntimeError("; ".join(f"GPU {i}: {e}" for i, e in sorted(errors.items())))
    if len(set(dtypes)) != 1:
        raise RuntimeError(f"GPUs ran different dtypes: {dtypes}")
    return {
        "tflops": tflops,
        "max_rel_error": errors_rel,
        "fp8_tflops": fp8,
        "dtype": dtypes[0],
        "allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "capabilities": [list(torch.cuda.get_device_capability(i)) for i in range(ngpu)],
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "seconds": seconds,
    }


def _fp8_tflops(a: Any, b: Any, n: int, iters: int) -> float | None:
    """fp8 e4m3 GEMM TFLOPS with ``torch._scaled_mm`` (Hopper); None when unavailable."""
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return None
    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major second operand
    one = torch.ones((), device=a.device, dtype=torch.float32)
    for _ in range(5):
        torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    end.record()
    end.synchronize()
    return float(2 * n**3 * iters / (start.elapsed_time(end) / 1e3) / 1e12)


def hbm_bandwidth(nbytes: int, warmup: int, iters: int) -> list[float]:
    """Device-to-device copy bandwidth per GPU in GB/s (bytes read + written)."""
    injected = injected_figures()
    if injected is not None:
        return [float(v) for v in injected["hbm_gbps"]]
    _require_cuda()
    result = []
    for i in range(torch.cuda.device_count()):
        with torch.cuda.device(i):
            src = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{i}")
            dst = torch.empty_like(src)
            for _ in range(warmup):
                dst.copy_(src)
            torch.cuda.synchronize(i)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                dst.copy_(src)
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1e3
            result.append(2 * nbytes * iters / seconds / 1e9)
            del src, dst
            torch.cuda.empty_cache()
    return result
