"""A private test network on this machine: each "host" is a Linux network namespace with
one veth into a bridge, and the bridge lives in a namespace of its own (the switch), so
nothing but one veth (the machine's own address on the network, where the test driver
sits) touches the machine's network. Needs root and ``ip`` (iproute2).

Names are unique per run (``mh<5 hex>-<host>``); ``Network.down`` kills every process in
every namespace and deletes them, and a later run removes what a run that died left
(its owner process gone).
"""

from __future__ import annotations

import ipaddress
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "mh"
_OURS = re.compile(rf"^({PREFIX}[0-9a-f]{{5}})-")


class NetworkUnavailable(RuntimeError):
    """This machine cannot build the test network (not root, no ``ip netns``)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


def require_netns() -> None:
    """Raise ``NetworkUnavailable`` with the reason when namespaces cannot be made here."""
    if os.geteuid() != 0:
        raise NetworkUnavailable("the multi-host test network needs root (ip netns, veth pairs)")
    if shutil.which("ip") is None:
        raise NetworkUnavailable("the multi-host test network needs iproute2's `ip` command")
    probe = f"{PREFIX}probe{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        raise NetworkUnavailable(f"`ip netns add` fails here: {made.stderr.strip()}")
    _ip("netns", "del", probe, check=False)


def _state_root() -> Path:
    return Path(tempfile.gettempdir()) / "multihost"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _netns_pids(netns: str) -> list[int]:
    done = _ip("netns", "pids", netns, check=False)
    return [int(p) for p in done.stdout.split()]


def _kill_netns(netns: str, sig: int = signal.SIGKILL) -> None:
    for _ in range(3):
        pids = _netns_pids(netns)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def remove_leftovers() -> list[str]:
    """Delete the namespaces of runs whose owner process is gone (a run killed before its
    clean-up); returns their tags."""
    tags: dict[str, list[str]] = {}
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        found = _OURS.match(name)
        if found:
            tags.setdefault(found.group(1), []).append(name)
    removed = []
    for tag, names in tags.items():
        owner = _state_root() / tag / "owner.pid"
        try:
            pid = int(owner.read_text())
        except (OSError, ValueError):
            pid = 0
        if pid and _alive(pid):
            continue
        for name in names:
            _kill_netns(name)
            _ip("netns", "del", name, check=False)
        _ip("link", "del", f"{tag}r", check=False)
        shutil.rmtree(_state_root() / tag, ignore_errors=True)
        removed.append(tag)
    return removed


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.0.0.0/8 that no address or route on this machine uses."""
    used = _ip("-4", "-o", "addr").stdout + _ip("-4", "route").stdout
    taken = [
        ipaddress.ip_network(m, strict=False) for m in re.findall(r"\d+\.\d+\.\d+\.\d+/\d+", used)
    ]
    taken += [
        ipaddress.ip_network(f"{m}/32") for m in re.findall(r"^(\d+\.\d+\.\d+\.\d+) ", used, re.M)
    ]
    rng = random.Random()
    for _ in range(200):
        net = ipaddress.ip_network(f"10.{rng.randint(100, 250)}.{rng.randint(0, 255)}.0/24")
        if not any(net.overlaps(t) for t in taken):
            return net
    raise NetworkUnavailable("no free 10.x.y.0/24 for the test network")


@dataclass
class Process:
    """A process started in a host's namespace; its output goes to ``log``."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.running():
            self.popen.send_signal(sig)

    def wait(self, timeout: float) -> int | None:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def output(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""


@dataclass
class Host:
    """One machine of the test network: a namespace with an address."""

    name: str
    netns: str
    address: str
    network: Network
    processes: list[Process] = field(default_factory=list)

    def spawn(
        self,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path | None = None,
        user: str | None = None,
    ) -> Process:
        """Start ``argv`` on this host (as ``user`` if given), its output in a log file."""
        log = self.network.dir / f"{self.name}-{name}.log"
        handle = log.open("ab")
        popen = subprocess.Popen(
            self._argv(argv, user),
            env=env,
            cwd=cwd,
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        handle.close()
        process = Process(name, popen, log)
        self.processes.append(process)
        return process

    def run(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        timeout: float,
        cwd: Path | None = None,
        user: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` on this host to its end (raises with its output if it fails)."""
        done = subprocess.run(
            self._argv(argv, user),
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{self.name}: {' '.join(argv)} exited {done.returncode}:\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done

    def _argv(self, argv: list[str], user: str | None) -> list[str]:
        """``argv`` in this host's network namespace, under its own host name (a UTS
        namespace: Celery names its workers after it), as ``user`` if given."""
        runas = ["runuser", "-u", user, "--"] if user else []
        named = ["unshare", "--uts", "--", "sh", "-c", 'hostname "$0" && exec "$@"', self.name]
        return ["ip", "netns", "exec", self.netns, *named, *runas, *argv]

    def pids(self) -> list[int]:
        return _netns_pids(self.netns)

    def power_off(self) -> None:
        """The host dies: every process in it is killed at once (SIGKILL), no clean-up."""
        _kill_netns(self.netns, signal.SIGKILL)
        for process in self.processes:
            process.wait(5)


class Network:
    """The switch namespace, the machine's own veth into it, and the hosts."""

    def __init__(self) -> None:
        remove_leftovers()
        self.tag = f"{PREFIX}{secrets.token_hex(3)[:5]}"
        self.dir = _state_root() / self.tag
        self.dir.mkdir(parents=True)
        (self.dir / "owner.pid").write_text(str(os.getpid()))
        # Readable by the postgres user (its data folder lives below).
        os.chmod(_state_root(), 0o755)  # noqa: S103
        os.chmod(self.dir, 0o755)  # noqa: S103
        self.subnet = _free_subnet()
        addresses = self.subnet.hosts()
        self.gateway = str(next(addresses))  # the machine itself, where the driver runs
        self._addresses = addresses
        self.switch = f"{self.tag}-switch"
        self.hosts: dict[str, Host] = {}
        self._up = False

    def up(self) -> Network:
        _ip("netns", "add", self.switch)
        self._up = True
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        root = f"{self.tag}r"
        _ip("link", "add", root, "type", "veth", "peer", "name", "up0", "netns", self.switch)
        _ip("-n", self.switch, "link", "set", "up0", "master", "br0", "up")
        _ip("addr", "add", f"{self.gateway}/{self.subnet.prefixlen}", "dev", root)
        _ip("link", "set", root, "up")
        return self

    def add_host(self, name: str) -> Host:
        netns = f"{self.tag}-{name}"
        address = str(next(self._addresses))
        port = f"p{len(self.hosts)}"
        _ip("netns", "add", netns)
        _ip(
            "-n",
            self.switch,
            "link",
            "add",
            port,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            netns,
        )
        _ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
        _ip("-n", netns, "addr", "add", f"{address}/{self.subnet.prefixlen}", "dev", "eth0")
        _ip("-n", netns, "link", "set", "eth0", "up")
        _ip("-n", netns, "link", "set", "lo", "up")
        host = Host(name, netns, address, self)
        self.hosts[name] = host
        return host

    def down(self, *, keep_logs: Path | None = None) -> None:
        """Kill every process of every host, delete the namespaces and the veth; the
        logs are copied to ``keep_logs`` first when given."""
        for host in self.hosts.values():
            _kill_netns(host.netns)
        for host in self.hosts.values():
            for process in host.processes:
                process.wait(5)
            _ip("netns", "del", host.netns, check=False)
        if self._up:
            _ip("netns", "del", self.switch, check=False)
            _ip("link", "del", f"{self.tag}r", check=False)
        if keep_logs is not None:
            keep_logs.mkdir(parents=True, exist_ok=True)
            for log in self.dir.glob("*.log"):
                shutil.copy(log, keep_logs / log.name)
        shutil.rmtree(self.dir, ignore_errors=True)
