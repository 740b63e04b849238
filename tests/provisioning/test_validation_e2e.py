"""Agent → raw outputs → parsers → metrics → stored rules → verdict, end to end.

The real agent runs as a process (``python -m provisioning.agent --device cuda``) with fake
GPU tools first on PATH (``fakegpu/tool.py``: the real public samples in ``samples/``, cut
and varied per node) and torch's GEMM/copy figures injected through the one seam
(``PROVISIONING_AGENT_INJECT_FIGURES``); its JSON Lines file is judged by
``manage.py validation_judge`` with the rules as stored, the code a provisioning run uses.
A healthy node of every type the demo sells is accepted at its own message size; each
broken node is rejected with its own reason.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from inventory.models import Fabric, Interconnect
from tests import factories
from tests.provisioning.fakegpu.tool import ib_write_bw_script, ib_write_bw_slow

REPO = Path(__file__).resolve().parents[2]
TOOL = Path(__file__).resolve().parent / "fakegpu" / "tool.py"
TOOLS = ("nvidia-smi", "nvbandwidth", "all_reduce_perf", "dcgmi", "dmesg", "ibstat", "ib_write_bw")
GIB = 1024**3

# name as nvidia-smi prints it, memory.total, NVLinks per GPU, GEMM dtype and figures
H100 = {"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "nvlink_links": 18}
H200 = {"name": "NVIDIA H200", "memory_mib": 143771, "nvlink_links": 18}
A100 = {"name": "NVIDIA A100-SXM4-40GB", "memory_mib": 40960, "nvlink_links": 12}
RTX = {"name": "NVIDIA GeForce RTX 3090", "memory_mib": 24576, "nvlink_links": 0}
V100S = {"name": "Tesla V100S-PCIE-32GB", "memory_mib": 32768, "nvlink_links": 0}
# the 8 × NDR400 the H100/H200 node types declare: the InfiniBand CAs of the real 8×H100
# ibstat sample (samples/ibstat_8xH100_8ib_1eth-bond_gpud.txt), whose ninth device is an
# Ethernet (RoCE) front-end bond
IB8 = ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
ETH_BOND = ["mlx5_bond_0"]

NODES = {
    # H800 sample's P2P (172 GB/s, 8 NVLinks) × 2.25: an H100/H200's 18 NVLink 4 links.
    "h100": {
        **H100,
        "gpus": 8,
        "busbw": 481.5,
        "ib_devices": IB8,
        "nvb_scale": {"device_to_device_memcpy_read_ce": 2.25},
        "figures": {"tflops": 800.0, "dtype": "bf16", "fp8": 1450.0, "hbm": 3000.0},
    },
    "h200": {
        **H200,
        "gpus": 8,
        "busbw": 472.0,
        "ib_devices": IB8,
        "nvb_scale": {"device_to_device_memcpy_read_ce": 2.25},
        "figures": {"tflops": 805.0, "dtype": "bf16", "fp8": 1460.0, "hbm": 4300.0},
    },
    # the OCI A100 40G sample's busbw at 8G; PCIe 4.0 host copies; 4 NVLinks per pair
    "a100": {
        **A100,
        "gpus": 4,
        "busbw": 232.2,
        "ib_devices": ["mlx5_0", "mlx5_1"],
        "nvb_scale": {
            "host_to_device_memcpy_ce": 0.45,
            "device_to_host_memcpy_ce": 0.45,
            "device_to_device_memcpy_read_ce": 0.55,
        },
        "figures": {"tflops": 250.0, "dtype": "bf16", "fp8": None, "hbm": 1400.0},
    },
    "rtx3090": {
        **RTX,
        "gpus": 1,
        "mig": "[N/A]",
        "ecc_kind": "none",  # GeForce: no ECC, nvidia-smi prints [N/A]
        "has_remap": False,
        "nvb_scale": {"host_to_device_memcpy_ce": 0.46, "device_to_host_memcpy_ce": 0.46},
        "figures": {"tflops": 74.0, "dtype": "bf16", "fp8": None, "hbm": 850.0},
    },
    "v100s": {
        **V100S,
        "gpus": 1,
        "mig": "[N/A]",
        "ecc_kind": "volta",  # retired pages, no SRAM/DRAM counters, no row remapping
        "has_remap": False,
        "nvb_scale": {"host_to_device_memcpy_ce": 0.23, "device_to_host_memcpy_ce": 0.23},
        "figures": {"tflops": 85.0, "dtype": "fp16", "fp8": None, "hbm": 1000.0},
    },
}


@pytest.fixture
def node_types(db):
    """The node types the demo sells, with a GPU model row each (the judge's --node-type)."""

    def gpu(name: str, memory: int):
        return factories.gpu_model(name) if memory else None

    return {
        "h100": factories.node_type("h100-8x-nvlink", gpu_model=gpu("H100 80G SXM", 80)),
        "h200": factories.node_type(
            "h200-8x-nvlink", name="H200 8-GPU", gpu_model=gpu("H200 141G SXM", 141)
        ),
        "a100": factories.node_type(
            "a100-40g-4x",
            name="A100 4-GPU",
            gpu_model=gpu("A100 40G SXM", 40),
            gpu_count=4,
            nic_count=2,
            nic_speed_gbps=200,
            fabric=Fabric.IB_HDR,
            interconnect=Interconnect.NVLINK,
        ),
        "rtx3090": factories.node_type(
            "rtx3090-1x",
            name="RTX 3090",
            gpu_model=gpu("RTX 3090 24G", 24),
            gpu_count=1,
            nic_count=1,
            nic_speed_gbps=25,
            fabric=Fabric.ETHERNET,
            interconnect=Interconnect.PCIE,
        ),
        "v100s": factories.node_type(
            "v100s-1x",
            name="V100S",
            gpu_model=gpu("V100S 32G PCIe", 32),
            gpu_count=1,
            nic_count=1,
            nic_speed_gbps=25,
            fabric=Fabric.ETHERNET,
            interconnect=Interconnect.PCIE,
        ),
    }


def _node_files(tmp_path: Path, node: dict, *, without: tuple[str, ...] = ()) -> dict[str, str]:
    """The fake tools' folder, the node's spec and the injected figures; the environment."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        if tool in without:
            continue
        path = bin_dir / tool
        if tool == "ib_write_bw":
            overrides = tmp_path / "ib_write_bw"
            overrides.mkdir()
            for device, gbps in node.get("ib_bw", {}).items():
                (overrides / f"{device}.txt").write_text(ib_write_bw_slow(device, gbps))
            path.write_text(ib_write_bw_script(overrides))
        else:
            path.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S {TOOL} {tool} "$@"\n')
        path.chmod(0o755)
    n = node["gpus"]
    f = node["figures"]
    figures = {
        "gemm": {
            "tflops": f.get("tflops_list") or [f["tflops"]] * n,
            "dtype": f["dtype"],
            "max_rel_error": f.get("rel_error_list") or [0.0021] * n,
            "fp8_tflops": [f["fp8"]] * n if f["fp8"] else [None] * n,
            "allow_tf32": False,
        },
        "hbm_gbps": f.get("hbm_list") or [f["hbm"]] * n,
    }
    (tmp_path / "figures.json").write_text(json.dumps(figures))
    (tmp_path / "node.json").write_text(json.dumps(node))
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "FAKE_NODE_SPEC": str(tmp_path / "node.json"),
        "FAKE_IB_LOG": str(tmp_path / "ib_write_bw.log"),
        "PROVISIONING_AGENT_INJECT_FIGURES": str(tmp_path / "figures.json"),
    }


AGENT = [sys.executable, "-m", "provisioning.agent", "--profile", "acceptance", "--device", "cuda"]


def run_agent(tmp_path: Path, node: dict, *, args: tuple[str, ...] = (), **kw) -> Path:
    env = _node_files(tmp_path, node, **kw)
    out = tmp_path / "agent.jsonl"
    proc = subprocess.run(
        [*AGENT, "--gemm-seconds", "0.1", "--out", str(out), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == proc.stdout  # the file holds exactly what stdout got
    return out


def judge(node_type, path: Path) -> tuple[int, dict]:
    stdout = io.StringIO()
    try:
        call_command("validation_judge", "--node-type", node_type.code, str(path), stdout=stdout)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, json.loads(stdout.getvalue()) if stdout.getvalue() else {}


def codes(judged: dict) -> set[tuple[str, str]]:
    return {(r["code"], str(r["params"].get("metric") or "")) for r in judged["reasons"]}


# --------------------------------------------------------------------------- accepted


@pytest.mark.parametrize(
    ("kind", "size"),
    [("h100", 16 * GIB), ("h200", 16 * GIB), ("a100", 8 * GIB), ("rtx3090", None), ("v100s", None)],
)
def test_a_healthy_node_of_each_type_sold_is_accepted_at_its_own_message_size(
    node_types, tmp_path, kind, size
):
    code, judged = judge(node_types[kind], run_agent(tmp_path, NODES[kind]))
    assert code == 0, judged["reasons"]
    assert judged["accepted"] is True and judged["reasons"] == []
    metrics = judged["metrics"]
    assert metrics["gpu_count"] == NODES[kind]["gpus"]
    if size:  # the size nccl-tests' own rule picks: 3 × size + 1 GiB must fit
        assert metrics["allreduce_message_size_bytes"] == size
        assert metrics[f"allreduce_busbw_gbps@{size}"] == pytest.approx(NODES[kind]["busbw"])
        assert metrics["allreduce_wrong_count"] == 0
    else:  # one GPU: no all-reduce, and no rule asks for one
        assert "allreduce_message_size_bytes" not in metrics
    # every rule that applied passed, each with its source; the fp8 figure is recorded
    assert judged["results"] and all(r["status"] == "pass" for r in judged["results"])
    assert all(r["source"] for r in judged["results"])
    if kind in ("h100", "h200"):
        assert metrics["gemm_tflops_fp8"] == [NODES[kind]["figures"]["fp8"]] * 8
        assert len(metrics["ib_write_bw_gbps"]) == metrics["ib_nic_count"] == 8
        assert metrics["nvlink_links_total"] == 8 * 18
    assert len(metrics["gpu_temperature_max_c"]) == NODES[kind]["gpus"]


def _ib_check(path: Path) -> dict:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return next(c for c in lines if c.get("type") == "check" and c["name"] == "ib_write_bw")


def test_a_front_end_ethernet_rdma_nic_is_neither_counted_nor_measured(node_types, tmp_path):
    """The real 8×H100 ibstat: eight InfiniBand CAs and a BlueField bond whose link layer
    is Ethernet (the front-end, RoCE). Accepted; the bond is not a fabric NIC."""
    node = {**H100_NODE, "ib_devices": IB8, "eth_devices": ETH_BOND}
    path = run_agent(tmp_path, node)
    code, judged = judge(node_types["h100"], path)
    assert code == 0, judged["reasons"]
    metrics = judged["metrics"]
    assert metrics["ib_nic_count"] == 8 and metrics["rdma_ethernet_nic_count"] == 1
    assert len(metrics["ib_write_bw_gbps"]) == 8
    started = {line.split()[0] for line in (tmp_path / "ib_write_bw.log").read_text().splitlines()}
    assert started == set(IB8)  # ib_write_bw never ran on mlx5_bond_0
    check = _ib_check(path)
    assert check["details"]["devices"] == IB8
    assert "### device mlx5_bond_0" not in check["raw"]
    assert "CA 'mlx5_bond_0'" in check["raw"]  # the listing is kept as ibstat printed it


def test_seven_infiniband_nics_and_a_front_end_ethernet_one_are_rejected(node_types, tmp_path):
    """Counting every RDMA device would make 7 + 1 = 8 and pass: the Ethernet one does
    not count, so the node lacks a fabric NIC."""
    node = {**H100_NODE, "ib_devices": IB8[:7], "eth_devices": ETH_BOND}
    code, judged = judge(node_types["h100"], run_agent(tmp_path, node))
    assert code == 1
    assert ("below_threshold", "ib_nic_count") in codes(judged), judged["reasons"]
    reason = next(r for r in judged["reasons"] if r["params"].get("metric") == "ib_nic_count")
    assert reason["params"]["measured"] == 7


# --------------------------------------------------------------------------- rejected

H100_NODE = NODES["h100"]

REJECTED = {
    "nvlink_all_inactive": ({"nvlink": "all_inactive"}, ("nvlink_all_inactive", "")),
    "nvlink_no_link_lines": ({"nvlink": "none"}, ("nvlink_no_links", "")),
    "nvlink_one_inactive": ({"nvlink": "one_inactive"}, ("nvlink_inactive", "")),
    "7_of_8_gpus": ({"gpus": 7}, ("not_equal", "gpu_count")),
    "xid_79": ({"xids": [13, 79]}, ("xid_critical", "")),
    "xid_95_uncontained_ecc": ({"xids": [95]}, ("xid_critical", "")),
    "ecc_uncorrectable": (
        {"ecc": {"5": {"ecc.errors.uncorrected.volatile.sram": 2}}},
        ("ecc_uncorrectable", ""),
    ),
    "ecc_mode_off": ({"ecc_mode": "Disabled"}, ("not_equal", "ecc_off_gpus")),
    "ecc_counters_missing": (  # [N/A] on a card that has ECC: missing data, not a pass
        {"ecc_na": ["ecc.errors.uncorrected.volatile.sram"]},
        ("missing_metric", "ecc_sram_uncorrectable"),
    ),
    "7_of_8_nics": ({"ib_devices": IB8[:7]}, ("below_threshold", "ib_nic_count")),
    # one NIC's GPUDirect loopback at 301 Gb/s, under Azure's 380 (a flapping cable, PCIe)
    "nic_under_threshold": ({"ib_bw": {"mlx5_6": 301.2}}, ("below_threshold", "ib_write_bw_gbps")),
    "remap_over_512": (
        {"ecc": {"2": {"remapped_rows.uncorrectable": 600}}},
        ("below_threshold", "remapped_rows_uncorrectable"),
    ),
    "wrong_values_exit_0": ({"nccl": "wrong"}, ("nccl_wrong_values", "")),
    "minus_nan_no_rows": ({"nccl": "nan_avg"}, ("nccl_no_rows", "")),
    "inf": ({"nccl": "inf"}, ("not_finite", "")),
    "plus_inf": ({"nccl": "plus_inf"}, ("not_finite", "")),
    "nan": ({"nccl": "nan"}, ("not_finite", "")),
    "dcgm_fail": ({"dcgm": "FAIL"}, ("not_equal", "dcgm_fail_count")),
    "dcgm_skip": ({"dcgm": "SKIP"}, ("not_equal", "dcgm_skip_count")),
    "throttled_gpu": ({"throttle": {"3": "0x0000000000000040"}}, ("gpu_throttled", "")),
    "mig_on": ({"gpu_overrides": {"2": {"mig": "Enabled"}}}, ("mig_enabled", "")),
    "wrong_model": (
        {"gpu_overrides": {"6": {"name": "NVIDIA A100-SXM4-80GB"}}},
        ("gpu_model_mismatch", ""),
    ),
    "wrong_memory": (
        {"gpu_overrides": {"4": {"memory_mib": 40960}}},
        ("below_threshold", "gpu_memory_mib"),
    ),
    "slow_gpu": (
        {"figures": {**H100_NODE["figures"], "tflops_list": [800.0] * 7 + [740.0]}},
        ("below_node_median", "gemm_tflops_bf16"),
    ),
    # GPU 2's product is wrong (a float64 slice disagrees by 30 %): fast is not enough
    "gemm_wrong_result": (
        {
            "figures": {
                **H100_NODE["figures"],
                "rel_error_list": [0.0021] * 2 + [0.3] + [0.0021] * 5,
            }
        },
        ("below_threshold", "gemm_rel_error"),
    ),
    # GPU 5: above the HBM floor (85 % of 3350 = 2848) but 8 % below the node median
    "slow_hbm_gpu": (
        {
            "figures": {
                **H100_NODE["figures"],
                "hbm_list": [3200.0] * 5 + [2950.0] + [3200.0] * 2,
            }
        },
        ("below_node_median", "hbm_bandwidth_gbps"),
    ),
    # GPU 3's host copy: 50.9 GB/s, above Azure's 48 but 8 % below the node median
    "slow_h2d_gpu": (
        {"nvb_gpu_scale": {"host_to_device_memcpy_ce": {"3": 0.92}}},
        ("below_node_median", "h2d_bandwidth_gbps"),
    ),
}


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_a_broken_h100_node_is_rejected_with_its_own_reason(node_types, tmp_path, case):
    change, reason = REJECTED[case]
    code, judged = judge(node_types["h100"], run_agent(tmp_path, {**H100_NODE, **change}))
    assert code == 1
    assert judged["accepted"] is False
    assert reason in codes(judged), judged["reasons"]
    if case == "nic_under_threshold":  # the NIC by name, not a GPU by its list position
        (nic,) = [r for r in judged["reasons"] if r["params"].get("metric") == reason[1]]
        assert nic["params"]["nic"] == "mlx5_6" and nic["params"].get("gpu") is None
        assert "on NIC mlx5_6: measured 301.2 Gb/s" in nic["text"]
    if case.startswith("slow_"):  # the median rule alone: every figure is above its floor
        assert ("below_threshold", reason[1]) not in codes(judged), judged["reasons"]


def test_xid_94_a_contained_ecc_error_is_noted_and_judged_by_the_remap_rules(node_types, tmp_path):
    """NVIDIA's XID catalogue: 94 is a contained ECC error (the application is killed, the
    row remapped at the next reset): a note, the row-remap rules judge the memory; with a
    remap pending the node fails on that rule."""
    code, judged = judge(node_types["h100"], run_agent(tmp_path, {**H100_NODE, "xids": [94]}))
    assert code == 0, judged["reasons"]
    assert [n["code"] for n in judged["notes"]] == ["xid_noted"]
    assert judged["metrics"]["xid_codes"] == [94]
    pending = {**H100_NODE, "xids": [94], "ecc": {"1": {"remapped_rows.pending": "Yes"}}}
    (tmp_path / "pending").mkdir()
    code, judged = judge(node_types["h100"], run_agent(tmp_path / "pending", pending))
    assert code == 1
    assert codes(judged) == {("not_equal", "remapped_rows_pending")}, judged["reasons"]


V100S_REJECTED = {
    "retirement_pending": (
        {"ecc": {"0": {"retired_pages.dbe": 1, "retired_pages.pending": "Yes"}}},
        ("not_equal", "retired_pages_pending"),
    ),
    "retirement_table_full": (
        {"ecc": {"0": {"retired_pages.sbe": 40, "retired_pages.dbe": 22}}},
        ("below_threshold", "retired_pages_total"),
    ),
    # a V100S reporting no ECC at all (ECC off, or a board without it): fails closed
    "no_ecc_data": ({"ecc_kind": "none"}, ("missing_metric", "retired_pages_pending")),
}


@pytest.mark.parametrize("case", sorted(V100S_REJECTED))
def test_a_v100s_with_retired_pages_or_no_ecc_data_is_rejected(node_types, tmp_path, case):
    """Volta retires pages instead of remapping rows and has no SRAM/DRAM counters: its
    own ECC rules judge it (a healthy V100S and a healthy RTX 3090 without ECC are
    accepted above), and missing data on a card that has ECC never passes."""
    change, reason = V100S_REJECTED[case]
    code, judged = judge(node_types["v100s"], run_agent(tmp_path, {**NODES["v100s"], **change}))
    assert code == 1 and reason in codes(judged), judged["reasons"]
    if case == "no_ecc_data":
        assert ("not_equal", "ecc_off_gpus") in codes(judged)


def test_a_figure_is_judged_only_at_the_size_it_holds_at(node_types, tmp_path):
    """Azure's 460 GB/s holds at 16G: an H100 run at 8G (a size forced by hand) gives a
    busbw keyed by 8G, which no H100 rule reads, so the 16G figure is not measured."""
    path = run_agent(tmp_path, H100_NODE, args=("--sizes", "allreduce=8G"))
    code, judged = judge(node_types["h100"], path)
    assert judged["metrics"]["allreduce_message_size_bytes"] == 8 * GIB
    assert "allreduce_busbw_gbps@8589934592" in judged["metrics"]
    assert code == 1
    assert ("missing_metric", "allreduce_busbw_gbps@17179869184") in codes(judged)


def test_a_missing_tool_fails_the_node_instead_of_being_skipped(node_types, tmp_path):
    """Each missing tool fails its own check (no torch-NCCL fallback for nccl-tests, no
    skipped DCGM or InfiniBand measurement passing by omission)."""
    missing = ("nvbandwidth", "all_reduce_perf", "dcgmi", "ib_write_bw")
    path = run_agent(tmp_path, H100_NODE, without=missing)
    code, judged = judge(node_types["h100"], path)
    assert code == 1
    reasons = {r["params"]["check"]: r["params"] for r in judged["reasons"]
               if r["code"] == "tool_missing"}  # fmt: skip
    assert set(reasons) == {"nvbandwidth", "allreduce", "dcgm_diag", "ib_write_bw"}
    assert "allreduce_busbw_gbps@17179869184" not in judged["metrics"]


_READER = """
import subprocess, sys
agent = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL, start_new_session=True)
print(agent.pid, flush=True)
agent.stdout.read()
"""


def _alive(pgid: int) -> list[int]:
    """The processes of a process group that are not zombies."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry.name))
    return alive


def test_an_agent_whose_reader_was_killed_stops_with_its_tools(tmp_path):
    """A worker SIGKILLed mid-check cannot kill the agent's group: the agent does it."""
    env = _node_files(tmp_path, {**H100_NODE, "hang": "dcgmi"})
    out = tmp_path / "agent.jsonl"
    reader = subprocess.Popen(  # as LocalRunner reads the agent: a pipe, its own session
        [sys.executable, "-c", _READER, *AGENT, "--gemm-seconds", "0.1", "--out", str(out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    agent_pid = int(reader.stdout.readline())
    try:
        deadline = time.monotonic() + 60
        while '"name": "dcgm_diag"' not in (out.read_text() if out.exists() else ""):
            assert time.monotonic() < deadline, "the agent never reached dcgm_diag"
            time.sleep(0.05)
        assert len(_alive(agent_pid)) >= 2  # the agent and its hanging dcgmi
        reader.kill()
        reader.wait()
        deadline = time.monotonic() + 10
        while _alive(agent_pid):
            assert time.monotonic() < deadline, f"still running: {_alive(agent_pid)}"
            time.sleep(0.1)
    finally:
        for pid in _alive(agent_pid):
            os.kill(pid, signal.SIGKILL)


def test_an_agent_killed_halfway_keeps_what_finished_and_the_verdict_names_the_rest(
    node_types, tmp_path
):
    env = _node_files(tmp_path, {**H100_NODE, "hang": "dcgmi"})  # dcgmi diag -r 3 "runs"
    out = tmp_path / "agent.jsonl"
    proc = subprocess.Popen(
        [*AGENT, "--gemm-seconds", "0.1", "--out", str(out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        started = '"type": "check_start", "name": "dcgm_diag"'  # every other check done
        while started not in (out.read_text() if out.exists() else ""):
            assert time.monotonic() < deadline, "the agent never reached dcgm_diag"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the agent and its dcgmi, as a timeout would
        proc.wait()
    code, judged = judge(node_types["h100"], out)
    assert code == 1 and judged["complete"] is False
    assert ("agent_incomplete", "") in codes(judged)
    unfinished = [
        r["params"]["check"] for r in judged["reasons"] if r["code"] == "check_not_finished"
    ]
    assert unfinished == ["dcgm_diag"]
    # what finished was kept and judged: the GEMM and the all-reduce passed
    assert judged["metrics"]["allreduce_busbw_gbps@17179869184"] == pytest.approx(481.5)
    passed = {r["metric"] for r in judged["results"] if r["status"] == "pass"}
    assert {"gemm_tflops_bf16", "allreduce_busbw_gbps@17179869184"} <= passed


def test_the_judge_exits_2_on_a_file_it_cannot_read(node_types, tmp_path):
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("not an agent document\n")
    for path in (garbage, tmp_path / "absent.jsonl"):
        with pytest.raises(SystemExit) as exc:
            call_command("validation_judge", "--node-type", "h100-8x-nvlink", str(path))
        assert exc.value.code == 2


def test_injected_figures_are_refused_outside_tests(node_types, tmp_path, settings):
    path = run_agent(tmp_path, H100_NODE)
    settings.VALIDATION_ALLOW_INJECTED_FIGURES = False
    code, judged = judge(node_types["h100"], path)
    assert code == 1 and ("injected_figures", "") in codes(judged)


# --------------------------------------------------------------------------- no CPU switch


def test_no_setting_judges_a_gpu_node_on_the_cpu_path(db, settings, node_types):
    from provisioning.validation import services
    from provisioning.validation.system_checks import simulation_switch_errors

    s = factories.site("SZ")
    node = factories.node(s, node_types["h100"], driver="redfish")
    settings.PORTAL_REDFISH_IN_BAND = ""
    settings.VALIDATION_AGENT_RUNNER = "local"  # forced local: still judged as an H100
    target = services.node_target(node)
    assert target.gpu_model == "H100" and target.expected["gpu_count"] == 8
    assert target.fabric == "ndr400"
    node.driver = "simulated"  # only simulated hardware takes the CPU path
    assert services.node_target(node).gpu_model == "cpu"
    # and the switches that would serve the CPU path are refused outside DEBUG and tests
    errors = simulation_switch_errors(
        debug=False, settings_module="portal.settings", runner="local", in_band="simulated"
    )
    assert [e.id for e in errors] == ["provisioning.E001", "provisioning.E002"]
    assert not simulation_switch_errors(
        debug=True, settings_module="portal.settings", runner="local", in_band="simulated"
    )
    assert not simulation_switch_errors(
        debug=False, settings_module="portal.settings", runner="auto", in_band=""
    )


def test_a_cpu_measurement_of_a_gpu_node_is_rejected(node_types, tmp_path):
    cpu_doc = tmp_path / "cpu.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "provisioning.agent", "--device", "cpu", "--only", "gemm",
         "--sizes", "gemm=64"],
        cwd=REPO, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    cpu_doc.write_text(proc.stdout)
    code, judged = judge(node_types["h100"], cpu_doc)
    assert code == 1 and ("device_mismatch", "") in codes(judged)


# --------------------------------------------------------------------------- the report


def test_the_report_of_a_gpu_run_states_each_figure_against_its_threshold(
    node_types, tmp_path, settings
):
    """A healthy H100 document (fake tools, injected figures) through a stored run: the
    report names the size run, each raw output's SHA-256, measured values with units
    against thresholds with sources, the sustained GEMM samples; no simulated notice."""
    from provisioning.validation import report, services
    from provisioning.validation.interface import fold_lines

    settings.PORTAL_HARDWARE_DRIVER = "redfish"
    settings.PORTAL_REDFISH_IN_BAND = ""
    document = fold_lines(run_agent(tmp_path, H100_NODE).read_text())
    node = factories.node(factories.site("SZ"), node_types["h100"], driver="redfish")
    run = services.validation_run_create(nodes=[node], profile="acceptance", enqueue=False)
    run = services.validation_run_execute(run_id=run.pk, runner=lambda target, profile: document)
    assert run.status == "passed", run.results.first().reasons
    context = report.acceptance_report_context(run, language="en")
    assert context["simulated"] is False
    (n,) = context["nodes"]
    checks = {c["name"]: c for c in n["checks"]}
    stored = {a.check_name: a.sha256 for a in run.artifacts.filter(node=node)}
    assert checks["allreduce"]["size"] == "16G" and checks["dcgm_diag"]["size"] == "-r 3"
    assert all(c["sha256"] == stored[name] for name, c in checks.items())
    rows = {r["metric"]: r for r in n["rows"]}
    assert rows["allreduce_busbw_gbps@17179869184"]["measured"] == "482 GB/s"
    assert rows["allreduce_busbw_gbps@17179869184"]["expected"] == ">= 460 GB/s"
    assert "nd96isr_h100_v5 460 at 16G" in rows["allreduce_busbw_gbps@17179869184"]["source"]
    assert len(n["sustained"]) == 8 and n["sustained"][0]["fp8"] == "1,450"
    text = report.render_acceptance_report(run=run, language="en", swaps=[])
    assert text.startswith(b"%PDF") and b"/ByteRange" in text


def test_the_judge_and_a_provisioning_run_give_one_verdict_on_one_document(
    node_types, tmp_path, settings
):
    """The same broken document (XID 79, one NVLink down), judged by the command and by
    a stored validation run (the code a provisioning run's validate step uses): the same
    verdict with the same reasons."""
    from provisioning.validation import services
    from provisioning.validation.interface import fold_lines

    settings.PORTAL_HARDWARE_DRIVER = "redfish"
    settings.PORTAL_REDFISH_IN_BAND = ""
    path = run_agent(tmp_path, {**H100_NODE, "xids": [79], "nvlink": "one_inactive"})
    code, judged = judge(node_types["h100"], path)
    node = factories.node(factories.site("SZ"), node_types["h100"], driver="redfish")
    run = services.validation_run_create(nodes=[node], profile="acceptance", enqueue=False)
    document = fold_lines(path.read_text())
    run = services.validation_run_execute(run_id=run.pk, runner=lambda target, profile: document)
    (result,) = run.results.all()
    assert code == 1 and run.status == "failed" and result.accepted is False
    stored = [(r["code"], r["params"].get("metric")) for r in result.reasons]
    assert stored == [(r["code"], r["params"].get("metric")) for r in judged["reasons"]]
    assert {"xid_critical", "nvlink_inactive"} <= {c for c, _ in stored}


# --------------------------------------------------------------------------- live checks


def test_each_check_is_judged_on_its_own_as_its_line_arrives(node_types, tmp_path):
    """What the staff run page shows while the agent runs (``interface.live_sink``): the
    check whose output shows XID 79 fails at once with that reason, the others pass, a
    check no rule reads (no IB on a PCIe 3090 node) is not judged."""
    from provisioning.validation import selectors, services
    from provisioning.validation.interface import live_sink, parse_line

    def events(kind: str, node: dict) -> dict:
        seen: dict = {}
        target = services.node_type_target(node_types[kind])
        sink = live_sink(target, lambda e: seen.setdefault(e.kind, []).append(e),
                         selectors.rules_from_db(), allow_injected=True)  # fmt: skip
        (tmp_path / kind).mkdir()
        for text in run_agent(tmp_path / kind, node).read_text().splitlines():
            sink(parse_line(text))
        return seen

    seen = events("h100", {**H100_NODE, "xids": [79]})
    assert seen["planned"][0].planned[0] == "gpu_inventory"
    assert [e.name for e in seen["started"]] == list(seen["planned"][0].planned)
    verdicts = {e.name: e.verdict for e in seen["finished"]}
    assert verdicts.pop("xid") == "failed" and set(verdicts.values()) == {"passed"}
    xid = next(e for e in seen["finished"] if e.name == "xid")
    assert {(r["code"], r["params"].get("metric")) for r in xid.reasons} == {
        ("xid_critical", None),
        ("not_equal", "xid_critical_count"),
    }
    assert xid.metrics["xid_codes"] == [79]
    rtx = {e.name: e for e in events("rtx3090", NODES["rtx3090"])["finished"]}
    assert (rtx["ib_write_bw"].status, rtx["ib_write_bw"].verdict) == ("skipped", "not_judged")
    assert rtx["gemm"].verdict == "passed"
