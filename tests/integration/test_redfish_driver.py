"""The Redfish driver against a real sushy-emulator (fake systems, no libvirt) on
127.0.0.1: power with the emulator's 1–11 s delays, one-time boot, virtual media served
from a local HTTP server, inventory, the out-of-band half of cleaning, and the errors a
caller sees for a wrong system id, an unreachable BMC and a wrong password.

A missing sushy-tools is a failure, never a skip."""

import functools
import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import bcrypt
import pytest
import sushy_tools as _sushy_tools_package  # noqa: F401  (the dev extra: missing, this errors)

from provisioning.drivers.base import (
    BmcAuthFailed,
    BmcTarget,
    BmcUnreachable,
    DriverError,
    ImageProfileSpec,
    SystemNotFound,
    UnsupportedOperation,
)
from provisioning.drivers.redfish import RedfishDriver
from tests.polling import wait_until

pytestmark = pytest.mark.integration

SYSTEMS = {
    "node-01": "6c0a4b1e-0000-4000-8000-000000000001",
    "node-02": "6c0a4b1e-0000-4000-8000-000000000002",
    "node-03": "6c0a4b1e-0000-4000-8000-000000000003",
}
POWER_TIMEOUT_S = 30  # the emulator applies a power change after 1–11 s
START_TIMEOUT_S = 20
PASSWORD = "correct horse battery staple"


def emulator_binary() -> str:
    beside = Path(sys.executable).with_name("sushy-emulator")
    found = str(beside) if beside.exists() else shutil.which("sushy-emulator")
    if not found:
        pytest.fail("sushy-emulator is not installed: install the dev extra (sushy-tools)")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_emulator(folder: Path, *, auth_file: Path | None = None):
    """sushy-emulator --fake on a free port with three fake systems, its state in
    ``folder``; returns (process, base URL) once it answers."""
    folder.mkdir(parents=True, exist_ok=True)
    systems = [
        {
            "uuid": uuid,
            "name": name,
            "power_state": "Off",
            "nics": [{"mac": f"52:54:00:00:00:{i:02x}", "ip": f"10.10.0.{i}"}],
        }
        for i, (name, uuid) in enumerate(SYSTEMS.items(), start=1)
    ]
    config = folder / "emulator.conf"
    lines = [
        "SUSHY_EMULATOR_FAKE_DRIVER = True",
        f"SUSHY_EMULATOR_STATE_DIR = {str(folder / 'state')!r}",
        f"SUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}",
    ]
    if auth_file is not None:
        lines.append(f"SUSHY_EMULATOR_AUTH_FILE = {str(auth_file)!r}")
    config.write_text("\n".join(lines) + "\n")
    port = free_port()
    log = (folder / "emulator.log").open("w")
    proc = subprocess.Popen(
        [emulator_binary(), "--fake", "-i", "127.0.0.1", "-p", str(port), "--config", str(config)],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        with urllib.request.urlopen(f"{url}/redfish/v1/", timeout=1) as rsp:  # noqa: S310
            return rsp.status == 200

    try:
        wait_until(
            answers,
            timeout=START_TIMEOUT_S,
            interval=0.2,
            message=f"sushy-emulator to answer on {url}",
            retry_on=(urllib.error.URLError, ConnectionError, TimeoutError),
            give_up_if=lambda: proc.poll() is not None,
        )
    except AssertionError as exc:
        proc.kill()
        proc.wait()
        log.close()
        pytest.fail(f"{exc}:\n" + (folder / "emulator.log").read_text()[-3000:])
    return proc, url


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    proc, url = start_emulator(tmp_path_factory.mktemp("sushy"))
    yield url
    stop(proc)


@pytest.fixture(scope="module")
def image_server(tmp_path_factory):
    """A local HTTP server with small "ISO" files: the emulator downloads an image when
    it is inserted, as a BMC does."""
    root = tmp_path_factory.mktemp("images")
    for name in ("ubuntu-22.04.iso", "cleaner.iso"):
        (root / name).write_bytes(b"\0" * 4096)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def driver(url: str, node: str, **kwargs) -> RedfishDriver:
    kwargs.setdefault("poll_s", 0.5)
    kwargs.setdefault("power_timeout_s", POWER_TIMEOUT_S)
    kwargs.setdefault("retries", 1)
    return RedfishDriver(BmcTarget(url=url, system_id=SYSTEMS[node]), **kwargs)


def test_power_on_then_off(emulator):
    node = driver(emulator, "node-01")
    assert node.power_state() == "off"
    node.power_on()
    node.wait_power_state("on", timeout_s=POWER_TIMEOUT_S, poll_s=0.5)
    assert node.power_state() == "on"
    node.power_on()  # already on: nothing to do
    node.power_off()
    node.wait_power_state("off", timeout_s=POWER_TIMEOUT_S, poll_s=0.5)
    assert node.power_state() == "off"


def test_one_time_boot(emulator):
    node = driver(emulator, "node-02")
    node.set_one_time_boot("pxe")
    target, enabled = node.boot_override()
    assert target == "pxe"
    assert enabled in ("once", "continuous")  # the emulator may read "Once" back as Continuous
    node.set_one_time_boot("cd")
    assert node.boot_override()[0] == "cd"
    with pytest.raises(UnsupportedOperation, match="floppy"):
        node.set_one_time_boot("floppy")


def test_virtual_media_insert_and_eject(emulator, image_server):
    node = driver(emulator, "node-02")
    image = f"{image_server}/ubuntu-22.04.iso"
    assert node.virtual_media_image() is None
    node.insert_virtual_media(image)
    assert node.virtual_media_image() == image
    node.insert_virtual_media(image)  # already there: nothing to do
    node.eject_virtual_media()
    assert node.virtual_media_image() is None
    node.eject_virtual_media()  # already empty: nothing to do
    # an image the BMC cannot fetch is an error with the BMC's reason, not a silent pass
    with pytest.raises(DriverError, match=r"missing\.iso"):
        node.insert_virtual_media(f"{image_server}/missing.iso")
    assert node.virtual_media_image() is None


def test_inventory(emulator):
    inv = driver(emulator, "node-03").inventory()
    assert inv.system_uuid == SYSTEMS["node-03"]
    assert inv.manufacturer == "Sushy Emulator"
    assert inv.nic_macs == ("52:54:00:00:00:03",)
    # the fake systems report no model, serial, CPUs, memory or GPUs: None, not invented
    assert inv.model is None and inv.serial is None
    assert inv.cpu_count is None and inv.memory_gib is None and inv.gpus == ()


def test_cleaning_and_install_drive_power_boot_and_media(emulator, image_server):
    """Both long sequences at once on two systems (each waits on emulator delays)."""
    cleaner = f"{image_server}/cleaner.iso"
    erasing = driver(emulator, "node-01", cleaning_image_url=cleaner)
    installing = driver(emulator, "node-03")
    profile = ImageProfileSpec(name="ubuntu-22.04", image_url=f"{image_server}/ubuntu-22.04.iso")

    def install_then_boot() -> tuple[str | None, str]:
        installing.install_image(profile)
        during = installing.virtual_media_image()
        installing.boot_os()
        return during, installing.power_state()

    with ThreadPoolExecutor(max_workers=2) as pool:
        erase = pool.submit(erasing.secure_erase)
        install = pool.submit(install_then_boot)
        erase.result(timeout=90)
        during_install, after_boot = install.result(timeout=90)

    # cleaning: booted the cleaning image once from CD, then powered off and ejected
    assert erasing.power_state() == "off"
    assert erasing.virtual_media_image() is None
    assert erasing.boot_override()[0] == "cd"
    # install: the installer image was in the virtual CD; boot_os ejected it, booted disk
    assert during_install == profile.image_url
    assert after_boot == "on"
    assert installing.virtual_media_image() is None
    assert installing.boot_override()[0] == "hdd"
    installing.power_off()


def test_what_redfish_cannot_do_says_so(emulator):
    node = driver(emulator, "node-02")
    with pytest.raises(UnsupportedOperation, match="cleaning image"):
        node.secure_erase()
    with pytest.raises(UnsupportedOperation, match="in-band"):
        node.inject_access(ssh_public_keys=["ssh-ed25519 AAAA test"])
    with pytest.raises(UnsupportedOperation, match="in-band"):
        node.ping_os()
    # the fake driver has no BIOS resource
    with pytest.raises(UnsupportedOperation, match="BIOS"):
        node.bios_reset()


def test_unknown_system_is_system_not_found(emulator):
    node = RedfishDriver(BmcTarget(url=emulator, system_id="no-such-node"), retries=1)
    with pytest.raises(SystemNotFound) as caught:
        node.power_state()
    message = str(caught.value)
    assert "no-such-node" in message and emulator in message


def test_unreachable_bmc_fails_fast():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    node = RedfishDriver(
        BmcTarget(url=url, system_id="1", username="admin", password="pw-unreachable"),
        connect_timeout_s=1, retries=1,
    )  # fmt: skip
    started = time.monotonic()
    with pytest.raises(BmcUnreachable) as caught:
        node.power_state()
    assert time.monotonic() - started < 5
    assert url in str(caught.value) and "pw-unreachable" not in str(caught.value)


def test_wrong_password_is_bmc_auth_failed(tmp_path):
    auth_file = tmp_path / "htpasswd"
    digest = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    auth_file.write_text(f"admin:{digest}\n")
    proc, url = start_emulator(tmp_path / "auth", auth_file=auth_file)
    try:
        wrong = "wrong-password-123"
        node = RedfishDriver(
            BmcTarget(url=url, system_id=SYSTEMS["node-01"], username="admin", password=wrong),
            retries=1,
        )
        with pytest.raises(BmcAuthFailed) as caught:
            node.power_state()
        message = str(caught.value)
        assert "401" in message and "admin" in message
        assert wrong not in message and wrong not in repr(node)
        anonymous = RedfishDriver(BmcTarget(url=url, system_id=SYSTEMS["node-01"]), retries=1)
        with pytest.raises(BmcAuthFailed):
            anonymous.power_state()
        # the right password works: authentication is really on
        right = RedfishDriver(
            BmcTarget(url=url, system_id=SYSTEMS["node-01"], username="admin", password=PASSWORD),
            retries=1,
        )
        assert right.power_state() == "off"
    finally:
        stop(proc)
