"""Run localstripe (a local Stripe stand-in) for the integration tests, safely.

localstripe's own ``start()`` binds every interface (``::``) on a fixed port and keeps its
state in ``/tmp/localstripe.pickle``, shared by every run on the machine. This wrapper
binds one host (127.0.0.1 by default) on the port given (0: any free port), keeps the
state in ``--state-dir``, starts from scratch, and prints ``LISTENING <port>`` on stdout
once it accepts connections:

    python tests/integration/localstripe_server.py --state-dir /tmp/xyz --port 0
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import pickle
import socket
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--state-dir", required=True, type=Path)
    args = parser.parse_args(argv)

    from aiohttp import web
    from localstripe import resources

    state = args.state_dir / "localstripe.pickle"
    args.state_dir.mkdir(parents=True, exist_ok=True)

    def dump_to_disk(self: resources.Store) -> None:
        with state.open("wb") as fh:
            pickle.dump(dict(self), fh, protocol=pickle.HIGHEST_PROTOCOL)

    def try_load_from_disk(self: resources.Store) -> None:  # from scratch, always
        self.clear()

    resources.Store.dump_to_disk = dump_to_disk  # type: ignore[method-assign]
    resources.Store.try_load_from_disk = try_load_from_disk  # type: ignore[method-assign]

    from localstripe.server import app

    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    port = sock.getsockname()[1]

    async def serve() -> None:
        runner = web.AppRunner(app, access_log=logging.getLogger("aiohttp.access"))
        await runner.setup()
        await web.SockSite(runner, sock).start()
        print(f"LISTENING {port}", flush=True)  # only now does it accept connections
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
