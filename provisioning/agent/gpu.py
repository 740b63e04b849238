"""Measurements on NVIDIA GPUs with torch (optional dependency)."""

from __future__ import annotations

import multiprocessing as mp
import queue
import socket
import threading
import time
from typing import Any

try:
    import torch
    import torch.distributed as dist
except ImportError:  # pragma: no cover - torch is optional on a node
    torch = None
    dist = None


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


def gemm_all_gpus(n: int, warmup: int, iters: int, timeout: float) -> dict[str, Any]:
    """torch.matmul n³ on every GPU at once (one thread per GPU), timed with CUDA events.

    bf16 on compute capability ≥ 8.0, fp16 below (V100/V100S). Returns ``tflops`` (list
    per GPU), ``dtype``, ``allow_tf32``, ``capabilities``.
    """
    _require_cuda()
    ngpu = torch.cuda.device_count()
    tflops: list[float | None] = [None] * ngpu
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
            start.record()
            for _ in range(iters):
                torch.matmul(a, b, out=c)
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
            tflops[i] = 2 * n**3 * iters / (ms / 1e3) / 1e12
            dtypes[i] = "bf16" if dtype == torch.bfloat16 else "fp16"
        except Exception as exc:
            errors[i] = f"{type(exc).__name__}: {exc}"
            barrier.abort()

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(ngpu)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    if any(t.is_alive() for t in threads):
        raise RuntimeError(f"GEMM did not finish within {timeout:g} s")
    if errors:
        raise RuntimeError("; ".join(f"GPU {i}: {e}" for i, e in sorted(errors.items())))
    if len(set(dtypes)) != 1:
        raise RuntimeError(f"GPUs ran different dtypes: {dtypes}")
    return {
        "tflops": tflops,
        "dtype": dtypes[0],
        "allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "capabilities": [list(torch.cuda.get_device_capability(i)) for i in range(ngpu)],
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
    }


def hbm_bandwidth(nbytes: int, warmup: int, iters: int) -> list[float]:
    """Device-to-device copy bandwidth per GPU in GB/s (bytes read + written)."""
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


def _nccl_worker(
    rank: int, n: int, port: int, nelem: int, warmup: int, iters: int, out: Any
) -> None:
    try:
        torch.cuda.set_device(rank)
        dist.init_process_group(
            "nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n
        )
        t = torch.ones(nelem, dtype=torch.float32, device=f"cuda:{rank}")
        for _ in range(warmup):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        dist.barrier()
        started = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - started
        t.fill_(float(rank + 1))
        dist.all_reduce(t)
        correct = bool(torch.all(t == n * (n + 1) / 2).item())
        dist.destroy_process_group()
        out.put({"rank": rank, "elapsed_s": elapsed, "correct": correct})
    except Exception as exc:
        out.put({"rank": rank, "error": f"{type(exc).__name__}: {exc}"})


def nccl_allreduce(nbytes: int, warmup: int, iters: int, timeout: float) -> dict[str, Any]:
    """All-reduce across all local GPUs with torch + NCCL, one process per GPU."""
    _require_cuda()
    n = torch.cuda.device_count()
    if n < 2:
        raise RuntimeError("an all-reduce needs at least 2 GPUs")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    nelem = nbytes // 4
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_nccl_worker, args=(r, n, port, nelem, warmup, iters, out))
        for r in range(n)
    ]
    reports: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            p.start()
        while len(reports) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"NCCL all-reduce did not finish within {timeout:g} s")
            try:
                reports.append(out.get(timeout=min(left, 1.0)))
            except queue.Empty:
                if any(p.exitcode not in (None, 0) for p in procs):
                    raise RuntimeError("an NCCL rank died") from None
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
    errors = [r["error"] for r in reports if "error" in r]
    if errors:
        raise RuntimeError("; ".join(errors))
    time_s = max(r["elapsed_s"] for r in reports) / iters
    algbw = nelem * 4 / time_s / 1e9
    return {
        "backend": "torch-nccl",
        "ranks": n,
        "bytes": nelem * 4,
        "iters": iters,
        "time_s": time_s,
        "algbw_gbps": algbw,
        "busbw_gbps": algbw * 2 * (n - 1) / n,
        "correct": all(r["correct"] for r in reports),
    }
