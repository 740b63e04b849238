"""What each profile runs, how big and for how long (pure data; the portal imports it for
its runner's time limit and the README's check table).

Message sizes follow nccl-tests' own rule: with data checking (the default, ``-c 1``)
``all_reduce_perf`` needs 3 × size + 1 GiB of GPU memory (``memMaxBytes = (maxMem − 1 GiB)
/ (datacheck ? 3 : 2)`` in nccl-tests ``src/common.cu``). A size that does not fit is
shrunk below the minimum: no row runs, ``Avg bus bandwidth : -nan``, exit status 0. So the
agent picks the largest of 16G, 8G, 4G, 2G, 1G that fits the smallest GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3
MIB = 1024**2
#: The burn-in the price book sells: 24 hours (the seeds' stability acceptance metric).
BURN_IN_SECONDS = 24 * 3600.0
#: Rounds of a burn-in (each a GEMM then an all-reduce): 30 minutes each over 24 hours,
#: enough to see a node slow down from its first rounds to its last.
BURN_IN_ROUNDS = 48
#: Message sizes tried, largest first (16G is the figure Azure judges H100/H200 at).
NCCL_SIZES = (16 * GIB, 8 * GIB, 4 * GIB, 2 * GIB, 1 * GIB)
NCCL_RESERVED_BYTES = 1 * GIB  # nccl-tests src/common.cu: maxMem - 1 GiB
NCCL_DATACHECK_BUFFERS = 3  # send, receive and the expected result


def nccl_message_bytes(memory_mib: int | None) -> int | None:
    """The largest size in :data:`NCCL_SIZES` with ``3 × size + 1 GiB ≤ memory``; None
    when the memory is unknown or not even 1 GiB fits (the check then fails closed)."""
    if not memory_mib or memory_mib <= 0:
        return None
    memory = memory_mib * MIB
    for size in NCCL_SIZES:
        if NCCL_DATACHECK_BUFFERS * size + NCCL_RESERVED_BYTES <= memory:
            return size
    return None


@dataclass(frozen=True)
class Profile:
    """A profile's figures. ``time_limit_s`` is the whole agent's budget: the runner kills
    it after that (plus a grace), keeping the checks that finished (one JSON line each)."""

    name: str
    dcgm_level: int
    gemm_seconds: float  # sustained GEMM on every GPU, clocks/temperature/power sampled
    time_limit_s: float
    ib_seconds: int  # ib_write_bw -D per NIC
    description: str
    #: The burn-in's length (0: none): rounds of sustained GEMM and all-reduce after the
    #: acceptance checks, clocks, temperature and power sampled throughout.
    burn_in_seconds: float = 0.0


PROFILES: dict[str, Profile] = {
    "quick": Profile(
        name="quick",
        dcgm_level=1,
        gemm_seconds=10.0,
        # dcgmi -r 1 (seconds) + GEMM 10 s + nvbandwidth (~1 min) + all-reduce (~1 min)
        # + ib_write_bw 5 s (all NICs at once) + the rest: 10 minutes with margin.
        time_limit_s=600.0,
        ib_seconds=5,
        description="readiness: DCGM -r 1, a 10 s GEMM, copies, all-reduce, health",
    ),
    "acceptance": Profile(
        name="acceptance",
        dcgm_level=3,
        gemm_seconds=60.0,
        # dcgmi diag -r 3 ≈ 15 min (NVIDIA dcgmi docs) + sustained GEMM 60 s + HBM copy
        # + nvbandwidth (~2 min) + all_reduce_perf at 16G (~1 min) + ib_write_bw 10 s (all
        # NICs at once) + health queries: about 20 minutes; the limit is 40 minutes.
        time_limit_s=2400.0,
        ib_seconds=10,
        description="before handover: DCGM -r 3, a 60 s sustained GEMM, every check",
    ),
    "burn_in": Profile(
        name="burn_in",
        dcgm_level=3,
        gemm_seconds=60.0,
        # The acceptance checks (40 minutes' limit) and 24 hours of burn-in, an hour spare.
        time_limit_s=2400.0 + BURN_IN_SECONDS + 3600.0,
        ib_seconds=10,
        description="acceptance, then 24 h of sustained GEMM and all-reduce (the add-on)",
        burn_in_seconds=BURN_IN_SECONDS,
    ),
}
