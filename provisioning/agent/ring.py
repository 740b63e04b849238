"""All-reduce across local processes on the CPU: a real ring, real data, real time.

Backends: torch.distributed with gloo when torch is importable; otherwise a ring
all-reduce (reduce-scatter then all-gather, 2(n−1) steps) over numpy arrays in shared
memory, one process per rank, each step "receiving" a chunk from the left neighbour's
buffer into a local buffer and adding it. Bus bandwidth follows nccl-tests:
``busbw = algbw × 2(n−1)/n``.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import socket
import time
from typing import Any

try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy is optional on a node
    np = None  # type: ignore[assignment]

try:
    import torch
    import torch.distributed as dist
except ImportError:  # pragma: no cover - torch is optional on a node
    torch = None
    dist = None

BARRIER_TIMEOUT_S = 60.0


def _chunks(nelem: int, n: int) -> list[tuple[int, int]]:
    edges = [nelem * i // n for i in range(n + 1)]
    return [(edges[i], edges[i + 1]) for i in range(n)]


def _ring_worker(
    rank: int,
    n: int,
    buffers: list[Any],
    nelem: int,
    warmup: int,
    iters: int,
    barrier: Any,
    out: Any,
) -> None:
    try:
        arrays = [np.frombuffer(b, dtype=np.float32, count=nelem) for b in buffers]
        mine = arrays[rank]
        left = arrays[(rank - 1) % n]
        chunks = _chunks(nelem, n)
        recv = np.empty(max(hi - lo for lo, hi in chunks), dtype=np.float32)

        def allreduce() -> None:
            for step in range(n - 1):  # reduce-scatter
                lo, hi = chunks[(rank - step - 1) % n]
                tmp = recv[: hi - lo]
                np.copyto(tmp, left[lo:hi])
                mine[lo:hi] += tmp
                barrier.wait(BARRIER_TIMEOUT_S)
            for step in range(n - 1):  # all-gather
                lo, hi = chunks[(rank - step) % n]
                np.copyto(mine[lo:hi], left[lo:hi])
                barrier.wait(BARRIER_TIMEOUT_S)

        mine[:] = 1.0
        barrier.wait(BARRIER_TIMEOUT_S)
        for _ in range(warmup):
            allreduce()
        barrier.wait(BARRIER_TIMEOUT_S)
        started = time.perf_counter()
        for _ in range(iters):
            allreduce()
        elapsed = time.perf_counter() - started
        # Verification run on known data: rank r contributes r + 1 everywhere.
        barrier.wait(BARRIER_TIMEOUT_S)
        mine[:] = float(rank + 1)
        barrier.wait(BARRIER_TIMEOUT_S)
        allreduce()
        expected = n * (n + 1) / 2
        correct = bool(np.all(mine == expected))
        out.put({"rank": rank, "elapsed_s": elapsed, "correct": correct})
    except Exception as exc:
        try:
            barrier.abort()
        finally:
            out.put({"rank": rank, "error": f"{type(exc).__name__}: {exc}"})


def _gloo_worker(
    rank: int, n: int, port: int, nelem: int, warmup: int, iters: int, out: Any
) -> None:
    try:
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n
        )
        t = torch.ones(nelem, dtype=torch.float32)
        for _ in range(warmup):
            dist.all_reduce(t)
        dist.barrier()
        started = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        elapsed = time.perf_counter() - started
        t.fill_(float(rank + 1))
        dist.all_reduce(t)
        correct = bool(torch.all(t == n * (n + 1) / 2))
        dist.destroy_process_group()
        out.put({"rank": rank, "elapsed_s": elapsed, "correct": correct})
    except Exception as exc:
        out.put({"rank": rank, "error": f"{type(exc).__name__}: {exc}"})


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_allreduce(
    nbytes: int, nprocs: int, warmup: int, iters: int, timeout: float, backend: str = "auto"
) -> dict[str, Any]:
    """Run an all-reduce of ``nbytes`` per rank across ``nprocs`` local processes.

    Returns ``backend, ranks, bytes, iters, time_s`` (per all-reduce, slowest rank),
    ``algbw_gbps, busbw_gbps, correct``. Raises RuntimeError when a rank fails or hangs.
    """
    if nprocs < 2:
        raise RuntimeError("an all-reduce needs at least 2 processes")
    if backend == "auto":
        backend = "torch-gloo" if dist is not None and dist.is_available() else "numpy-ring"
    if backend == "numpy-ring" and np is None:
        raise RuntimeError("neither torch nor numpy is importable")
    nelem = max(nprocs, nbytes // 4)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    if backend == "torch-gloo":
        port = _free_port()
        procs = [
            ctx.Process(target=_gloo_worker, args=(r, nprocs, port, nelem, warmup, iters, out))
            for r in range(nprocs)
        ]
    else:
        buffers = [ctx.RawArray("f", nelem) for _ in range(nprocs)]
        barrier = ctx.Barrier(nprocs)
        procs = [
            ctx.Process(
                target=_ring_worker,
                args=(r, nprocs, buffers, nelem, warmup, iters, barrier, out),
            )
            for r in range(nprocs)
        ]
    deadline = time.monotonic() + timeout
    reports: list[dict[str, Any]] = []
    try:
        for p in procs:
            p.start()
        while len(reports) < nprocs:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"all-reduce did not finish within {timeout:g} s")
            try:
                reports.append(out.get(timeout=min(left, 1.0)))
            except queue.Empty:
                if any(p.exitcode not in (None, 0) for p in procs):
                    codes = [p.exitcode for p in procs]
                    raise RuntimeError(f"an all-reduce rank died (exit codes {codes})") from None
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
    errors = [r["error"] for r in reports if "error" in r]
    if errors:
        raise RuntimeError("all-reduce rank failed: " + "; ".join(errors))
    time_s = max(r["elapsed_s"] for r in reports) / iters
    nbytes_used = nelem * 4
    algbw = nbytes_used / time_s / 1e9
    return {
        "backend": backend,
        "ranks": nprocs,
        "bytes": nbytes_used,
        "iters": iters,
        "time_s": time_s,
        "algbw_gbps": algbw,
        "busbw_gbps": algbw * 2 * (nprocs - 1) / nprocs,
        "correct": all(r["correct"] for r in reports),
    }
