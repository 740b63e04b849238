"""The node agent (and the cluster check's commands) run on a node over SSH (paramiko; no
Django here).

What it does per node: connect (key authentication only, the host key checked against a
known_hosts file, an unknown or changed host key refused), make a private temporary
folder, copy the agent there over SFTP as one zip of the standard-library package
``provisioning.agent`` (deterministic bytes: its SHA-256 is the same for the same agent),
run ``timeout T python3 -m provisioning.agent ...`` with that zip on ``PYTHONPATH``,
collect stdout (the JSON document), stderr and the exit status, and remove the folder.

Fail closed: every way this can go wrong raises ``AgentFailed`` with a code and
parameters (``ssh_not_configured``, ``ssh_unknown_host_key``, ``ssh_host_key_mismatch``,
``ssh_auth_failed``, ``ssh_unreachable``, ``agent_timeout``, ``agent_exit_status``,
``agent_no_json``), so the node is rejected with that reason, never passed.

Host keys: ``known_hosts`` is a file in OpenSSH format (``[host]:port`` entries for other
ports than 22) that operations fill when a node is racked (``ssh-keyscan`` checked
against the BMC console, or the key the installer reports). Nothing is ever added to it
from here: the missing-key policy is :class:`RefuseUnknownHostKey`, never
``AutoAddPolicy``. The private key's text comes from the caller (resolved from an
``env:``/``file:`` reference by the portal); it is never logged, and neither it nor
its passphrase is in ``repr``.
"""

from __future__ import annotations

import hashlib
import io
import shlex
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import paramiko

from provisioning.validation.cluster import CommandResult
from provisioning.validation.interface import (
    AGENT_PACKAGE_ROOT,
    AgentFailed,
    LineSink,
    NodeRunner,
    NodeTarget,
    agent_document,
    fold_lines,
    parse_line,
)

AGENT_SOURCE = AGENT_PACKAGE_ROOT / "provisioning" / "agent"
MAX_OUTPUT_BYTES = 64 * 1024 * 1024  # the agent caps each raw output at 200,000 characters
GRACE_S = 20.0  # beyond the remote ``timeout``: connection, copy, clean-up
KILL_AFTER_S = 10  # the remote ``timeout`` sends KILL this long after TERM


@dataclass(frozen=True)
class SshSettings:
    """How to reach the nodes. ``private_key`` is the key's text (OpenSSH or PEM)."""

    user: str
    known_hosts: str  # path of an OpenSSH known_hosts file
    private_key: str = field(repr=False)
    passphrase: str | None = field(default=None, repr=False)
    port: int = 22
    connect_timeout_s: float = 15.0
    python: str = "python3"
    remote_tmp: str = "/tmp"  # noqa: S108 - on the node; mktemp makes a private folder


class UnknownHostKey(paramiko.SSHException):
    """The node's host key is not in the known_hosts file."""


class RefuseUnknownHostKey(paramiko.MissingHostKeyPolicy):
    """Refuse a host whose key is not known (RejectPolicy with an exception of its own)."""

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        raise UnknownHostKey(f"{key.get_name()} {key.fingerprint}")


@lru_cache(maxsize=4)
def _bundle(fingerprint: tuple[tuple[str, int, int], ...]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        entries = [("provisioning/__init__.py", b"")]
        for path in sorted(AGENT_SOURCE.glob("*.py")):
            entries.append((f"provisioning/agent/{path.name}", path.read_bytes()))
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buffer.getvalue()


def agent_bundle() -> bytes:
    """The agent package as one zip (importable from ``PYTHONPATH``); the same bytes for
    the same sources."""
    files = sorted(AGENT_SOURCE.glob("*.py"))
    return _bundle(tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in files))


def _private_key(settings: SshSettings) -> paramiko.PKey:
    for kind in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return kind.from_private_key(io.StringIO(settings.private_key), settings.passphrase)
        except (paramiko.SSHException, ValueError):
            continue
    raise AgentFailed(
        "the validation SSH key could not be read (wrong format or passphrase)",
        code="ssh_not_configured",
        setting="VALIDATION_SSH_KEY",
    )


def connect(settings: SshSettings, host: str) -> paramiko.SSHClient:
    """An authenticated connection to ``host``, or ``AgentFailed`` with the reason."""
    if not settings.known_hosts:
        raise AgentFailed(
            "no known_hosts file is configured: host keys cannot be checked",
            code="ssh_not_configured",
            setting="VALIDATION_SSH_KNOWN_HOSTS",
        )
    if not settings.private_key:
        raise AgentFailed(
            "no SSH key is configured for validation",
            code="ssh_not_configured",
            setting="VALIDATION_SSH_KEY",
        )
    pkey = _private_key(settings)
    client = paramiko.SSHClient()
    try:
        client.load_host_keys(settings.known_hosts)
    except OSError as exc:
        raise AgentFailed(
            f"the known_hosts file {settings.known_hosts} cannot be read ({exc.strerror})",
            code="ssh_not_configured",
            setting="VALIDATION_SSH_KNOWN_HOSTS",
        ) from None
    client.set_missing_host_key_policy(RefuseUnknownHostKey())
    where = host if settings.port == 22 else f"{host}:{settings.port}"
    try:
        client.connect(
            hostname=host,
            port=settings.port,
            username=settings.user,
            pkey=pkey,
            timeout=settings.connect_timeout_s,
            banner_timeout=settings.connect_timeout_s,
            auth_timeout=settings.connect_timeout_s,
            allow_agent=False,
            look_for_keys=False,
        )
    except UnknownHostKey as exc:
        client.close()
        raise AgentFailed(
            f"{where} offered a host key that is not in known_hosts ({exc}): refused",
            code="ssh_unknown_host_key",
            host=where,
            key=str(exc),
        ) from None
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise AgentFailed(
            f"{where} offered a host key different from the one in known_hosts "
            f"({exc.key.get_name()} {exc.key.fingerprint}): refused",
            code="ssh_host_key_mismatch",
            host=where,
            key=f"{exc.key.get_name()} {exc.key.fingerprint}",
        ) from None
    except paramiko.AuthenticationException as exc:
        client.close()
        raise AgentFailed(
            f"{settings.user}@{where} refused the validation key ({exc})",
            code="ssh_auth_failed",
            host=where,
            user=settings.user,
        ) from None
    except (paramiko.SSHException, OSError, EOFError) as exc:  # socket.timeout is an OSError
        client.close()
        raise AgentFailed(
            f"cannot reach {where} over SSH: {type(exc).__name__}: {exc}",
            code="ssh_unreachable",
            host=where,
            detail=f"{type(exc).__name__}: {exc}",
        ) from None
    return client


def execute(
    client: paramiko.SSHClient,
    command: str,
    *,
    timeout_s: float,
    on_stdout_line: Callable[[str], None] | None = None,
) -> CommandResult:
    """Run ``command`` (a shell line) and collect stdout, stderr and the exit status; at the
    deadline the channel is closed and ``timed_out`` is set. ``on_stdout_line`` gets each
    complete line of stdout as it arrives (the agent's JSON lines, for the run page)."""
    transport = client.get_transport()
    if transport is None or not transport.is_active():
        raise AgentFailed("the SSH connection was lost", code="ssh_unreachable", host="?")
    channel = transport.open_session(timeout=30)
    channel.settimeout(0.5)
    channel.exec_command(command)
    deadline = time.monotonic() + timeout_s
    out, err = bytearray(), bytearray()
    fed = 0  # bytes of ``out`` already handed to on_stdout_line
    timed_out = False
    while True:
        progressed = False
        while channel.recv_ready():
            out += channel.recv(65536)
            progressed = True
        if on_stdout_line is not None and (end := out.rfind(b"\n")) >= fed:
            for raw_line in bytes(out[fed : end + 1]).splitlines():
                on_stdout_line(raw_line.decode("utf-8", "replace"))
            fed = end + 1
        while channel.recv_stderr_ready():
            err += channel.recv_stderr(65536)
            progressed = True
        if len(out) > MAX_OUTPUT_BYTES or len(err) > MAX_OUTPUT_BYTES:
            channel.close()
            return CommandResult(None, "", "output larger than the limit", timed_out=False)
        if channel.exit_status_ready() and channel.eof_received:
            if not channel.recv_ready() and not channel.recv_stderr_ready():
                break
            continue
        if time.monotonic() > deadline:
            timed_out = True
            break
        if not progressed:
            time.sleep(0.02)
    status = None
    if timed_out:
        channel.close()
    else:
        status = channel.recv_exit_status()
        channel.close()
    return CommandResult(
        status,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        timed_out=timed_out,
    )


def agent_command(
    *, folder: str, python: str, profile: str, sizes: Sequence[str], timeout_s: float
) -> str:
    """The shell line that runs the copied agent under a remote ``timeout`` and removes
    the folder afterwards, keeping the agent's exit status."""
    argv = [
        "timeout",
        f"--kill-after={KILL_AFTER_S}",
        str(max(1, int(timeout_s))),
        python,
        "-m",
        "provisioning.agent",
        "--profile",
        profile,
    ]
    if sizes:
        argv += ["--sizes", *sizes]
    quoted = shlex.quote(folder)
    return (
        f"cd {quoted} && PYTHONPATH={shlex.quote(folder + '/agent.zip')} {shlex.join(argv)}; "
        f"status=$?; cd / && rm -rf {quoted}; exit $status"
    )


def _make_folder(client: paramiko.SSHClient, settings: SshSettings) -> str:
    template = settings.remote_tmp.rstrip("/") + "/portal-agent.XXXXXXXX"
    made = execute(client, f"mktemp -d {shlex.quote(template)}", timeout_s=30)
    folder = made.stdout.strip()
    if made.exit_status != 0 or not folder.startswith(settings.remote_tmp.rstrip("/") + "/"):
        raise AgentFailed(
            f"cannot make a temporary folder on the node: {made.stderr.strip()[-300:]}",
            code="agent_copy_failed",
            detail=made.stderr.strip()[-300:],
        )
    return folder


def _remove_folder(client: paramiko.SSHClient, folder: str) -> None:
    try:
        execute(client, f"rm -rf {shlex.quote(folder)}", timeout_s=30)
    except (OSError, paramiko.SSHException, AgentFailed):
        pass


def run_agent(
    settings: SshSettings,
    target: NodeTarget,
    profile: str,
    *,
    timeout_s: float,
    sizes: Sequence[str] = (),
    on_line: LineSink | None = None,
) -> dict[str, Any]:
    """The agent's JSON document from ``target`` (or ``AgentFailed`` with the reason);
    ``on_line`` gets each of its JSON lines as it arrives."""
    host = target.address or target.hostname
    try:
        return _run_agent(
            settings, target, host, profile, timeout_s=timeout_s, sizes=sizes, on_line=on_line
        )
    except (paramiko.SSHException, OSError, EOFError) as exc:  # the session broke mid-way
        raise AgentFailed(
            f"the SSH session to {host} failed: {type(exc).__name__}: {exc}",
            code="ssh_unreachable",
            host=host,
            detail=f"{type(exc).__name__}: {exc}",
        ) from None


def _run_agent(
    settings: SshSettings,
    target: NodeTarget,
    host: str,
    profile: str,
    *,
    timeout_s: float,
    sizes: Sequence[str],
    on_line: LineSink | None = None,
) -> dict[str, Any]:
    def feed(text: str) -> None:
        if on_line is not None and (line := parse_line(text)) is not None:
            on_line(line)

    client = connect(settings, host)
    try:
        folder = _make_folder(client, settings)
        try:
            bundle = agent_bundle()
            try:
                with client.open_sftp() as sftp:
                    sftp.putfo(io.BytesIO(bundle), f"{folder}/agent.zip")
            except (OSError, paramiko.SSHException) as exc:
                raise AgentFailed(
                    f"cannot copy the agent to the node: {exc}",
                    code="agent_copy_failed",
                    detail=str(exc),
                ) from None
            result = execute(
                client,
                agent_command(
                    folder=folder,
                    python=settings.python,
                    profile=profile,
                    sizes=sizes,
                    timeout_s=timeout_s,
                ),
                timeout_s=timeout_s + KILL_AFTER_S + GRACE_S,
                on_stdout_line=feed if on_line is not None else None,
            )
        except BaseException:
            _remove_folder(client, folder)
            raise
        if result.timed_out:  # the command line did not get to remove it
            _remove_folder(client, folder)
    finally:
        client.close()
    if result.timed_out or result.exit_status in (124, 137):
        partial = fold_lines(result.stdout)
        if partial is not None:  # the lines of the checks that finished are kept
            partial["complete"] = False
            partial["timed_out_after_s"] = timeout_s
            partial["transport"] = {"kind": "ssh", "host": host}
            return partial
        raise AgentFailed(
            f"the agent ran past {timeout_s:.0f} s on {target.hostname}",
            code="agent_timeout",
            seconds=timeout_s,
        )
    document = agent_document(result.exit_status, result.stdout, result.stderr)
    document["transport"] = {
        "kind": "ssh",
        "host": host,
        "agent_zip_sha256": hashlib.sha256(bundle).hexdigest(),
    }
    return document


def run_command(
    settings: SshSettings, host: str, argv: Sequence[str], *, timeout_s: float
) -> CommandResult:
    """Any command (the cluster check's ``mpirun``) on ``host``, under a remote
    ``timeout``; ``AgentFailed`` when the node cannot be reached."""
    client = connect(settings, host)
    try:
        line = shlex.join(
            ["timeout", f"--kill-after={KILL_AFTER_S}", str(max(1, int(timeout_s))), *argv]
        )
        result = execute(client, line, timeout_s=timeout_s + KILL_AFTER_S + GRACE_S)
    finally:
        client.close()
    if result.exit_status in (124, 137):
        result.timed_out = True
    return result


def ssh_runner(
    settings: SshSettings, *, timeout_s: float = 600.0, sizes: Sequence[str] = ()
) -> NodeRunner:
    """A ``NodeRunner`` that runs the agent on each node over SSH."""

    def run(target: NodeTarget, profile: str) -> dict[str, Any]:
        return run_agent(settings, target, profile, timeout_s=timeout_s, sizes=sizes)

    return run


__all__ = [
    "CommandResult",
    "RefuseUnknownHostKey",
    "SshSettings",
    "agent_bundle",
    "agent_command",
    "connect",
    "execute",
    "run_agent",
    "run_command",
    "ssh_runner",
]
