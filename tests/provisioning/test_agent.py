"""The node agent, run for real as a subprocess on this (CPU-only) machine."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from provisioning.agent.__main__ import parse_size, parse_sizes
from provisioning.validation.evaluation import evaluate_node
from provisioning.validation.interface import fold_lines, measurement_from_report

REPO = Path(__file__).resolve().parents[2]
GPU_ONLY = {
    "gpu_inventory",
    "nvbandwidth",
    "dcgm_diag",
    "nvlink",
    "xid",
    "ecc",
    "ecc_remap",
    "ib_write_bw",
}
CPU_CHECKS = {
    "gemm": ("gemm_gflops_cpu", "GFLOPS"),
    "memory_bandwidth": ("memcopy_bandwidth_gbps_cpu", "GB/s"),
    "allreduce": ("allreduce_busbw_gbps_cpu", "GB/s"),
}
CHECK_KEYS = {
    "type",
    "raw_sha256",
    "name",
    "device",
    "status",
    "metric",
    "unit",
    "value",
    "raw",
    "raw_format",
    "return_code",
    "reason",
    "duration_s",
    "details",
}


def clean_env(tmp_path: Path) -> dict[str, str]:
    # No DJANGO_SETTINGS_MODULE, no PYTHONPATH, no GPU tools on PATH.
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}


def run_agent(args: list[str], cwd: Path, env: dict[str, str], module: str = "provisioning.agent"):
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("agent")
    proc = run_agent(["--profile", "quick"], REPO, clean_env(tmp))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]  # JSON Lines, nothing else
    checks = (len(lines) - 2) // 2  # each check announced as it starts, then its result
    assert [line["type"] for line in lines] == ["start", *["check_start", "check"] * checks, "end"]
    assert [ln["name"] for ln in lines if ln["type"] == "check_start"] == lines[0]["planned"]
    return fold_lines(proc.stdout)


def test_report_shape_and_host_facts(quick_report):
    assert quick_report["profile"] == "quick"
    assert quick_report["agent_version"]
    host = quick_report["host"]
    assert host["device"] == "cpu"
    assert host["hostname"]
    assert host["gpu_count"] == 0 and host["gpu_model"] is None
    assert isinstance(host["cpu_count"], int) and host["cpu_count"] >= 1
    assert isinstance(host["nics"], list) and isinstance(host["infiniband"], list)
    assert all("speed_mbps" in nic for nic in host["nics"])
    names = [c["name"] for c in quick_report["checks"]]
    assert len(names) == len(set(names))
    assert set(names) == GPU_ONLY | set(CPU_CHECKS)
    for check in quick_report["checks"]:
        assert set(check) == CHECK_KEYS
        assert check["status"] in ("completed", "failed", "skipped")
        assert isinstance(check["duration_s"], int | float) and check["duration_s"] >= 0


def test_cpu_checks_completed_with_real_positive_values(quick_report):
    checks = {c["name"]: c for c in quick_report["checks"]}
    for name, (metric, unit) in CPU_CHECKS.items():
        c = checks[name]
        assert c["status"] == "completed", (name, c["reason"], c["raw"])
        assert c["device"] == "cpu"
        assert c["metric"] == metric and c["unit"] == unit
        assert isinstance(c["value"], float) and c["value"] > 0
        assert c["return_code"] == 0
        assert c["raw"]
    assert checks["gemm"]["details"]["n"] == 1024
    ar = checks["allreduce"]["details"]
    assert ar["backend"] in ("numpy-ring", "torch-gloo")
    assert ar["ranks"] >= 2 and ar["correct"] is True
    # busbw = algbw × 2(n−1)/n
    n = ar["ranks"]
    assert ar["busbw_gbps"] == pytest.approx(ar["algbw_gbps"] * 2 * (n - 1) / n)
    assert checks["allreduce"]["value"] == pytest.approx(ar["busbw_gbps"], abs=1e-3)


def test_gpu_only_checks_skipped_with_reason(quick_report):
    for c in quick_report["checks"]:
        if c["name"] in GPU_ONLY:
            assert c["status"] == "skipped", c
            assert c["reason"], c
            assert c["value"] is None


def test_portal_rules_accept_this_cpu_run(quick_report):
    """The CPU profile accepts a real agent run, and fails it when a check is dropped."""

    def measurement(drop: str | None = None):
        kept = {**quick_report, "checks": [c for c in quick_report["checks"] if c["name"] != drop]}
        return measurement_from_report(kept, node="n1", gpu_model="cpu")

    assert evaluate_node(measurement()).accepted is True
    dropped = evaluate_node(measurement(drop="allreduce"))
    assert dropped.accepted is False
    assert [r.code for r in dropped.reasons] == ["missing_metric"]


def test_agent_travels_alone(tmp_path):
    """Copied without the rest of the repository, under another name, it still runs."""
    shutil.copytree(
        REPO / "provisioning" / "agent",
        tmp_path / "nodeagent",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    proc = run_agent(
        ["--only", "gemm,allreduce,xid", "--sizes", "gemm=256", "allreduce=1M"],
        tmp_path,
        clean_env(tmp_path),
        module="nodeagent",
    )
    assert proc.returncode == 0, proc.stderr
    report = fold_lines(proc.stdout)
    assert report["complete"] is True
    checks = {c["name"]: c for c in report["checks"]}
    assert set(checks) == {"gemm", "allreduce", "xid"}
    assert checks["gemm"]["status"] == "completed" and checks["gemm"]["details"]["n"] == 256
    assert checks["allreduce"]["status"] == "completed"
    assert checks["allreduce"]["details"]["bytes"] == 1024 * 1024
    assert checks["xid"]["status"] == "skipped"


AGENT_IMPORTS = """
import contextlib, io, runpy, sys
sys.argv = ["agent", "--only", "gemm", "--sizes", "gemm=64"]
try:
    with contextlib.redirect_stdout(io.StringIO()):
        runpy.run_module("provisioning.agent", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    assert exc.code == 0, exc.code
bad = [m for m in sys.modules if m.split(".")[0] in ("django", "portal", "core")
       or m.startswith("provisioning.validation")]
assert not bad, bad
assert "provisioning.agent.checks" in sys.modules
print("clean")
"""


def test_agent_imports_nothing_from_django_or_the_portal(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", AGENT_IMPORTS],
        cwd=REPO,
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "clean"


def test_a_failing_check_is_reported_not_crashing(tmp_path):
    # --device cuda on a machine without GPU or torch: the GPU measurements must fail
    # with a reason, the agent must still print its document.
    proc = run_agent(
        ["--device", "cuda", "--only", "gemm,memory_bandwidth,nvlink"], REPO, clean_env(tmp_path)
    )
    assert proc.returncode == 0, proc.stderr
    checks = {c["name"]: c for c in fold_lines(proc.stdout)["checks"]}
    assert checks["gemm"]["status"] == "failed"
    assert "torch" in checks["gemm"]["reason"]
    assert checks["gemm"]["return_code"] == 1
    assert checks["memory_bandwidth"]["status"] == "failed"
    # a missing tool fails the check (never a silent skip)
    assert checks["nvlink"]["status"] == "failed"
    assert checks["nvlink"]["details"]["reason_code"] == "tool_missing"
    assert "nvidia-smi" in checks["nvlink"]["reason"]


def test_bad_arguments_exit_nonzero(tmp_path):
    proc = run_agent(["--only", "nonsense"], REPO, clean_env(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""
    proc = run_agent(["--sizes", "gemm"], REPO, clean_env(tmp_path))
    assert proc.returncode == 2


def test_size_parsing():
    assert parse_size("1024") == 1024
    assert parse_size("64M") == 64 * 1024**2
    assert parse_size("16G") == 16 * 1024**3
    assert parse_size("2KiB") == 2048
    assert parse_sizes(["gemm=512", "copy=1G"]) == {"gemm_n": 512, "copy_bytes": 1024**3}
