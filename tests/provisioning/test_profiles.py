"""Sizes and time limits per profile (``provisioning.agent.profiles``): nccl-tests' own
memory rule picks the all-reduce size, and acceptance has time for ``dcgmi diag -r 3``
(about 15 minutes) plus every other check; the SSH runner's limit is the profile's."""

from __future__ import annotations

import pytest

from provisioning.agent.profiles import GIB, PROFILES, nccl_message_bytes
from provisioning.validation.services import SshNodeRunner, agent_timeout_s


@pytest.mark.parametrize(
    ("memory_mib", "size"),
    [
        (143771, 16 * GIB),  # H200 (nvidia-smi memory.total)
        (81559, 16 * GIB),  # H100 80GB
        (40960, 8 * GIB),  # A100 40G: 3 × 16 + 1 = 49 GiB does not fit
        (32768, 8 * GIB),  # V100S 32G: 3 × 8 + 1 = 25 GiB fits
        (24576, 4 * GIB),  # RTX 3090: 25 GiB does not fit, 13 does
        (3500, None),  # not even 1 GiB (3 × 1 + 1 = 4 GiB): the check fails closed
        (None, None),
    ],
)
def test_the_all_reduce_size_is_the_largest_that_fits_with_data_checking(memory_mib, size):
    assert nccl_message_bytes(memory_mib) == size
    if size:
        assert 3 * size + GIB <= memory_mib * 1024**2 < 3 * (2 * size) + GIB or size == 16 * GIB


def test_acceptance_covers_dcgm_level_3_and_the_rest_and_the_runner_waits_that_long(settings):
    acceptance = PROFILES["acceptance"]
    assert acceptance.dcgm_level == 3 and acceptance.gemm_seconds >= 60
    # dcgmi diag -r 3 ≈ 15 min, the 60 s GEMM, nvbandwidth ~2 min, all-reduce ~1 min,
    # ib_write_bw, the queries: about 20 minutes; the limit leaves as much again
    assert acceptance.time_limit_s >= 2 * (15 * 60 + 60 + 120 + 60 + acceptance.ib_seconds)
    settings.VALIDATION_AGENT_TIMEOUT_S = 600  # the old limit that killed -r 3 runs
    assert agent_timeout_s("acceptance") == acceptance.time_limit_s == 2400
    assert agent_timeout_s("quick") == 600
    assert SshNodeRunner().timeout_s is None  # None: each run gets its profile's limit
    burn_in = PROFILES["burn_in"]
    assert agent_timeout_s("burn_in") >= acceptance.time_limit_s + burn_in.burn_in_seconds
