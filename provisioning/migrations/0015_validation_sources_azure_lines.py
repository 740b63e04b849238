"""Issue 19: the sources of the nvbandwidth, NVLink all-reduce, IB loopback and fabric NIC
rules quote the Azure azurehpc-health-checks files and lines (commit 0e0a1ac); the V100S
host-copy figure follows conf/nc6s_v3.conf (1× V100 PCIe, `check_gpu_bw 10`) instead of
the 8× V100 SXM2 conf (9); the NIC count counts InfiniBand link-layer devices only. Rows
staff edited keep their edits (``seeding.update_unedited``)."""

from typing import Any

from django.db import migrations

from provisioning.validation.default_rules import DEFAULT_RULES
from provisioning.validation.seeding import update_unedited

#: The previous seed's source texts (as 0007/0012 stored them), by the rule metrics that
#: carried them.
OLD_SOURCES = {
    ("h2d_bandwidth_gbps", "d2h_bandwidth_gbps", "p2p_bandwidth_gbps"): (
        "nvbandwidth host_to_device/device_to_host_memcpy_ce per GPU, device_to_device_"
        "memcpy_read_ce per pair: Azure azurehpc-health-checks azure_gpu_bandwidth.nhc with "
        "conf/nd96isr_h100_v5.conf and nd96isr_h200_v5.conf `check_gpu_bw 48 335`, "
        "nd96asr_v4.conf (A100 40G) `21 235`, nd96amsr_a100_v4.conf (A100 80G) `21 238`, "
        "nd40rs_v2.conf (V100) `9`; RTX 3090 24 (GUESS: PCIe 4.0 x16); no GPU > 5% below "
        "the node median (SuperBench)"
    ),
    ("allreduce_busbw_gbps",): (
        "NVLink all-reduce: `all_reduce_perf -b S -e S -g N -c 1`, busbw at the size the "
        "rows show (lower of in-place and out-of-place); Azure azurehpc-health-checks conf: "
        "nd96isr_h100_v5 460 at 16G, nd96isr_h200_v5 431 at 16G, nd96amsr_a100_v4 (A100 "
        "80G) 228 at 16G, nd96asr_v4 (A100 40G) 228 at 8G; all 8-GPU figures"
    ),
    ("ib_write_bw_gbps",): (
        "IB GPUDirect loopback per NIC: `ib_write_bw -s 1M -x 0 -F --report_gbits "
        "--use_cuda` server and client on the device (Azure azurehpc-health-checks "
        "azure_ib_write_bw_gdr.nhc); conf nd96isr_h100_v5 `check_ib_bw_gdr 380`, "
        "nd96isr_h200_v5 `360`, nd96asr_v4 and nd96amsr_a100_v4 `180`"
    ),
    ("ib_nic_count",): (
        "Fabric NICs: the RDMA devices measured by ib_write_bw (`ibstat -l`) at least the "
        "node type's NIC count; a NIC that is missing (not cabled, not enumerated, driver "
        "down) is never measured, so the per-NIC figure alone cannot catch it (Azure "
        "azurehpc-health-checks azure_ib_write_bw_gdr.nhc tests only the devices it "
        "finds); more devices (a front-end or storage NIC) pass"
    ),
}


def previous_seed() -> list[tuple[Any, dict[str, Any]]]:
    out = []
    for rule in DEFAULT_RULES:
        for metrics, source in OLD_SOURCES.items():
            if rule.metric not in metrics or (
                rule.metric == "allreduce_busbw_gbps" and "GUESS" in rule.source
            ):
                continue
            old: dict[str, Any] = {"source": source}
            if rule.gpu_model == "V100S" and rule.metric in ("h2d_bandwidth_gbps", "d2h_bandwidth_gbps"):
                old["min_value"] = 9
            out.append((rule, old))
    return out


def update(apps: Any, schema_editor: Any) -> None:
    update_unedited(
        apps.get_model("provisioning", "ValidationRule"),
        previous_seed(),
        using=schema_editor.connection.alias,
    )


class Migration(migrations.Migration):
    dependencies = [("provisioning", "0014_merge_burn_in_and_live_checks")]

    operations = [migrations.RunPython(update, migrations.RunPython.noop)]
