"""The agent ends, with the tools it started, when whoever reads its output has died.

The portal reads the agent's lines through a pipe (``provisioning.validation.interface.
LocalRunner``, or ``ssh`` for a real node). A Celery worker killed while the agent runs
(SIGKILL, an OOM kill) cannot kill the agent's process group itself; without this, a
24-hour burn-in would go on measuring beside the attempt that takes the step over, and a
hung ``dcgmi`` would live for ever. The agent notices that its parent changed (it was
re-parented to init or a subreaper) within a second and kills its own process group (the
runner starts it as a session leader) or, when it leads no group, itself.

Only when stdout is a pipe: an agent started by hand with its output in a file
(``--out FILE``, ``nohup``) keeps running after its terminal goes.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading
import time


def stdout_is_pipe() -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(sys.stdout.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


def watch_parent(*, every_s: float = 1.0) -> threading.Thread | None:
    """Start the watch (a daemon thread); ``None`` when stdout is not a pipe."""
    if not stdout_is_pipe():
        return None
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(every_s)
            if os.getppid() != parent:
                if os.getpgrp() == os.getpid():  # our own group: our tools go with us
                    os.killpg(os.getpid(), signal.SIGKILL)
                os._exit(1)

    thread = threading.Thread(target=watch, name="agent-lifeline", daemon=True)
    thread.start()
    return thread
