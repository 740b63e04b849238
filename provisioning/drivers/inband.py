"""A stand-in for the in-band channel (SSH into the installed OS or the cleaning ramdisk).

Used with the Redfish driver against ``sushy-emulator`` (tests, demos): the emulator has
no OS to log into, so this plays the OS's half: keys are recorded, the OS answers, the
wipe reports complete. Production configures a real channel instead.
"""

from __future__ import annotations

from collections.abc import Sequence


class SimulatedInBand:
    def __init__(self) -> None:
        self.authorized_keys: dict[str, tuple[str, ...]] = {}

    def inject_access(self, *, ssh_public_keys: Sequence[str], username: str) -> None:
        self.authorized_keys[username] = tuple(ssh_public_keys)

    def ping(self) -> bool:
        return True

    def wait_erase_complete(self, *, timeout_s: float) -> None:
        return None
