"""The cluster checks on GPU nodes (no Django here): multi-node all-reduce with
``NCCL_ALGO=RING`` across all nodes, and scaling efficiency = throughput(2N) /
(2 × throughput(N)) of the all-reduce, recorded as ``allreduce_throughput_scaling``
(informational: not VALIDATION.md's scaling efficiency, see ``cluster_measurement``).

nccl-tests' ``all_reduce_perf`` is started by ``mpirun`` (Open MPI, one rank per GPU,
``-g 1``) from the first node, which reaches the others the way MPI jobs do on these
images. The commands are planned here, run by a ``CommandRunner`` (over SSH in
production) and their output read by the nccl-tests parser; whatever goes wrong (the
command did not start, timed out, exited non-zero, printed something the parser refuses,
a ``#wrong`` value) is a failed check with its reason, so the cluster is not accepted.

Plan for M nodes of G GPUs: ``all`` runs on the M nodes (the ring bus bandwidth the
rules judge); the scaling pair is N = ⌊M/2⌋ nodes and 2N = 2⌊M/2⌋ nodes (the ``all``
run itself when M is even). Throughput = bus bandwidth × ranks at one fixed message
size, as on the CPU path (``interface.local_cluster_measurement``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from provisioning.validation.parsers import ParseError, parse_nccl_tests
from provisioning.validation.rules import CheckOutcome, Measurement

#: Bandwidth-bound. With data checking nccl-tests needs 3 × size + 1 GiB of GPU memory:
#: 8 GiB fits 32 GB+ cards; ``interface.cluster_message_bytes`` shrinks it for smaller.
DEFAULT_MESSAGE_BYTES = 8 * 1024**3


@dataclass
class CommandResult:
    """What one command on a node gave back."""

    exit_status: int | None
    stdout: str
    stderr: str = ""
    timed_out: bool = False


# Runs ``argv`` on the given host (name or address) within ``timeout_s``.
CommandRunner = Callable[[str, Sequence[str], float], CommandResult]


@dataclass(frozen=True)
class ClusterCommand:
    name: str  # cluster_allreduce_all | cluster_allreduce_n | cluster_allreduce_2n
    hosts: tuple[str, ...]
    gpus_per_node: int
    argv: tuple[str, ...]

    @property
    def ranks(self) -> int:
        return len(self.hosts) * self.gpus_per_node


def allreduce_argv(
    hosts: Sequence[str],
    gpus_per_node: int,
    *,
    message_bytes: int = DEFAULT_MESSAGE_BYTES,
    mpirun: str = "mpirun",
    binary: str = "all_reduce_perf",
    warmup: int = 5,
    iters: int = 20,
    allow_run_as_root: bool = True,
) -> list[str]:
    """``mpirun`` line for ``all_reduce_perf`` on ``hosts`` with ``NCCL_ALGO=RING``, one
    rank per GPU, a single message size (``-b`` = ``-e``), data checked (``-c 1``)."""
    if not hosts or gpus_per_node < 1:
        raise ValueError("an all-reduce needs at least one host with a GPU")
    argv = [mpirun]
    if allow_run_as_root:
        argv.append("--allow-run-as-root")
    argv += [
        "-np",
        str(len(hosts) * gpus_per_node),
        "-H",
        ",".join(f"{h}:{gpus_per_node}" for h in hosts),
        "--map-by",
        f"ppr:{gpus_per_node}:node",
        "--bind-to",
        "none",
        "-x",
        "NCCL_ALGO=RING",  # tree/NVLS can exceed the network bound (VALIDATION.md)
        "-x",
        "NCCL_DEBUG=WARN",
        "-x",
        "PATH",
        "-x",
        "LD_LIBRARY_PATH",
        binary,
        "-b",
        str(message_bytes),
        "-e",
        str(message_bytes),
        "-f",
        "2",
        "-g",
        "1",
        "-c",
        "1",
        "-w",
        str(warmup),
        "-n",
        str(iters),
    ]
    return argv


def cluster_plan(
    hosts: Sequence[str], gpus_per_node: int, *, allow_run_as_root: bool = True, **kw: Any
) -> list[ClusterCommand]:
    """The commands for ``hosts`` (at least two): ``all`` and the scaling pair."""
    if len(hosts) < 2:
        raise ValueError("the cluster checks need at least two nodes")
    half = len(hosts) // 2

    def command(name: str, chosen: Sequence[str]) -> ClusterCommand:
        argv = allreduce_argv(chosen, gpus_per_node, allow_run_as_root=allow_run_as_root, **kw)
        return ClusterCommand(name, tuple(chosen), gpus_per_node, tuple(argv))

    plan = [command("cluster_allreduce_all", hosts), command("cluster_allreduce_n", hosts[:half])]
    if 2 * half != len(hosts):
        plan.append(command("cluster_allreduce_2n", hosts[: 2 * half]))
    return plan


@dataclass
class ClusterRun:
    """One planned command with what it gave and what the parser made of it."""

    command: ClusterCommand
    result: CommandResult | None
    parsed: dict[str, Any] | None = None
    check: CheckOutcome | None = None
    busbw_gbps: float | None = None
    message_bytes: int | None = None
    curve: list[list[float]] = field(default_factory=list)

    @property
    def raw(self) -> str:
        if self.result is None:
            return ""
        return self.result.stdout + (
            f"\n[stderr]\n{self.result.stderr}" if self.result.stderr.strip() else ""
        )


def judge_output(
    command: ClusterCommand, result: CommandResult | None, error: str = ""
) -> ClusterRun:
    """Read one command's output: the bus bandwidth at the largest message size run
    (out-of-place), or a failed check with the reason."""
    run = ClusterRun(command, result)
    if result is None:
        run.check = CheckOutcome(command.name, "failed", None, error or "did not run")
        return run
    if result.timed_out:
        run.check = CheckOutcome(command.name, "failed", result.exit_status, "timed out")
        return run
    try:
        parsed = parse_nccl_tests(result.stdout)
    except ParseError as exc:
        run.check = CheckOutcome(
            command.name, "failed", result.exit_status, "", parse_error=str(exc)
        )
        return run
    run.parsed = parsed
    if result.exit_status != 0:
        run.check = CheckOutcome(command.name, "failed", result.exit_status, "exited non-zero")
        return run
    if not parsed.get("ok"):
        reason = "; ".join(parsed.get("errors") or []) or "nccl-tests reported an error"
        run.check = CheckOutcome(command.name, "failed", result.exit_status, reason)
        return run
    ranks = parsed.get("ranks")
    if ranks is not None and ranks != command.ranks:
        run.check = CheckOutcome(
            command.name,
            "failed",
            result.exit_status,
            f"{ranks} ranks ran, {command.ranks} were asked for",
        )
        return run
    rows = [r for r in parsed.get("rows", []) if r.get("size_bytes")]
    if not rows:
        run.check = CheckOutcome(command.name, "failed", result.exit_status, "no result rows")
        return run
    largest = max(rows, key=lambda r: r["size_bytes"])
    run.busbw_gbps = float(largest["out_of_place"]["busbw_gbps"])
    run.message_bytes = int(largest["size_bytes"])
    run.curve = [[float(r["size_bytes"]), float(r["out_of_place"]["busbw_gbps"])] for r in rows]
    run.check = CheckOutcome(command.name, "completed", result.exit_status, "")
    return run


def cluster_measurement(
    runs: Sequence[ClusterRun],
    *,
    gpu_model: str,
    fabric: str | None,
    expected: Mapping[str, Any],
) -> Measurement:
    """The rules' view of the cluster runs: ``cluster_allreduce_ring_busbw_gbps`` from
    ``all``, and ``allreduce_throughput_scaling`` (aggregate all-reduce throughput at 2N
    over twice that at N; informational: a ratio of two all-reduce bandwidths is not the
    scaling efficiency of VALIDATION.md, which times a fixed training step at N and 2N
    nodes, both crossing the network; no such step is run yet)."""
    by_name = {r.command.name: r for r in runs}
    full = by_name.get("cluster_allreduce_all")
    small = by_name.get("cluster_allreduce_n")
    large = by_name.get("cluster_allreduce_2n") or full
    metrics: dict[str, Any] = {}
    if full is not None and full.busbw_gbps is not None:
        metrics["cluster_allreduce_ring_busbw_gbps"] = full.busbw_gbps
        metrics["cluster_allreduce_curve"] = full.curve  # for the report's chart
        metrics["cluster_message_size_bytes"] = full.message_bytes
    if (
        small is not None
        and large is not None
        and small.busbw_gbps is not None
        and large.busbw_gbps is not None
        and small.message_bytes == large.message_bytes
    ):
        throughput_n = small.busbw_gbps * small.command.ranks
        throughput_2n = large.busbw_gbps * large.command.ranks
        if throughput_n > 0:
            metrics["allreduce_throughput_scaling"] = throughput_2n / (2 * throughput_n)
        metrics["cluster_ranks_n"] = small.command.ranks
        metrics["cluster_throughput_n_gbps"] = throughput_n
        metrics["cluster_throughput_2n_gbps"] = throughput_2n
    return Measurement(
        node="cluster",
        gpu_model=gpu_model,
        device="cuda",
        fabric=fabric,
        metrics=metrics,
        checks=[r.check for r in runs if r.check is not None],
        expected={k: v for k, v in expected.items() if isinstance(v, int | float)},
    )


def run_cluster_checks(
    launcher: str,
    hosts: Sequence[str],
    gpus_per_node: int,
    runner: CommandRunner,
    *,
    timeout_s: float = 900.0,
    **plan_kw: Any,
) -> list[ClusterRun]:
    """Run the plan from ``launcher`` (the first node) and read every output."""
    runs = []
    for command in cluster_plan(hosts, gpus_per_node, **plan_kw):
        try:
            result = runner(launcher, command.argv, timeout_s)
        except Exception as exc:  # fail closed: the reason is kept
            runs.append(judge_output(command, None, f"{type(exc).__name__}: {exc}"))
            continue
        runs.append(judge_output(command, result))
    return runs
