"""The SSH runner against a real OpenSSH server: Debian's ``sshd`` started by the test on a
free high port of 127.0.0.1 from a temporary folder (its own host key, config,
authorized_keys and pid file; key authentication only), stopped at the end.

Why a real sshd and not a paramiko ``ServerInterface`` in the test: the runner's job is
to work against the OpenSSH servers the nodes run (host-key negotiation, the SFTP
subsystem, ``exec`` through the login shell, exit statuses, ``timeout``); a server
written in the test would only check the runner against our own idea of SSH. sshd needs
no privileges for this: run as root it only needs its privilege-separation folder
``/run/sshd`` (what systemd creates for it), run as another user it serves that user.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from provisioning.models import ValidationRunStatus
from provisioning.validation import services, ssh
from provisioning.validation.interface import AgentFailed, NodeTarget, validate_nodes
from tests import factories
from tests.polling import wait_until

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
SIZES = ["gemm=64", "copy=1M", "allreduce=64K"]


def _keygen(path: Path) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return Path(f"{path}.pub").read_text().strip()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    def __init__(self, folder: Path) -> None:
        assert os.path.exists(SSHD), "sshd is missing: scripts/system_deps.sh installs it"
        self.folder = folder
        self.port = _free_port()
        self.host_key_pub = _keygen(folder / "host_ed25519")
        self.client_pub = _keygen(folder / "client_ed25519")
        self.client_key = (folder / "client_ed25519").read_text()
        (folder / "authorized_keys").write_text(self.client_pub + "\n")
        self.known_hosts = folder / "known_hosts"
        key_type, key_b64 = self.host_key_pub.split()[:2]
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {key_type} {key_b64}\n")
        config = folder / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {folder / 'host_ed25519'}",
                    f"PidFile {folder / 'sshd.pid'}",
                    f"AuthorizedKeysFile {folder / 'authorized_keys'}",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "StrictModes no",  # the temporary folder sits under the world-writable /tmp
                    "PermitRootLogin prohibit-password",
                    "Subsystem sftp internal-sftp",
                    "LogLevel VERBOSE",
                    "",
                ]
            )
        )
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.log = open(folder / "sshd.log", "wb")
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)], stdout=self.log, stderr=subprocess.STDOUT
        )
        wait_until(
            lambda: socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close() or True,
            timeout=10,
            message=lambda: "sshd to start: " + (folder / "sshd.log").read_text(),
            retry_on=(OSError,),
            give_up_if=lambda: self.proc.poll() is not None,
        )

    def settings(self, **kw) -> ssh.SshSettings:
        values = {
            "user": getpass.getuser(),
            "known_hosts": str(self.known_hosts),
            "private_key": self.client_key,
            "port": self.port,
            "connect_timeout_s": 5.0,
            "python": sys.executable,  # the node's python3 (numpy for the CPU measurements)
        }
        values.update(kw)
        return ssh.SshSettings(**values)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = Sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


TARGET = NodeTarget(node_id=1, hostname="node-01", gpu_model="cpu", address="127.0.0.1")


def test_an_agent_past_its_time_is_stopped_and_fails_with_the_reason(sshd, tmp_path):
    slow = tmp_path / "slow-python"
    slow.write_text("#!/bin/sh\nsleep 60\n")
    slow.chmod(0o755)
    started = time.monotonic()
    with pytest.raises(AgentFailed) as caught:
        ssh.run_agent(sshd.settings(python=str(slow)), TARGET, "quick", timeout_s=1)
    assert caught.value.code == "agent_timeout"
    assert time.monotonic() - started < 15


def test_a_command_that_exits_nonzero_gives_its_status_and_stderr(sshd, tmp_path):
    broken = tmp_path / "broken-python"
    broken.write_text("#!/bin/sh\necho 'no module named numpy' >&2\nexit 3\n")
    broken.chmod(0o755)
    with pytest.raises(AgentFailed) as caught:
        ssh.run_agent(sshd.settings(python=str(broken)), TARGET, "quick", timeout_s=30)
    assert caught.value.code == "agent_exit_status"
    assert caught.value.params["status"] == 3
    assert "no module named numpy" in caught.value.params["detail"]


def test_a_key_the_node_does_not_accept_is_an_authentication_failure(sshd, tmp_path):
    _keygen(tmp_path / "other")
    with pytest.raises(AgentFailed) as caught:
        ssh.run_agent(
            sshd.settings(private_key=(tmp_path / "other").read_text()),
            TARGET,
            "quick",
            timeout_s=30,
        )
    assert caught.value.code == "ssh_auth_failed"


def test_an_unknown_host_key_is_refused_and_never_added(sshd, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(AgentFailed) as caught:
        ssh.run_agent(sshd.settings(known_hosts=str(empty)), TARGET, "quick", timeout_s=30)
    assert caught.value.code == "ssh_unknown_host_key"
    assert empty.read_text() == ""


def test_a_changed_host_key_is_refused(sshd, tmp_path):
    other = _keygen(tmp_path / "impostor").split()
    changed = tmp_path / "known_hosts"
    changed.write_text(f"[127.0.0.1]:{sshd.port} {other[0]} {other[1]}\n")
    with pytest.raises(AgentFailed) as caught:
        ssh.run_agent(sshd.settings(known_hosts=str(changed)), TARGET, "quick", timeout_s=30)
    assert caught.value.code == "ssh_host_key_mismatch"


def test_without_a_known_hosts_file_nothing_is_attempted(sshd):
    with pytest.raises(AgentFailed) as caught:
        ssh.run_agent(sshd.settings(known_hosts=""), TARGET, "quick", timeout_s=30)
    assert caught.value.code == "ssh_not_configured"


def test_the_settings_never_show_the_key():
    settings = ssh.SshSettings(
        user="root", known_hosts="/k", private_key="SECRET-KEY-TEXT", passphrase="SECRET-PASS"
    )
    assert "SECRET" not in repr(settings)


def test_a_node_that_cannot_be_reached_is_rejected_with_the_reason_not_passed(sshd):
    runner = ssh.ssh_runner(sshd.settings(port=_free_port()), timeout_s=30)
    outcome = validate_nodes([TARGET], profile="quick", runner=runner)
    assert not outcome.cluster_accepted
    [node] = outcome.nodes
    assert not node.accepted and node.failure.code == "ssh_unreachable"


# --- Through the portal: settings, runner selection, stored reasons ------------------


@pytest.fixture
def ssh_settings(db, settings, sshd, tmp_path):
    key = tmp_path / "validation_key"
    key.write_text(sshd.client_key)
    settings.VALIDATION_AGENT_RUNNER = "auto"
    settings.PORTAL_HARDWARE_DRIVER = "redfish"
    settings.PORTAL_REDFISH_IN_BAND = ""
    settings.VALIDATION_SSH_KEY = f"file:{key}"
    settings.VALIDATION_SSH_KNOWN_HOSTS = str(sshd.known_hosts)
    settings.VALIDATION_SSH_PORT = sshd.port
    settings.VALIDATION_SSH_USER = getpass.getuser()
    settings.VALIDATION_SSH_PYTHON = sys.executable
    settings.VALIDATION_AGENT_SIZES = SIZES
    settings.VALIDATION_AGENT_TIMEOUT_S = 120
    return settings


def _cpu_node(**kw):
    s = factories.site("SZ")
    nt = factories.node_type("e5-cpu", gpu_model=None, gpu_count=0)
    return factories.node(s, nt, ip_address="127.0.0.1", **kw)


def test_runner_selection_follows_the_driver(db, settings):
    settings.VALIDATION_AGENT_RUNNER = "auto"
    settings.PORTAL_REDFISH_IN_BAND = ""
    node = _cpu_node()
    settings.PORTAL_HARDWARE_DRIVER = "simulated"
    assert services.runner_kind(node) == "local"
    settings.PORTAL_HARDWARE_DRIVER = "redfish"
    assert services.runner_kind(node) == "ssh"
    settings.PORTAL_REDFISH_IN_BAND = "simulated"  # the Redfish emulator: no real node
    assert services.runner_kind(node) == "local"
    node.driver = "simulated"
    settings.PORTAL_REDFISH_IN_BAND = ""
    assert services.runner_kind(node) == "local"


def test_a_redfish_node_is_validated_over_ssh_and_the_run_stored(ssh_settings):
    node = _cpu_node()
    run = services.validation_run_create(nodes=[node], profile="quick", enqueue=False)
    run = services.validation_run_execute(run_id=run.pk)
    assert run.status == ValidationRunStatus.PASSED, run.results.get().reasons
    result = run.results.get()
    assert result.accepted and result.device == "cpu"
    gemm = next(c for c in result.report["checks"] if c["name"] == "gemm")
    assert gemm["status"] == "completed" and gemm["value"] > 0
    # Each check's line came over the SSH channel as the agent printed it, and was kept.
    live = {c.name: (c.status, c.verdict) for c in run.live_checks.filter(node=node)}
    assert len(live) == len(result.report["planned"])
    assert live["gemm"] == ("completed", "passed")
    assert live["nvlink"] == ("skipped", "not_judged")  # a GPU check on a CPU node
    # The copy that ran is the one the portal sent (same bytes, same SHA-256) ...
    assert result.report["transport"] == {
        "kind": "ssh",
        "host": "127.0.0.1",
        "agent_zip_sha256": hashlib.sha256(ssh.agent_bundle()).hexdigest(),
    }
    # ... and the node's temporary folder is gone again.
    assert not list(Path("/tmp").glob("portal-agent.*"))  # noqa: S108


def test_a_missing_key_rejects_the_node_with_the_reason(ssh_settings):
    ssh_settings.VALIDATION_SSH_KEY = "env:PORTAL_TEST_NO_SUCH_KEY"
    node = _cpu_node()
    run = services.validation_run_create(nodes=[node], profile="quick", enqueue=False)
    run = services.validation_run_execute(run_id=run.pk)
    assert run.status == ValidationRunStatus.FAILED
    [reason] = run.results.get().reasons
    assert reason["code"] == "ssh_not_configured"
    assert reason["params"] == {"setting": "VALIDATION_SSH_KEY"}


def test_nodes_reached_over_ssh_are_measured_at_the_same_time():
    """All nodes at once (a cluster takes as long as its slowest node), each failure still
    its own node's reason: both agents must be running together to pass the barrier."""
    together = threading.Barrier(2, timeout=10)

    class TwoNodes:
        parallel = True

        def __call__(self, target: NodeTarget, profile: str) -> dict:
            together.wait()
            if target.node_id == 2:
                raise AgentFailed("no route", code="ssh_unreachable", host=target.address)
            return {"host": {"device": "cpu"}, "checks": []}

    targets = [TARGET, NodeTarget(2, "node-02", "cpu", "10.9.9.9")]
    outcome = validate_nodes(targets, profile="quick", runner=TwoNodes())
    assert [n.hostname for n in outcome.nodes] == ["node-01", "node-02"]
    assert outcome.nodes[1].failure.code == "ssh_unreachable"
    assert outcome.nodes[0].report == {"host": {"device": "cpu"}, "checks": []}
