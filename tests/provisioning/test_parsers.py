"""Parsers of validation-tool output, against the real samples in ./samples (see SOURCES.md).

Every expected figure below was read from the sample file by hand.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from provisioning.validation.parsers import (
    parse_dcgmi,
    parse_ib_write_bw,
    parse_ibstat,
    parse_nccl_tests,
    parse_nvbandwidth,
    parse_nvidia_smi_csv,
)

SAMPLES = Path(__file__).parent / "samples"
REPO = Path(__file__).resolve().parents[2]


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def clean_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "provisioning.validation.parsers", *args],
        cwd=REPO,
        env=clean_env(),
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_every_sample_is_covered_and_sources_kept():
    names = {p.name for p in SAMPLES.iterdir()}
    assert "SOURCES.md" in names
    for name in names - {"SOURCES.md"}:
        assert name in (SAMPLES / "SOURCES.md").read_text()


# ------------------------------------------------------------------------- nccl-tests


def test_nccl_16xh100_two_nodes():
    r = parse_nccl_tests(sample("nccl-tests_all_reduce_16xH100_2node.txt"))
    assert r["ok"] is True and r["damaged"] is False and r["errors"] == []
    assert r["avg_busbw_gbps"] == 70.742
    assert r["max_busbw_gbps"] == 338.82
    assert r["ranks"] == 16
    assert r["devices"][8] == {
        "rank": 8,
        "host": "ztan-mig-gq73",
        "device": 0,
        "bus_id": "0000:04:00",
        "name": "NVIDIA H100 80GB HBM3",
    }
    assert len(r["rows"]) == 31
    assert r["version"] is None and r["collective"] is None
    assert r["has_root_column"] is True and r["check_column"] == "#wrong"
    first, last = r["rows"][0], r["rows"][-1]
    assert first["size_bytes"] == 8 and first["count"] == 2 and first["type"] == "float"
    assert first["redop"] == "sum" and first["root"] == -1
    assert first["out_of_place"] == {
        "time_us": 135.8,
        "algbw_gbps": 0.0,
        "busbw_gbps": 0.0,
        "wrong": 0,
        "error": None,
    }
    assert last["size_bytes"] == 8589934592 and last["count"] == 2147483648
    assert last["out_of_place"]["time_us"] == 47535.0
    assert last["out_of_place"]["algbw_gbps"] == 180.71
    assert last["out_of_place"]["busbw_gbps"] == 338.82
    assert last["in_place"]["busbw_gbps"] == 337.35


def test_nccl_gh200_version_and_collective_lines():
    r = parse_nccl_tests(sample("nccl-tests_all_reduce_8xGH200_2node_v2.18.3.txt"))
    assert r["ok"] is True
    assert r["version"] == "2.18.3"
    assert r["collective"] == "all_reduce"
    assert r["avg_busbw_gbps"] == 17.8617
    assert r["max_busbw_gbps"] == 107.63
    assert len(r["rows"]) == 28
    assert r["rows"][0]["type"] == "int8" and r["rows"][0]["size_bytes"] == 1
    assert r["rows"][-1]["in_place"]["time_us"] == 2182.20


def test_nccl_8xa100_single_size():
    r = parse_nccl_tests(sample("nccl-tests_all_reduce_8xA100_collective-starting.txt"))
    assert r["ok"] is True
    assert r["avg_busbw_gbps"] == 232.167
    assert r["ranks"] == 8
    (row,) = r["rows"]
    assert row["size_bytes"] == 10737418240
    assert row["out_of_place"]["busbw_gbps"] == 232.20
    assert row["in_place"]["busbw_gbps"] == 232.13
    assert row["in_place"]["time_us"] == 80948.0


def test_nccl_16xa100_foreign_line_before_header():
    r = parse_nccl_tests(sample("nccl-tests_all_reduce_16xA100_2node_collective-starting.txt"))
    assert r["ok"] is True
    assert r["avg_busbw_gbps"] == 191.752
    assert r["ranks"] == 16
    assert r["rows"][0]["out_of_place"]["busbw_gbps"] == 191.76


def test_nccl_old_error_column_passing():
    r = parse_nccl_tests(sample("nccl-tests_all_reduce_12xV100_old-error-column.txt"))
    assert r["ok"] is True
    assert r["avg_busbw_gbps"] == 42.5578
    assert r["max_busbw_gbps"] == 123.57
    assert r["check_column"] == "error" and r["has_root_column"] is False
    row = r["rows"][0]
    assert row["redop"] == "sum" and row["root"] is None
    assert row["out_of_place"]["error"] == 2e-07 and row["out_of_place"]["wrong"] is None
    assert row["in_place"]["error"] == 1e-07


def test_nccl_old_all_gather_failed_run():
    r = parse_nccl_tests(sample("nccl-tests_all_gather_12xV100_old-error-column_FAILED.txt"))
    assert r["ok"] is False
    assert r["damaged"] is False  # complete, but a failure
    assert r["out_of_bounds"] == 4
    assert any("4 FAILED" in e for e in r["errors"])
    assert r["avg_busbw_gbps"] == 30.2993
    assert len(r["rows"]) == 31
    assert r["rows"][0]["size_bytes"] == 0 and r["rows"][0]["redop"] is None
    assert r["rows"][-1]["out_of_place"]["error"] == 1.0
    assert r["rows"][-1]["out_of_place"]["time_us"] == 106773.0


VALIDATION_MD_SAMPLE = """\
# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903
# Collective test starting: all_reduce_perf
host-a:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
        1024           256     float     sum      -1     5.45    0.19    0.33      0     5.35    0.19    0.33      0
host-a:1234:1240 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC
     1000000        250000     float     sum      -1    1e+06    0.00    0.00      0    2e+03    0.50    0.87      0   
   133169160      33292290     float     sum      -1   2666.0   49.95   95.74      0   2660.4   50.06   95.94      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 84.8558 
#
# Collective test concluded: all_reduce_perf
"""  # noqa: E501, W291


def test_nccl_noise_g_format_and_trailing_spaces():
    r = parse_nccl_tests(VALIDATION_MD_SAMPLE)
    assert r["ok"] is True, r["errors"]
    assert r["version"] == "2.13.9" and r["collective"] == "all_reduce"
    assert [row["size_bytes"] for row in r["rows"]] == [1024, 1000000, 133169160]
    assert r["rows"][1]["out_of_place"]["time_us"] == 1e6
    assert r["rows"][1]["in_place"]["time_us"] == 2000.0
    assert r["avg_busbw_gbps"] == 84.8558
    assert r["max_busbw_gbps"] == 95.94


def test_nccl_nonzero_wrong_fails_but_is_not_damage():
    text = VALIDATION_MD_SAMPLE.replace(
        "2666.0   49.95   95.74      0", "2666.0   49.95   95.74     17"
    )
    r = parse_nccl_tests(text)
    assert r["ok"] is False and r["damaged"] is False
    assert r["rows"][2]["out_of_place"]["wrong"] == 17
    assert any("17 wrong values" in e and "133169160" in e for e in r["errors"])


@pytest.mark.parametrize(
    ("label", "mutate"),
    [
        ("no avg line", lambda t: t.split("# Avg bus")[0]),
        ("no out-of-bounds line", lambda t: t.replace("# Out of bounds values : 0 OK\n", "")),
        ("cut mid-row", lambda t: t[: t.index("2660.4")]),
        ("cut before the table", lambda t: t.split("#       size")[0]),
        ("header only", lambda t: t.split("        1024")[0]),
        ("nan average", lambda t: t.replace("84.8558", "nan")),
        ("+inf busbw", lambda t: t.replace("95.74", "+inf")),
        ("inf busbw", lambda t: t.replace("95.74", "inf")),
        ("-nan busbw", lambda t: t.replace("95.74", "-nan")),
        ("garbled number", lambda t: t.replace("95.74", "9x.74")),
        ("garbage", lambda t: "Segmentation fault (core dumped)\n" * 3),
        ("empty", lambda t: ""),
        ("whitespace", lambda t: "   \n\n"),
    ],
)
def test_nccl_damaged_inputs(label, mutate):
    r = parse_nccl_tests(mutate(VALIDATION_MD_SAMPLE))
    assert r["ok"] is False, label
    assert r["damaged"] is True, label
    assert r["errors"], label


def test_nccl_truncated_real_sample_is_damaged():
    text = sample("nccl-tests_all_reduce_16xH100_2node.txt")
    r = parse_nccl_tests(text[: len(text) // 2])
    assert r["damaged"] is True and r["ok"] is False


def test_parsers_never_raise_on_odd_input():
    for parser in (
        parse_nccl_tests,
        parse_dcgmi,
        parse_nvidia_smi_csv,
        parse_nvbandwidth,
        parse_ib_write_bw,
        parse_ibstat,
    ):
        for bad in (None, b"bytes", 42, "\x00\x01\x02", "{", "| x |", "+---"):
            r = parser(bad)
            assert r["ok"] is False and r["damaged"] is True, (parser, bad)


# ------------------------------------------------------------------------- dcgmi diag


def test_dcgmi_json_dcgm3_with_preamble():
    r = parse_dcgmi(sample("dcgmi_diag_json_8gpu_dcgm3.1.0_nvvs.txt"))
    assert r["ok"] is True and r["damaged"] is False
    assert r["version"] == "3.1.0"
    assert len(r["results"]) == 9 + 8
    denylist = r["results"][0]
    assert denylist["test"] == "Denylist" and denylist["category"] == "Deployment"
    assert denylist["gpu"] is None and denylist["gpus"] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert denylist["result"] == "pass"
    software = [x for x in r["results"] if x["test"] == "software"]
    assert [x["gpu"] for x in software] == list(range(8))
    assert r["failed"] == r["skipped"] == r["warned"] == []


def _dcgm_json(results: list[dict], top: str = "DCGM GPU Diagnostic") -> str:
    return "Some banner text\n" + json.dumps(
        {
            top: {
                "test_categories": [
                    {
                        "category": "Hardware",
                        "tests": [{"name": "Memory Bandwidth", "results": results}],
                    }
                ],
                "version": "3.3.7",
            }
        }
    )


def test_dcgmi_json_fail_skip_and_case():
    r = parse_dcgmi(
        _dcgm_json(
            [
                {"gpu_id": "0", "status": "pass"},
                {"gpu_id": "1", "status": "Fail", "warnings": [{"warning": "bandwidth low"}]},
                {"gpu_id": "2", "status": "SKIP"},
            ]
        )
    )
    assert r["damaged"] is False
    assert r["ok"] is False
    assert [x["result"] for x in r["results"]] == ["pass", "fail", "skip"]
    assert r["results"][1]["gpu"] == 1 and r["results"][1]["details"] == ["bandwidth low"]
    assert r["failed"] == ["Memory Bandwidth (GPU 1)"]
    assert r["skipped"] == ["Memory Bandwidth (GPU 2)"]


def test_dcgmi_json_skip_alone_is_ok_but_listed():
    r = parse_dcgmi(_dcgm_json([{"gpu_id": 0, "status": "Pass"}, {"gpu_id": 1, "status": "Skip"}]))
    assert r["ok"] is True
    assert r["skipped"] == ["Memory Bandwidth (GPU 1)"]


def test_dcgmi_json_dcgm4_entity_shape():
    text = json.dumps(
        {
            "DCGM Diagnostic": {
                "test_categories": [
                    {
                        "category": "Deployment",
                        "tests": [
                            {
                                "name": "software",
                                "results": [
                                    {
                                        "entity_group": "GPU",
                                        "entity_group_id": 1,
                                        "entity_id": 0,
                                        "status": "Pass",
                                    },
                                    {
                                        "entity_group": "GPU",
                                        "entity_group_id": 1,
                                        "entity_id": 1,
                                        "status": "Warn",
                                    },
                                ],
                            }
                        ],
                    }
                ]
            },
            "metadata": {"DCGM Version": "4.1.1", "Driver Version Detected": "570.86.15"},
        }
    )
    r = parse_dcgmi(text)
    assert r["ok"] is True
    assert r["version"] == "4.1.1" and r["driver_version"] == "570.86.15"
    assert [(x["gpu"], x["result"]) for x in r["results"]] == [(0, "pass"), (1, "warn")]
    assert r["warned"] == ["software (GPU 1)"]


def test_dcgmi_json_truncated_is_damaged():
    text = sample("dcgmi_diag_json_8gpu_dcgm3.1.0_nvvs.txt")
    r = parse_dcgmi(text[: len(text) // 2])
    assert r["damaged"] is True and r["ok"] is False


def test_dcgmi_json_without_results_is_damaged():
    r = parse_dcgmi(_dcgm_json([]))
    assert r["damaged"] is True and r["ok"] is False


def test_dcgmi_table_r1():
    r = parse_dcgmi(sample("dcgmi_diag_r1_1xV100_dcgm3.3.9.txt"))
    assert r["ok"] is True
    assert r["version"] == "3.3.9" and r["driver_version"] == "560.35.03"
    assert [x["test"] for x in r["results"]] == [
        "Denylist",
        "NVML Library",
        "CUDA Main Library",
        "Permissions and OS Blocks",
        "Persistence Mode",
        "Environment Variables",
        "Page Retirement/Row Remap",
        "Graphics Processes",
        "Inforom",
    ]
    assert {x["result"] for x in r["results"]} == {"pass"}
    assert {x["category"] for x in r["results"]} == {"Deployment"}


def test_dcgmi_table_r3_verbose_wrapped_info_and_skip():
    r = parse_dcgmi(sample("dcgmi_diag_r3_verbose_1xV100_dcgm3.3.9.txt"))
    assert r["ok"] is True and r["damaged"] is False
    assert len(r["results"]) == 16
    by_test = {x["test"]: x for x in r["results"]}
    assert by_test["PCIe"]["category"] == "Integration"
    assert by_test["PCIe"]["details"] == [
        "GPU 0 GPU to Host bandwidth:  13.14 GB/s, GPU 0 Host to GPU bandwidth:  12.37 GB/s, "
        "GPU 0 bidirectional bandwidth: 22.42 GB/s, GPU 0 GPU to Host latency:  2.028 us, "
        "GPU 0 Host to GPU latency:  2.127 us, GPU 0 bidirectional latency:  3.865 us"
    ]
    assert by_test["Targeted Power"]["details"] == [
        "GPU 0 GPU 0 max power: 251.0 W average power usage: 247.8 W"
    ]
    assert "21688.18 gigaflops" in by_test["Diagnostic"]["details"][0]
    assert by_test["Diagnostic"]["category"] == "Hardware"
    assert by_test["EUD Test"]["result"] == "skip" and by_test["EUD Test"]["category"] == "Stress"
    assert r["skipped"] == ["EUD Test"]


def test_dcgmi_table_per_gpu_fail():
    text = sample("dcgmi_diag_r3_verbose_1xV100_dcgm3.3.9.txt").replace(
        "| Memory Bandwidth          | Pass - All                                     |",
        "| Memory Bandwidth          | Pass - GPUs: 1, 2                              |\n"
        "|                           | Fail - GPU: 0                                  |",
    )
    r = parse_dcgmi(text)
    assert r["ok"] is False and r["damaged"] is False
    mem = [x for x in r["results"] if x["test"] == "Memory Bandwidth"]
    assert [(x["gpus"], x["result"]) for x in mem] == [([1, 2], "pass"), ([0], "fail")]
    assert r["failed"] == ["Memory Bandwidth (GPU 0)"]


def test_dcgmi_table_truncated_is_damaged():
    lines = sample("dcgmi_diag_r3_verbose_1xV100_dcgm3.3.9.txt").splitlines()
    r = parse_dcgmi("\n".join(lines[:-1]))  # closing border missing
    assert r["damaged"] is True and r["ok"] is False
    r = parse_dcgmi("\n".join(lines[:20]) + "\n| Info                      | GPU 0 GPU to Ho")
    assert r["damaged"] is True


def test_dcgmi_error_message_is_damaged():
    r = parse_dcgmi("Error: Unable to connect to host engine. Host engine connection invalid.")
    assert r["damaged"] is True and r["ok"] is False


# --------------------------------------------------------------------- nvidia-smi csv


def test_nvidia_smi_csv_8xh200():
    r = parse_nvidia_smi_csv(sample("nvidia-smi_query-gpu_csv_8xH200.txt"))
    assert r["ok"] is True
    assert r["gpu_count"] == 8
    assert r["rows"][0] == {
        "name": "NVIDIA H200",
        "memory_total_mib": 143771,
        "pcie_link_gen_max": 5,
        "pcie_link_width_max": 16,
    }
    assert r["fields"][1] == {"name": "memory.total", "unit": "MiB", "key": "memory_total_mib"}


def test_nvidia_smi_csv_na_units_and_strings():
    text = (
        "index, name, pci.bus_id, driver_version, power.draw [W], utilization.gpu [%], "
        "ecc.errors.uncorrected.volatile.sram, clocks.max.sm [MHz]\n"
        "0, NVIDIA A100-SXM4-80GB, 00000000:07:00.0, 535.104.05, 75.50 W, 0 %, 0, 1410 MHz\n"
        "1, NVIDIA A100-SXM4-80GB, 00000000:0B:00.0, 535.104.05, [N/A], [Not Supported], "
        "[N/A], 1410 MHz\n"
    )
    r = parse_nvidia_smi_csv(text)
    assert r["ok"] is True and r["gpu_count"] == 2
    row0, row1 = r["rows"]
    assert row0["power_draw_w"] == 75.5
    assert row0["utilization_gpu_pct"] == 0
    assert row0["clocks_max_sm_mhz"] == 1410
    assert row0["pci_bus_id"] == "00000000:07:00.0"
    assert row0["driver_version"] == "535.104.05"
    assert row0["ecc_errors_uncorrected_volatile_sram"] == 0
    assert row1["power_draw_w"] is None and row1["utilization_gpu_pct"] is None


@pytest.mark.parametrize(
    "text",
    [
        "No devices were found\n",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        "name, memory.total [MiB]\n",
        "name, memory.total [MiB]\nNVIDIA H200\n",
        "NVIDIA H200, 143771 MiB\n",
    ],
)
def test_nvidia_smi_csv_damaged(text):
    r = parse_nvidia_smi_csv(text)
    assert r["damaged"] is True and r["ok"] is False


# ------------------------------------------------------------------------- nvbandwidth


def test_nvbandwidth_v02_all_tests():
    r = parse_nvbandwidth(sample("nvbandwidth_all_8xH800_v0.2.txt"))
    assert r["ok"] is True
    assert r["version"] == "v0.2"
    assert r["cuda_runtime_version"] == 11080
    assert r["driver_version"] == "525.105.17"
    assert len(r["devices"]) == 8 and r["devices"]["7"] == "NVIDIA H800"
    assert len(r["tests"]) == 30
    h2d = r["tests"]["host_to_device_memcpy_ce"]
    assert h2d["sum"] == 442.52
    assert h2d["unit"] == "GB/s"
    assert h2d["matrix"] == [[55.28, 55.30, 55.32, 55.30, 55.31, 55.34, 55.32, 55.34]]
    assert h2d["min"] == 55.28 and h2d["max"] == 55.34
    d2d = r["tests"]["device_to_device_memcpy_read_ce"]
    assert d2d["sum"] == 9643.22
    assert len(d2d["matrix"]) == 8 and d2d["matrix"][0][0] is None and d2d["matrix"][7][7] is None
    assert d2d["matrix"][0][1] == 172.16
    assert d2d["min"] == 171.88 and d2d["max"] == 172.57
    assert r["tests"]["one_to_all_read_sm"]["sum"] == 1222.39
    assert r["tests"]["device_to_device_bidirectional_memcpy_write_sm"]["sum"] == 18341.61


def test_nvbandwidth_v05_single_gpu():
    r = parse_nvbandwidth(sample("nvbandwidth_host_to_device_memcpy_ce_1xA10_v0.5.txt"))
    assert r["ok"] is True
    assert r["version"] == "v0.5"
    assert r["devices"] == {"0": "NVIDIA A10"}
    assert r["tests"]["host_to_device_memcpy_ce"]["matrix"] == [[25.17]]
    assert r["tests"]["host_to_device_memcpy_ce"]["sum"] == 25.17


def test_nvbandwidth_waived_test():
    text = sample("nvbandwidth_host_to_device_memcpy_ce_1xA10_v0.5.txt") + (
        "\nRunning device_to_device_memcpy_read_ce.\nWaived.\n"
    )
    r = parse_nvbandwidth(text)
    assert r["ok"] is True
    assert r["waived"] == ["device_to_device_memcpy_read_ce"]


@pytest.mark.parametrize(
    ("label", "mutate"),
    [
        ("last SUM missing", lambda t: t.rsplit("SUM one_to_all_read_sm", 1)[0]),
        (
            "cut mid-matrix",
            lambda t: (
                t[: t.index("Running device_to_device_memcpy_write_ce")]
                + "Running device_to_device_memcpy_write_ce.\n          0         1\n0       N/A"
            ),
        ),
        (
            "SUM garbled",
            lambda t: t.replace(
                "SUM host_to_device_memcpy_ce 442.52", "SUM host_to_device_memcpy_ce 942.52"
            ),
        ),
        ("no tests", lambda t: t.split("Running")[0]),
        ("garbage", lambda t: "CUDA error: no CUDA-capable device is detected\n"),
    ],
)
def test_nvbandwidth_damaged(label, mutate):
    r = parse_nvbandwidth(mutate(sample("nvbandwidth_all_8xH800_v0.2.txt")))
    assert r["damaged"] is True and r["ok"] is False, label


# ------------------------------------------------------------------------ ibstat

IBSTAT = "ibstat_8xH100_8ib_1eth-bond_gpud.txt"


def test_ibstat_8xh100_eight_infiniband_cas_and_an_ethernet_bond():
    r = parse_ibstat(sample(IBSTAT))
    assert r["ok"] is True
    names = [d["name"] for d in r["devices"]]
    assert names == [f"mlx5_{i}" for i in (0, 1, 4, 5, 6, 7, 8, 9)] + ["mlx5_bond_0"]
    assert [d["link_layer"] for d in r["devices"]] == ["InfiniBand"] * 8 + ["Ethernet"]
    bond = r["devices"][-1]
    assert bond["ca_type"] == "MT41692" and bond["ports"] == [
        {"port": 1, "state": "Active", "rate": "200", "link_layer": "Ethernet"}
    ]
    assert r["devices"][0]["ca_type"] == "MT4129" and r["devices"][0]["ports"][0]["rate"] == "400"


def test_ibstat_with_tabs_as_ibstat_prints_them_and_the_sysfs_fallback():
    tabs = sample(IBSTAT).replace(" " * 16, "\t\t").replace(" " * 8, "\t")
    assert [d["link_layer"] for d in parse_ibstat(tabs)["devices"]][-2:] == [
        "InfiniBand",
        "Ethernet",
    ]
    sysfs = (
        "/sys/class/infiniband/mlx5_0/ports/1/link_layer:InfiniBand\n"
        "/sys/class/infiniband/mlx5_bond_0/ports/1/link_layer:Ethernet\n"
    )
    r = parse_ibstat(sysfs)
    assert r["ok"] and [(d["name"], d["link_layer"]) for d in r["devices"]] == [
        ("mlx5_0", "InfiniBand"),
        ("mlx5_bond_0", "Ethernet"),
    ]


@pytest.mark.parametrize(
    ("label", "mutate"),
    [
        ("cut before the last link layer", lambda t: t.rsplit("Link layer", 1)[0]),
        ("cut after a CA line", lambda t: t.split("CA type: MT41692")[0]),
        ("unknown link layer", lambda t: t.replace("Link layer: Ethernet", "Link layer: ???")),
        ("an error instead", lambda t: "ibpanic: [12] main: stat of IB device 'mlx5_0' failed\n"),
    ],
)
def test_ibstat_damaged(label, mutate):
    r = parse_ibstat(mutate(sample(IBSTAT)))
    assert r["damaged"] is True and r["ok"] is False, label


# ------------------------------------------------------------------------ ib_write_bw


def test_ib_write_bw_ndr():
    r = parse_ib_write_bw(sample("ib_write_bw_NDR400_mlx5_0.txt"))
    assert r["ok"] is True
    assert r["bw_peak_gbps"] == 392.38
    assert r["bw_avg_gbps"] == 392.34
    assert r["msg_rate_mpps"] == 0.748336
    assert r["device"] == "mlx5_0" and r["link_type"] == "IB"
    assert r["rows"] == [
        {
            "bytes": 65536,
            "iterations": 5000,
            "bw_peak_gbps": 392.38,
            "bw_avg_gbps": 392.34,
            "msg_rate_mpps": 0.748336,
        }
    ]


def test_ib_write_bw_mb_per_sec_is_converted():
    text = (
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
        " 65536      5000             46000.00            45000.00           0.720000\n"
        "---------------------------------------------------------------------------------------\n"
    )
    r = parse_ib_write_bw(text)
    assert r["ok"] is True
    assert r["unit_reported"] == "MB/sec"
    assert r["bw_peak_gbps"] == pytest.approx(385.875968)  # 46000 × 2**20 × 8 / 1e9
    assert r["bw_avg_gbps"] == pytest.approx(377.48736)


@pytest.mark.parametrize(
    ("label", "mutate"),
    [
        ("closing line missing", lambda t: t.rstrip().rsplit("\n", 1)[0]),
        ("no result row", lambda t: t.split(" 65536      5000")[0]),
        ("garbled row", lambda t: t.replace("392.34", "392.3x")),
        ("connection error", lambda t: "Couldn't connect to 10.0.0.2:18515\nUnable to init\n"),
    ],
)
def test_ib_write_bw_damaged(label, mutate):
    r = parse_ib_write_bw(mutate(sample("ib_write_bw_NDR400_mlx5_0.txt")))
    assert r["damaged"] is True and r["ok"] is False, label


# -------------------------------------------------------------------------------- CLI


def test_cli_ok_exit_0_prints_json():
    proc = run_cli("nccl-tests", str(SAMPLES / "nccl-tests_all_reduce_16xH100_2node.txt"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["avg_busbw_gbps"] == 70.742


def test_cli_failed_run_exit_1():
    proc = run_cli(
        "nccl-tests", str(SAMPLES / "nccl-tests_all_gather_12xV100_old-error-column_FAILED.txt")
    )
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert out["ok"] is False and out["out_of_bounds"] == 4


def test_cli_truncated_exit_2(tmp_path):
    text = sample("nccl-tests_all_reduce_16xH100_2node.txt")
    cut = tmp_path / "cut.txt"
    cut.write_text(text.split("# Out of bounds")[0])
    proc = run_cli("nccl-tests", str(cut))
    assert proc.returncode == 2
    assert b"damaged" in proc.stderr and b"truncated" in proc.stderr


def test_cli_garbage_binary_missing_and_stdin(tmp_path):
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 4)
    assert run_cli("dcgmi", str(garbage)).returncode == 2
    proc = run_cli("ib-write-bw", str(tmp_path / "missing.txt"))
    assert proc.returncode == 2 and b"cannot read" in proc.stderr
    proc = run_cli("nvbandwidth", "-", stdin=b"")
    assert proc.returncode == 2
    stdin = (SAMPLES / "ib_write_bw_NDR400_mlx5_0.txt").read_bytes()
    proc = run_cli("ib-write-bw", "-", stdin=stdin)
    assert proc.returncode == 0 and json.loads(proc.stdout)["bw_avg_gbps"] == 392.34


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("dcgmi", "dcgmi_diag_json_8gpu_dcgm3.1.0_nvvs.txt"),
        ("dcgmi", "dcgmi_diag_r3_verbose_1xV100_dcgm3.3.9.txt"),
        ("nvidia-smi-csv", "nvidia-smi_query-gpu_csv_8xH200.txt"),
        ("nvbandwidth", "nvbandwidth_all_8xH800_v0.2.txt"),
    ],
)
def test_cli_other_kinds(kind, name):
    proc = run_cli(kind, str(SAMPLES / name))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kind"] == kind


def test_cli_wrong_kind_for_file_is_damaged():
    proc = run_cli("nvbandwidth", str(SAMPLES / "nccl-tests_all_reduce_16xH100_2node.txt"))
    assert proc.returncode == 2


def test_validation_package_imports_no_django():
    code = (
        "import sys, provisioning.validation.parsers, provisioning.validation.rules,"
        " provisioning.validation.evaluation, provisioning.validation.default_rules;"
        "bad = [m for m in sys.modules if m.split('.')[0] == 'django'];"
        "assert not bad, bad"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=clean_env(), capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
